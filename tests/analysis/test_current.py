"""Each machine's current state, part by part: the newest wall-clock and the newest framing result, wherever each is.

Records come from one real demo run (the ``both_suites`` session fixture); variants are copies of its JSON
(a wall-clock-only run, a framing-only run, a second machine) written at ``<machine-id>/<run-id>.json`` and
validated with the shipped schema before any page is built from them.
"""

from __future__ import annotations

import csv
import html as html_module
import io
import json
import re
from pathlib import Path

import pytest
from tests_support import CHROMIUM_ARGS, build, html, later, screenshots, site_project

from measure.analysis.current import compose
from measure.analysis.record_analysis import analyse
from measure.analysis.rules import verdicts
from measure.record.io import load_record, validate, write_atomic
from measure.record.model import from_document

ARM = "linux-aarch64-4c-0000000000"


def _write(results: Path, *docs: dict) -> Path:
    """Each record at its place in the tree, read back through validation (a variant the schema refuses fails)."""
    for d in docs:
        path = results / d["machine_id"] / f"{d['run_id']}.json"
        write_atomic(path, d)
        load_record(path)
    return results


def wallclock_only(doc: dict, days: float, suffix: str, commit: str | None = None) -> dict:
    """What ``measure run --suite wallclock`` writes: a complete record with no framing section."""
    new = later(doc, days, suffix)
    new["suites"], new["framing"] = ["wallclock"], None
    if commit:
        new["environment"]["git"] = {"commit": commit * 40, "dirty": False}
    return new


def framing_only(doc: dict, days: float, suffix: str) -> dict:
    new = later(doc, days, suffix)
    new["suites"], new["wallclock"] = ["framing"], None
    return new


def other_machine(doc: dict, machine: str = ARM, suffix: str = "bbbbbb") -> dict:
    """The same run as if measured on another machine: its ids and environment rewritten."""
    new = later(doc, 0.5, suffix, machine=machine)
    new["environment"]["machine_id"] = machine
    new["environment"]["machine"] |= {"cpu": "Neoverse-N1", "arch": "aarch64", "cores": 4}
    return new


def _record(doc: dict):
    """The typed record of a variant, validated with the shipped schema first."""
    validate(doc, doc["run_id"])
    return from_document(doc, doc["run_id"])


def _page(project: Path, page: str) -> str:
    return html_module.unescape(re.sub(r"<[^>]+>", "", html(project, page)))


# ---------------------------------------------------------------- the state, as a pure function of records


def test_one_record_is_its_own_state(both_suites):
    doc, _ = both_suites
    r = _record(doc)
    state = compose(dict.fromkeys(r.parts, r))
    assert state.record is r and state.one_run and state.differences() == ()
    assert r.parts == ("wallclock", "profile", "framing")


def test_a_wallclock_only_run_keeps_the_framing_of_the_run_before(both_suites):
    doc, _ = both_suites
    old, new = _record(doc), _record(wallclock_only(doc, 1, "aaaaaa"))
    assert new.parts == ("wallclock", "profile")
    state = compose({"wallclock": new, "profile": new, "framing": old})
    r = state.record
    assert r.wallclock is new.wallclock and r.framing is old.framing
    assert (r.run_id, r.suites) == (new.run_id, ("wallclock", "framing"))
    assert [(parts, x.run_id) for parts, x in state.runs()] == [
        (("wallclock", "profile"), new.run_id),
        (("framing",), old.run_id),
    ]
    assert state.differences() == ()  # one build measured twice
    # every verdict is its own part's: wall-clock and profile verdicts from the new run, framing from the old
    want = {(v.topic, v.subject, v.answer) for v in verdicts(new)} | {
        (v.topic, v.subject, v.answer) for v in verdicts(old)
    }
    got = {(v.topic, v.subject, v.answer) for v in analyse(r).verdicts}
    assert got == want


def test_parts_from_different_builds_say_how_they_differ(both_suites):
    doc, _ = both_suites
    new_doc = wallclock_only(doc, 1, "aaaaaa", commit="b")
    new_doc["golden"]["sha256"] = "e" * 64
    new_doc["environment"]["onnxruntime"] = "9.9.9"
    new_doc["tiers"]["base-int8"]["fingerprint"]["files"][0]["sha256"] = "0" * 64
    state = compose({"wallclock": _record(new_doc), "framing": _record(doc)})
    found = state.differences()
    assert found[0] == f"commit: wall-clock at bbbbbbbbbb; framing at {_record(doc).environment.git.short}"
    assert found[1].startswith("golden rows: wall-clock 16 rows, sha256 eeeeeeeeeeee; framing 16 rows, sha256 ")
    assert found[2] == f"onnxruntime: wall-clock 9.9.9; framing {doc['environment']['onnxruntime']}"
    assert found[3] == "tier files differ: base-int8"
    assert state.record.golden.sha256 == doc["golden"]["sha256"]  # the framing's rows: its outputs are per row
    assert state.differences(("framing",)) == ()


def test_a_profile_and_a_tier_only_an_older_run_has_are_kept(both_suites, tmp_path):
    doc, _ = both_suites
    new_doc = wallclock_only(doc, 1, "aaaaaa")  # a run without the profile and without small-int4
    new_doc["wallclock"].pop("profile")
    new_doc["wallclock"].pop("call_costs")
    new_doc["config"]["wallclock"]["profile"] = False
    new_doc["tiers"].pop("small-int4")
    new_doc["config"]["tiers"] = [t for t in new_doc["config"]["tiers"] if t["name"] != "small-int4"]
    new_doc["config"]["pairs"] = []
    new_doc["wallclock"]["cases"] = {n: c for n, c in new_doc["wallclock"]["cases"].items() if "small-int4" not in n}
    _write(tmp_path / "results", new_doc)
    both, new, old = _record(doc), _record(new_doc), _record(framing_only(doc, 0.5, "cccccc"))  # after doc, before new
    assert new.parts == ("wallclock",)
    state = compose({"wallclock": new, "profile": both, "framing": old})
    r = state.record
    assert r.wallclock.profile is both.wallclock.profile and r.wallclock.cases is new.wallclock.cases
    assert r.config.wallclock == new.config.wallclock and r.config.framing == old.config.framing
    assert list(r.tiers) == ["base-fp32", "base-int8", "small-int4"]  # the newest run's first, then the older's
    assert r.tiers["small-int4"] is old.tiers["small-int4"]
    lines = {c.tier: c for c in analyse(r).costs}
    assert lines["small-int4"].memory_bytes is not None  # the profile's tier is costed from the profile's run
    assert [(parts, x.run_id) for parts, x in state.runs()] == [
        (("wallclock",), new.run_id),
        (("profile",), both.run_id),
        (("framing",), old.run_id),
    ]


# ---------------------------------------------------------------- pages read the state


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return site_project(tmp_path_factory.mktemp("current-site"))


def _with(project: Path, option: str) -> Path:
    """The project's mkdocs.yml with one more plugin option, beside it (the same docs and site folders)."""
    text = project.read_text(encoding="utf-8").replace(
        "      results: results\n", f"      results: results\n      {option}\n"
    )
    assert option in text
    out = project.parent / "mkdocs-options.yml"
    out.write_text(text, encoding="utf-8")
    return out


def _built(project: Path, results: Path, option: str = "") -> Path:
    project = _with(project, option) if option else project
    done = build(project, results)
    assert done.returncode == 0, done.stderr[-3000:]
    return project


def _site_file(project: Path, name: str) -> str:
    return (project.parent / "site" / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("newest", ["wallclock", "framing"])
def test_every_page_shows_the_other_suites_latest_result_with_its_run_and_date(both_suites, project, tmp_path, newest):
    doc, _ = both_suites
    fresh = wallclock_only(doc, 1, "aaaaaa") if newest == "wallclock" else framing_only(doc, 1, "aaaaaa")
    results = _write(tmp_path / "results", doc, fresh)
    _built(project, results)
    old_when, new_when = doc["started_at"][:10], fresh["started_at"][:10]
    mine, other = ("wall-clock and cost profile", "framing")[:: 1 if newest == "wallclock" else -1]
    overview = _page(project, "results")
    assert f"{mine} from run {fresh['run_id']}, {new_when}" in overview
    assert f"{other} from run {doc['run_id']}, {old_when}" in overview
    assert "different builds" not in overview  # one build, measured twice
    # the Overview's columns of the other suite are filled from the older run
    rows = {r["tier"]: r for r in csv.DictReader(io.StringIO(_site_file(project, "results/summary.csv")))}
    state = analyse(
        compose({"wallclock": _record(doc if newest == "framing" else fresh), "framing": _record(doc)}).record
    )
    for t in state.record.python_tiers:
        assert int(rows[t.tier]["exact"]) == t.quality.exact
        assert rows[t.tier]["ms_per_token"] != ""
        assert rows[t.tier]["wallclock_run"] == (fresh if newest == "wallclock" else doc)["run_id"]
        assert rows[t.tier]["framing_run"] == (fresh if newest == "framing" else doc)["run_id"]
    framing, wallclock = _page(project, "results/framing"), _page(project, "results/wallclock")
    assert "No framing record yet" not in framing and "Single-step vs batched" in framing
    assert "ms/token" in wallclock and "× plain time" in wallclock
    framing_run = fresh if newest == "framing" else doc
    wallclock_run = fresh if newest == "wallclock" else doc
    assert (
        f"Measured {framing_run['started_at']} on machine {doc['machine_id']}, run {framing_run['run_id']}" in framing
    )
    assert f"Measured {wallclock_run['started_at']} on machine {doc['machine_id']}, run {wallclock_run['run_id']}" in (
        wallclock
    )
    for page in (framing, wallclock, _page(project, "results/methods")):
        assert f"{other} from run {doc['run_id']}, {old_when}" in page and fresh["run_id"] in page
    metrics = json.loads(_site_file(project, "results/metrics.json"))["machines"][doc["machine_id"]]
    assert metrics["parts"]["framing"] == {"run_id": framing_run["run_id"], "date": framing_run["started_at"][:10]}
    assert metrics["parts"]["wallclock"]["run_id"] == wallclock_run["run_id"]
    assert metrics["framing"] and metrics["tiers"] and metrics["builds_differ"] == []


def test_suites_from_different_builds_are_said_to_be_so_beside_the_numbers(both_suites, project, tmp_path):
    doc, _ = both_suites
    fresh = wallclock_only(doc, 1, "aaaaaa", commit="b")
    _built(project, _write(tmp_path / "results", doc, fresh))
    for page in ("results", "results/wallclock", "results/framing", "results/methods"):
        text = _page(project, page)
        assert "The suites were measured on different builds" in text, page
        assert "commit: wall-clock and cost profile at bbbbbbbbbb; framing at " in text, page
    metrics = json.loads(_site_file(project, "results/metrics.json"))["machines"][doc["machine_id"]]
    assert metrics["builds_differ"][0].startswith("commit: wall-clock and cost profile at bbbbbbbbbb")


def test_two_machines_the_overview_names_its_own_and_lists_the_other(both_suites, project, tmp_path):
    doc, _ = both_suites
    arm = other_machine(doc)
    again = later(doc, 1, "dddddd")  # the first machine has two complete records: the default reference
    results = _write(tmp_path / "results", doc, again, arm)
    slug = {m: m.lower().replace("_", "-") for m in (doc["machine_id"], ARM)}

    def check(reference: str, other: str) -> None:
        raw = html(project, "results")
        text = _page(project, "results")
        assert text.count(f"Measured on machine {reference} (") == 1
        assert f"One row per tier of machine {reference}:" in text
        assert f"This page answers for machine {reference}" in text
        # one compact row per machine, each linking to its History page; the other machine's CPU is in its row
        for m in (reference, other):
            assert f'href="history/{slug[m]}/"' in raw
        row = next(r for r in re.findall(r"<tr>.*?</tr>", raw, flags=re.S) if f"history/{slug[other]}/" in r)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S)
        assert len(cells) == 6 and "×" in cells[2] and "/16" in cells[3] and "measure-badge" in cells[4]
        assert html(project, f"results/history/{slug[other]}")  # the link resolves
        metrics = json.loads(_site_file(project, "results/metrics.json"))
        assert metrics["reference_machine"] == reference and set(metrics["machines"]) == {reference, other}
        machines = _page(project, "results/machines")
        assert machines.index(reference) < machines.index(other)  # the reference machine's column first

    _built(project, results)
    check(doc["machine_id"], ARM)
    assert "the most complete records (2)" in _page(project, "results")
    chosen = _built(project, results, f"reference_machine: {ARM}")
    check(ARM, doc["machine_id"])
    assert "the site's reference_machine" in _page(chosen, "results")
    assert "Neoverse-N1" in _page(chosen, "results")


def test_a_reference_machine_without_records_fails_the_build_naming_the_config_and_the_field(
    both_suites, project, tmp_path
):
    doc, _ = both_suites
    results = _write(tmp_path / "results", doc)
    config = _with(project, "reference_machine: nope")
    done = build(config, results)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{config}: plugins.measure.reference_machine = 'nope': no complete record" in done.stderr
    assert doc["machine_id"] in done.stderr


CHROMIUM = "/usr/bin/chromium"
PAGES = ("results/", "results/wallclock/", "results/framing/", "results/methods/", "results/machines/")


def test_the_pages_of_a_composed_state_in_chromium_light_dark_and_narrow(both_suites, tmp_path):
    """Two machines; the reference's newest run is wall-clock only, at another commit: what a reader sees."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    import functools
    import http.server
    import threading

    doc, _ = both_suites
    results = _write(tmp_path / "results", doc, later(doc, 0.2, "dddddd"), wallclock_only(doc, 1, "aaaaaa", "b"))
    _write(results, other_machine(doc))
    project = site_project(tmp_path / "p")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(project.parent / "site"))
    )
    base = f"http://127.0.0.1:{server.server_address[1]}"
    done = build(project, results, site_url=base + "/")
    assert done.returncode == 0, done.stderr[-3000:]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    shots = screenshots()
    try:
        with playwright_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for scheme, width, height in (("light", 1440, 900), ("dark", 1440, 900), ("light", 390, 844)):
                context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
                tab = context.new_page()
                errors: list[str] = []
                tab.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                tab.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                for path in PAGES:
                    tab.goto(f"{base}/{path}", wait_until="networkidle")
                    if tab.locator(".measure-chart").count():
                        tab.wait_for_selector(".measure-chart .main-svg", timeout=15000)
                    name = "current-" + (path.removeprefix("results/").strip("/") or "overview")
                    tab.screenshot(path=str(shots / f"{name}-{scheme}-{width}.png"), full_page=True)
                    if path != "results/machines/":  # the builds-differ warning is drawn as an admonition
                        assert tab.locator(".admonition.warning").count() >= 1, path
                    if width == 1440 and path == "results/":
                        rows = tab.locator("#machines ~ .md-typeset__scrollwrap").first.locator("tbody tr")
                        assert rows.count() == 2
                        overflow = tab.evaluate(
                            "() => [...document.querySelectorAll('.md-content .md-typeset__scrollwrap')]"
                            ".filter(w => w.scrollWidth > w.clientWidth + 1).length"
                        )
                        assert overflow == 0, f"{overflow} Overview table(s) scroll sideways at {width} px"
                        rows.nth(1).locator("a[href*='history/']").first.click()
                        tab.wait_for_url("**/history/**")
                        assert ARM.lower() in tab.url
                assert errors == [], (scheme, width, errors)
                context.close()
            browser.close()
    finally:
        server.shutdown()


def test_check_gates_the_framing_result_a_wallclock_only_run_leaves_current(both_suites, tmp_path, capsys):
    from measure.cli import main

    doc, _ = both_suites
    broken = later(doc, 0, "eeeeee")  # an fp32 tier whose argmax moves under batched framing: a gate failure
    fp32 = next(t for t in broken["framing"]["legs"][0]["tiers"] if t["tier"] == "base-fp32")
    fp32["blocks"][0]["argmax_agree"] -= 1
    results = _write(tmp_path / "results", broken, wallclock_only(broken, 1, "aaaaaa"))
    capsys.readouterr()
    assert main(["check", "--results", str(results)]) == 1
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("FAIL")]
    assert f"{broken['run_id']}.json" in line and "aaaaaa.json" in line and "base-fp32" in line
    _write(results, later(doc, 2, "ffffff"))  # a newer framing result without the fault
    assert main(["check", "--results", str(results)]) == 0
