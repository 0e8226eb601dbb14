"""Decoder-only tiers on the RESULTS pages: a real mixed record (encoder-decoder and decoder-only tiers and a
decoder-only pair) rendered, built with mkdocs --strict and looked at in Chromium.

The numbers asserted are recomputed here from the record's raw samples, never what a quantized tier happens to
decode on this CPU; the hostile prompt template is set in the record.
"""

from __future__ import annotations

import copy
import html as html_module
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests_support import CHROMIUM_ARGS, ROOT, build, html, screenshots, site_project

from measure.cli import main
from measure.record.io import write_atomic

LM_RECORD = ROOT / "tests" / "data" / "record-v3-lm.json"
SEQ2SEQ_RECORD = ROOT / "tests" / "data" / "record-v3.json"
HOSTILE_PROMPT = "<script>alert(1)</script> | `x` \"q\" 'a' **b** [l](javascript:alert(2)) {input}="
HOSTILE_TIER = "lm-base-int8"


def _doc() -> dict:
    doc = json.loads(LM_RECORD.read_text(encoding="utf-8"))
    doc["tiers"][HOSTILE_TIER]["prompt"] = HOSTILE_PROMPT
    return doc


def _causal(doc: dict) -> list[str]:
    return [n for n, t in doc["tiers"].items() if t["kind"] == "causal"]


def _tree(folder: Path, doc: dict) -> Path:
    write_atomic(folder / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    return folder


@pytest.fixture(scope="module")
def lm_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lm-site")
    doc = _doc()
    results = _tree(tmp / "results", doc)
    project = site_project(tmp / "p")
    done = build(project, results)
    assert done.returncode == 0, done.stderr[-3000:]
    return project, doc


def _text(cell: str) -> str:
    """What a reader sees of a cell: tags dropped, entities decoded."""
    return html_module.unescape(re.sub(r"<[^>]+>", " ", cell)).split()


def _row(page: str, row_id: str) -> list[str]:
    """The cells (raw HTML) of the table row whose first cell carries ``row_id``."""
    row = re.search(r'<tr>\s*<td[^>]*><span id="' + re.escape(row_id) + r'"></span>.*?</tr>', page, flags=re.S)
    assert row, f"no row {row_id}"
    return re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), flags=re.S)


def _median_over_repeats(values: np.ndarray) -> float:
    return float(np.median(values))


def test_a_mixed_record_renders_with_the_render_verb_and_builds_strict(lm_site, tmp_path):
    project, doc = lm_site
    assert main(["render", "--results", str(_tree(tmp_path / "results", doc)), "--out", str(tmp_path / "md")]) == 0
    wallclock = (tmp_path / "md" / "wallclock.md").read_text(encoding="utf-8")
    framing = (tmp_path / "md" / "framing.md").read_text(encoding="utf-8")
    assert "## Prompt and generation {: #prompt-and-generation }" in wallclock
    assert "## Prompt prefill: token by token vs blocks {: #prefill }" in framing
    for page in ("results", "results/wallclock", "results/framing", "results/methods"):
        assert "Prompt" in html(project, page) or "prompt" in html(project, page), page


def test_wallclock_shows_prefill_first_token_and_decode_as_the_raw_samples_give_them(lm_site):
    project, doc = lm_site
    page = html(project, "results/wallclock")
    rows = doc["golden"]["rows"]
    causal = _causal(doc)
    assert causal, "the fixture holds decoder-only tiers"
    for name in causal:
        case = doc["wallclock"]["cases"][name]
        wall, first = np.array(case["wall_s"]), np.array(case["first_token_s"])
        prompt = sum(case["source_tokens"])
        decode_calls = sum(c - 1 for c in case["calls"])  # a row's first call is its prefill
        cells = [_text(c) for c in _row(page, f"prefill-{name}")]
        assert cells[0] == [name]
        assert cells[1][0] == f"{_median_over_repeats(1000 * first.mean(axis=1)):.3f}"
        assert cells[2][0] == f"{_median_over_repeats(1000 * first.sum(axis=1) / prompt):.4f}"
        assert cells[3][0] == f"{_median_over_repeats(1000 * (wall - first).sum(axis=1) / decode_calls):.3f}"
        assert cells[4] == [f"{prompt / rows:.1f}"]
        assert cells[5] == [str(decode_calls)]
        for c in cells[1:4]:  # each with its interval
            assert re.fullmatch(r"\S+ \[\S+, \S+\]", " ".join(c)), c
    for name in set(doc["tiers"]) - set(causal):
        assert f'id="prefill-{name}"' not in page  # encoder-decoder tiers have no prompt phase
    for chart_id in ("wallclock-phases", "wallclock-first-token"):
        assert f'id="{chart_id}"' in page


def test_metrics_json_carries_the_decoder_only_phases_and_prompt_framings(tmp_path):
    doc = _doc()
    assert main(["render", "--results", str(_tree(tmp_path / "results", doc)), "--out", str(tmp_path / "md")]) == 0
    found = json.loads((tmp_path / "md" / "metrics.json").read_text(encoding="utf-8"))["machines"][doc["machine_id"]]
    assert set(found["decoder_only"]) == set(_causal(doc))
    for name, m in found["decoder_only"].items():
        case = doc["wallclock"]["cases"][name]
        wall, first = np.array(case["wall_s"]), np.array(case["first_token_s"])
        calls = sum(c - 1 for c in case["calls"])
        assert m["prompt_tokens"] == sum(case["source_tokens"]) and m["decode_calls"] == calls
        assert m["decode_ms_per_token"]["value"] == pytest.approx(
            float(np.median(1000 * (wall - first).sum(1) / calls))
        )
    python = {t["tier"]: t for t in doc["framing"]["legs"][0]["tiers"]}
    for name, f in found["framing"].items():
        blocks = python[name].get("prefill", [])
        assert ("prefill" in f) == bool(blocks), name
        if blocks:
            assert f["prefill"]["argmax_total"] == len(blocks) * sum(doc["wallclock"]["cases"][name]["source_tokens"])


def test_framing_parity_shows_the_prompt_framings_of_decoder_only_tiers(lm_site):
    project, doc = lm_site
    page = html(project, "results/framing")
    assert 'id="prefill"' in page and 'id="framing-prefill-layers"' in page
    python = doc["framing"]["legs"][0]["tiers"]
    for t in python:
        if t["tier"] not in _causal(doc):
            assert f'id="prefill-{t["tier"]}"' not in page
            continue
        cells = [" ".join(_text(c)) for c in _row(page, f"prefill-{t['tier']}")]
        blocks = t["prefill"]
        assert cells[2 : 2 + len(blocks)] == [f"{b['argmax_agree']}/{b['argmax_total']}" for b in blocks]
        assert cells[2 + len(blocks)] == f"{max(b['present_max_abs_diff'] for b in blocks):.2e}"
        moved = {i for b in blocks for i, s in enumerate(b["first_divergent_step"]) if s is not None}
        assert cells[-1] == f"{len(moved)}/{len(blocks[0]['first_divergent_step'])}"


def _paired_ratio(a: dict, b: dict) -> float:
    per_token = lambda c: np.array(c["wall_s"]).sum(axis=1) / sum(c["tokens"])  # noqa: E731
    return float(np.exp(np.mean(np.log(per_token(a) / per_token(b)))))


def test_the_overview_names_each_kind_and_times_a_tier_against_its_own_kinds_reference(lm_site):
    project, doc = lm_site
    page = html(project, "results")
    summary = page[page.index('id="summary"') :]
    cases = doc["wallclock"]["cases"]
    references = {"seq2seq": "base-fp32", "causal": "lm-base-fp32"}
    for name, tier in doc["tiers"].items():
        row = re.search(r"<tr>\s*<td><a href=\"wallclock/#tier-" + re.escape(name) + r"\">.*?</tr>", summary, re.S)
        assert row, name
        cells = [" ".join(_text(c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), flags=re.S)]
        kind = "decoder-only" if tier["kind"] == "causal" else "encoder-decoder"
        assert f"· {kind} ·" in cells[0], cells[0]  # name, then role · precision · kind · size
        ref = references[tier["kind"]]  # no fidelity pass in this record: its kind's reference, named
        if name == ref:
            assert cells[2] == "the reference", (name, cells[2])
        else:
            want = f"{_paired_ratio(cases[name], cases[ref]):.2f}×"
            assert cells[2].split(" [")[0] == want and cells[2].endswith(f"of {ref}"), (name, cells[2])
    assert "prompt: holds" in page  # a decoder-only tier's prompt framing, answered in its row


def test_a_hostile_prompt_template_renders_inert_wherever_it_is_shown(lm_site):
    project, doc = lm_site
    run_page = f"results/runs/{doc['machine_id']}--{doc['run_id']}"
    for page in ("results/wallclock", "results/methods", run_page):
        text = html(project, page)
        assert "<script>alert" not in text and 'href="javascript' not in text, page
        assert not re.search(r"<(strong|em|a)\b[^>]*>\s*(b|l)\s*</", text), page
        shown = html_module.unescape(re.sub(r"<[^>]+>", "", text))
        assert HOSTILE_PROMPT in shown, page  # the template as the text it is
    cells = [" ".join(_text(c)) for c in re.findall(r"<td>(.*?)</td>", html(project, run_page), flags=re.S)]
    assert " ".join(HOSTILE_PROMPT.split()) in cells  # its own cell: the pipe split nothing


def test_an_encoder_decoder_record_has_no_decoder_only_words(tmp_path):
    doc = json.loads(SEQ2SEQ_RECORD.read_text(encoding="utf-8"))
    assert {t["kind"] for t in doc["tiers"].values()} == {"seq2seq"}
    assert main(["render", "--results", str(_tree(tmp_path / "results", doc)), "--out", str(tmp_path / "md")]) == 0
    for page in (tmp_path / "md").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        for word in ("decoder-only", "encoder-decoder", "prompt", "prefill"):
            assert word not in text.lower(), (page.name, word)


def test_a_second_kind_alone_is_not_called_mixed(tmp_path):
    """A record of decoder-only tiers only: no kind in the role cells, each tier against lm-base-fp32."""
    doc = copy.deepcopy(_doc())
    causal = set(_causal(doc))
    doc["tiers"] = {n: t for n, t in doc["tiers"].items() if n in causal}
    doc["tiers"]["lm-base-int8"]["role"] = "plain"
    doc["config"]["tiers"] = [t for t in doc["config"]["tiers"] if t["name"] in causal]
    cases = doc["wallclock"]["cases"]
    doc["wallclock"]["cases"] = {n: c for n, c in cases.items() if n not in ("base-fp32", "base-int8")}
    doc["wallclock"].pop("profile", None)
    doc["wallclock"].pop("call_costs", None)
    for leg in doc["framing"]["legs"]:
        leg["tiers"] = [t for t in leg["tiers"] if t["tier"] in causal]
    assert main(["render", "--results", str(_tree(tmp_path / "results", doc)), "--out", str(tmp_path / "md")]) == 0
    overview = (tmp_path / "md" / "index.md").read_text(encoding="utf-8")
    assert "decoder-only</small>" not in overview and "two kinds" not in overview
    assert "Fastest of the tiers:" in overview and "the time of lm-base-fp32" in overview
    assert "of lm-base-fp32" in overview  # each tier's × reference names it


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PAGES = {"overview": "results/", "wallclock": "results/wallclock/", "framing": "results/framing/"}
CHARTS = {
    "results/wallclock/": ("wallclock-phases", "wallclock-first-token"),
    "results/framing/": ("framing-prefill-layers",),
}


def test_the_decoder_only_pages_fit_and_draw_in_light_dark_and_at_390_px(lm_site, tmp_path):
    """Screenshots under $MEASURE_SCREENSHOTS: each page in light and dark at 1440 px and at 390 px wide."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    import functools
    import http.server
    import threading

    project, _ = lm_site

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(project.parent / "site"))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    shots = screenshots()
    try:
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for scheme, width, height in (("light", 1440, 900), ("dark", 1440, 900), ("light", 390, 844)):
                context = browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)
                tab = context.new_page()
                errors: list[str] = []
                tab.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                tab.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                for name, path in PAGES.items():
                    tab.goto(f"{base}/{path}", wait_until="networkidle")
                    for chart_id in CHARTS.get(path, ()):
                        tab.wait_for_selector(f"#{chart_id} .main-svg", timeout=15000)
                        assert tab.evaluate(f"() => document.getElementById('{chart_id}').data.length") > 0
                    if width == 1440:
                        overflow = tab.evaluate(
                            "() => [...document.querySelectorAll('.md-content .md-typeset__scrollwrap')]"
                            ".filter(w => w.scrollWidth > w.clientWidth + 1).length"
                        )
                        assert overflow == 0, f"{path}: {overflow} table(s) scroll sideways at {width} px"
                    else:  # at 390 px a wide table scrolls inside its own frame, never the page
                        assert tab.evaluate("() => document.documentElement.scrollWidth") <= width + 1, path
                    tab.screenshot(path=str(shots / f"lm-{name}-{scheme}-{width}.png"), full_page=True)
                assert errors == [], (scheme, width, errors)
                context.close()
            browser.close()
    finally:
        server.shutdown()
