"""History judges consecutive records exactly as ``measure compare`` judges a pull request."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from tests_support import DATA_DIR, build, html, site_project

from measure.analysis.history import machine_history, verdict_series
from measure.cli import main
from measure.record.io import load_record, write_atomic
from measure.record.tree import by_machine
from measure.results.cache import SummaryCache
from measure.results.calibration_file import load_calibration
from measure.results.reader import load_results
from measure.site.pages.history import CHART_POINTS, CHART_RUNS, chart_runs

DATA = DATA_DIR


def _record(base: dict, i: int, commit: str, scale: dict[str, float] | None = None, golden: str | None = None) -> dict:
    d = copy.deepcopy(base)
    d["started_at"] = f"2026-12-{10 + i:02d}T10:00:00Z"
    d["run_id"] = f"202612{10 + i:02d}T100000Z-00000{i}"
    d["environment"]["git"] = {"commit": commit * 40, "dirty": False}
    for name, factor in (scale or {}).items():
        case = d["wallclock"]["cases"][name]
        case["wall_s"] = [[w * factor for w in rep] for rep in case["wall_s"]]
    if golden:
        d["golden"]["sha256"] = golden * 64
    return d


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = load_record(DATA / "record-v1.json")  # a real recorded run, 5 repeats, 4 cases
    docs = [
        _record(base, 0, "a"),
        _record(base, 1, "a", {"base-int8": 1.01}),  # A/A pairs: the same build measured twice
        _record(base, 2, "b", {"small-int4": 1.4}),
        _record(base, 3, "b", {"small-int4": 1.42}),
        _record(base, 4, "c", {"small-int4": 1.42, "base-fp32": 0.6}),
        _record(base, 5, "c", {"small-int4": 1.42, "base-fp32": 0.6}, golden="e"),  # not comparable
    ]
    results = tmp_path / "results"
    for d in docs:
        write_atomic(results / d["machine_id"] / f"{d['run_id']}.json", d)
    return results


def _compare_cli(capsys, base: Path, new: Path) -> set[tuple[str, str]]:
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in out if line.split() and line.split()[-1] in ("faster", "slower")]
    return {(r[0], r[-1]) for r in rows}


def test_history_under_a_recorded_quantile_calls_what_compare_calls(tree, capsys):
    assert main(["calibrate", str(tree), "--write", "--quantile", "0.9"]) == 0
    capsys.readouterr()
    loaded = load_results(tree, SummaryCache(None))
    ((machine, runs),) = by_machine(loaded.summaries).items()
    cal = load_calibration(tree, machine)
    assert cal is not None and cal.quantile == 0.9 and len(cal.pairs) == 2
    h = machine_history(machine, runs, cal, SummaryCache(None))
    assert h.band.calibration == cal
    assert h.compared == 4 and len(h.breaks) == 1 and "golden rows changed" in h.breaks[0].reason
    paths = {s.run_id: loaded.paths[s.sha256] for s in loaded.summaries}
    for base, new in zip(h.runs[:4], h.runs[1:5], strict=True):
        expected = _compare_cli(capsys, paths[base.run_id], paths[new.run_id])
        called = {(c.comparison.case, c.comparison.outcome) for c in h.changes if c.new.run_id == new.run_id}
        assert called == expected, (base.run_id, new.run_id)
    assert {(c.comparison.case, c.comparison.outcome) for c in h.changes} == {
        ("small-int4", "slower"),
        ("base-fp32", "faster"),
    }


def test_a_change_of_timed_region_breaks_the_series_with_its_reason(tmp_path):
    """Tokenizing moved out of the timing makes every tier a few percent faster: History must not call that."""
    base = load_record(DATA / "record-v2.json")
    assert "timed" not in base["wallclock"]  # a real record from before the field: timed from text
    docs = [_record(base, 0, "a"), _record(base, 1, "a"), _record(base, 2, "b", {"base-int8": 0.9})]
    docs[2]["wallclock"]["timed"] = "ids"
    for case in docs[2]["wallclock"]["cases"].values():
        case["tokenize_s"] = [[3e-5] * len(rep) for rep in case["wall_s"]]
    results = tmp_path / "results"
    for d in docs:
        write_atomic(results / d["machine_id"] / f"{d['run_id']}.json", d)
    loaded = load_results(results, SummaryCache(None))
    ((machine, runs),) = by_machine(loaded.summaries).items()
    h = machine_history(machine, runs, None, SummaryCache(None))
    assert h.compared == 1 and len(h.breaks) == 1
    brk = h.breaks[0]
    assert (brk.before.run_id, brk.after.run_id) == (docs[1]["run_id"], docs[2]["run_id"])
    assert "timed region changed" in brk.reason and "token ids in" in brk.reason
    assert not [c for c in h.changes if c.new.run_id == docs[2]["run_id"]]  # the 10% step is not called faster
    project = site_project(tmp_path / "project")
    done = build(project, results)
    assert done.returncode == 0, done.stderr[-2000:]
    page = html(project, f"results/history/{machine.replace('_', '-')}")
    assert "<li>" in page.split("Not comparable, so not compared")[1].split("</ul>")[0]  # a list, not run-on text


def test_compare_notes_a_change_of_timed_region(tmp_path, capsys):
    base = load_record(DATA / "record-v2.json")
    new = _record(base, 1, "b")
    new["wallclock"]["timed"] = "ids"
    paths = [tmp_path / "base.json", tmp_path / "new.json"]
    for path, d in zip(paths, (base, new), strict=True):
        write_atomic(path, d)
    assert main(["compare", *map(str, paths)]) == 0
    assert "timed regions differ (base text, new ids): tokenizing moved out of" in capsys.readouterr().out
    assert main(["compare", str(paths[0]), str(paths[0])]) == 0
    assert "timed regions differ" not in capsys.readouterr().out


def test_a_verdict_that_got_worse_is_marked(tree):
    loaded = load_results(tree, SummaryCache(None))
    found = {(s.topic, s.subject): s for s in verdict_series(loaded.summaries)}
    assert all(len(s.spans) >= 1 for s in found.values())
    assert not any(s.worsened for s in found.values() if len(s.spans) == 1)


def test_history_reads_the_recorded_drift_not_a_recomputed_one(tree, capsys):
    import json

    from measure.record.tree import calibration_path

    assert main(["calibrate", str(tree), "--write", "--quantile", "0.9"]) == 0
    loaded = load_results(tree, SummaryCache(None))
    ((machine, runs),) = by_machine(loaded.summaries).items()
    path = calibration_path(tree, machine)
    doc = json.loads(path.read_text(encoding="utf-8")) | {"drift_sd": 0.6}  # as a very noisy runner records
    path.write_text(json.dumps(doc), encoding="utf-8")
    h = machine_history(machine, runs, load_calibration(tree, machine), SummaryCache(None))
    # The band stays the policy's; the recorded drift widens every interval until nothing is called.
    assert h.band.tolerance == 0.05 and h.band.calibration.drift_sd == 0.6 and h.changes == ()
    paths = {s.run_id: loaded.paths[s.sha256] for s in loaded.summaries}
    capsys.readouterr()
    assert _compare_cli(capsys, paths[runs[1].run_id], paths[runs[2].run_id]) == set()


def test_a_chart_of_many_cases_draws_fewer_records_one_by_one():
    assert chart_runs(1) == CHART_RUNS
    assert chart_runs(9) == CHART_POINTS // 9 < CHART_RUNS  # the demo's 9 tiers: a page near 250 kB
    assert chart_runs(10_000) == 20  # never fewer than 20 records one by one
    assert chart_runs(9, 96) == CHART_POINTS // 9 - 96  # eight years of months count against the points too


def test_a_month_page_links_each_run_with_a_page_and_names_the_rest(tmp_path, monkeypatch):
    """Runs past the newest PAGES_PER_MACHINE have no page: the index links them to their month's list, and that
    list names them without a link (to itself, or to part 1 from a later part)."""
    import measure.site.pages.runs as runs_module
    from measure.site.render import render_results

    monkeypatch.setattr(runs_module, "PAGES_PER_MACHINE", 2)
    monkeypatch.setattr(runs_module, "MONTH_ROWS", 2)
    base = load_record(DATA / "record-v1.json")
    for i in range(5):
        d = _record(base, i, "a")
        write_atomic(tmp_path / d["machine_id"] / f"{d['run_id']}.json", d)
    pages = render_results(tmp_path).pages
    month = "\n".join(pages[f"results/runs/{name}.md"] for name in ("2026-12", "2026-12-part-2", "2026-12-part-3"))
    paged = ["20261214T100000Z-000004", "20261213T100000Z-000003"]
    for run_id in (f"202612{10 + i:02d}T100000Z-00000{i}" for i in range(5)):
        row = next(line for line in month.splitlines() if run_id in line)
        if run_id in paged:
            assert f"[{run_id}](" in row and "--" + run_id + ".md)" in row
        else:
            assert row.startswith(f"| {run_id} |"), row
    assert "The newest 2 runs of each machine have a page of their own" in month
    index = pages["results/runs/index.md"]
    assert "[20261210T100000Z-000000](2026-12.md)" in index  # the index still leads to the month list


def test_history_shades_each_change_point_lists_it_newest_first_and_the_overview_names_it(tmp_path):
    import hashlib
    import json as json_module
    from html import unescape

    from tests_support import history_tree

    from measure.site.render import render_results

    history_tree(tmp_path, commits=24, machines=("a",), steps={("base-int8", 3): 1.2, ("small-int4", 16): 0.85})
    pages = render_results(tmp_path).pages
    (name,) = [p for p in pages if p.startswith("results/history/")]
    page = pages[name]
    table = page.split("### Change points")[1].split("### Consecutive records compared")[0]
    rows = [line for line in table.splitlines() if line.startswith("| 2026-")]
    assert [r.split(" | ")[1].split("<br>")[0] for r in rows] == ["small-int4", "small-int4", "base-int8", "base-int8"]
    assert "expected false alarms in this history: " in table and "**slower** ×1.2" in rows[2]
    commit = hashlib.sha1(b"16").hexdigest()[:10]
    assert f"→ [{commit}](../runs/" in rows[0] and "faster ×0.85" in rows[0]
    figure = json_module.loads(unescape(page.split('data-figure="')[1].split('"')[0]))
    bands = [t for t in figure["data"] if t["name"] == "change point"]
    assert len(bands) == 2 and all(t["fill"] == "toself" and t["hoveron"] == "fills" for t in bands)
    assert {t["text"].split(":")[0] for t in bands} == {"base-int8", "small-int4"} and "×0.85" in bands[0]["text"]
    assert figure["data"].index(bands[-1]) < len(bands)  # under the lines, drawn first
    index = pages["results/history.md"]
    assert "| 4 | " in index and index.index("small-int4") < index.index("base-int8")  # newest first
    overview = pages["results/index.md"]
    assert "Change points in the newest 20 commits" in overview  # of 24: commit 16 is among them, commit 3 is not
    said = overview.split("Change points in the newest 20 commits")[1].split("## Summary")[0]
    assert "small-int4" in said and "base-int8" not in said
    methods = pages["results/methods.md"]  # where every History page's "evidence" links to
    assert "## Change points {: #change-points }" in methods and "| shortest segment | 2 commits" in methods


def test_history_of_one_record_says_nothing_could_be_compared_yet(tmp_path):
    from tests_support import history_tree

    from measure.site.render import render_results

    history_tree(tmp_path, commits=1, machines=("a",), runs=1)
    pages = render_results(tmp_path).pages
    (name,) = [p for p in pages if p.startswith("results/history/")]
    assert "Nothing could be compared yet" in pages[name] and "No change point in" not in pages[name]
    assert "Nothing could be compared yet" in pages["results/history.md"]
    assert "Change points in the newest" not in pages["results/index.md"]


def test_change_point_text_from_a_record_is_escaped_in_rows_and_bands():
    from measure.analysis.commit_series import Commit, SeriesKey
    from measure.analysis.history_changes import ChangePoint
    from measure.analysis.stats import Estimate
    from measure.analysis.summary import summarize_record
    from measure.record.io import load
    from measure.site.changes import bands, row
    from measure.site.context import RunLinks, chart

    hostile = "<script>alert(1)</script> | **b**"
    run = summarize_record(load(DATA / "record-v1.json"), "0" * 64)
    commit = Commit("a" * 40, (run,))
    ratio = Estimate(1.1, 1.0, 1.2)
    c = ChangePoint(SeriesKey("m", "wall", hostile, "b"), commit, commit, commit, ratio, 5.0, 9, 9, False, 1)
    cells = row(c, RunLinks(frozenset()), "runs/")
    assert "<script>" not in cells.series and "&#124;" in cells.series and "**b**" not in cells.series
    figure = {"data": bands([c], 1.0), "layout": {}}
    drawn = chart("x", "t", figure)
    assert "<script>" not in unescape_attr(drawn.figure) and "&lt;script&gt;" in unescape_attr(drawn.figure)


def unescape_attr(text: str) -> str:
    from html import unescape

    return unescape(str(text))
