"""The RESULTS site: real mkdocs builds from real run records; hostile text stays text; history corrects."""

from __future__ import annotations

import copy
import html as html_module
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests_support import CHROMIUM_ARGS, ROOT, build, html, later, screenshots, site_project, write_config

from measure.record.io import load_record, write_atomic
from measure.site.escape import md
from measure.suites.config import load_config
from measure.suites.runner import run

HOSTILE_IN = "<script>alert(1)</script> | `x` **b**"
HOSTILE_OUT = "<img src=x onerror=alert(2)> | *y* [l](javascript:alert(3))"
"""The expected output: no tier can decode it ('=' and '(' are not in the demo's vocabulary), so it is a miss
everywhere."""
HOSTILE_SPEC = "<svg onload=alert(4)> | _z_ <b>"


@pytest.fixture(scope="module")
def hostile_record(tmp_path_factory):
    """A real run whose golden rows include a hostile one (script tag, pipes, backticks, markup)."""
    tmp = tmp_path_factory.mktemp("hostile")
    config = write_config(tmp, rows=6, repeats=2)
    rows = tmp / "rows.jsonl"
    rows.write_text(
        rows.read_text(encoding="utf-8") + json.dumps({"input": HOSTILE_IN, "output": HOSTILE_OUT}) + "\n",
        encoding="utf-8",
    )
    path = run(load_config(config), ["wallclock", "framing"], tmp / "results", argv=["test"])
    doc = load_record(path)  # the document, whatever packing the file stores it in
    hostile = doc["golden"]["rows"]
    # What a quantized pair decodes differs between CPUs, so the record is made to say it: every speculative
    # decode preserved but the pair's on the hostile row, which differs in hostile text of its own.
    for acc in doc["framing"]["acceptance"]:
        acc["preserved"], acc["differing"] = acc["rows"], []
    pair = next(a for a in doc["framing"]["acceptance"] if not a["self"])
    pair["preserved"] -= 1
    pair["differing"] = [{"line": hostile, "input": HOSTILE_IN, "speculative": HOSTILE_SPEC, "greedy": HOSTILE_OUT}]
    write_atomic(path, doc)
    return load_record(path), tmp / "results"


@pytest.fixture(scope="module")
def built(hostile_record, tmp_path_factory):
    project = site_project(tmp_path_factory.mktemp("site"))
    done = build(project, hostile_record[1])
    assert done.returncode == 0, done.stderr[-3000:]
    return project, hostile_record[0]


def test_every_page_is_built(built):
    project, doc = built
    for page in (
        "results",
        "results/wallclock",
        "results/framing",
        "results/history",
        "results/machines",
        "results/methods",
        "results/runs",
    ):
        assert (project.parent / "site" / page / "index.html").is_file(), page
    run_page = project.parent / "site" / "results" / "runs" / f"{doc['machine_id']}--{doc['run_id']}" / "index.html"
    assert run_page.is_file()
    assert doc["golden"]["sha256"] in run_page.read_text(encoding="utf-8")
    metrics = json.loads((project.parent / "site" / "results" / "metrics.json").read_text(encoding="utf-8"))
    assert doc["machine_id"] in metrics["machines"]
    assert (project.parent / "site" / "results" / "assets" / "plotly.min.js").stat().st_size > 1_000_000


def test_every_verdict_has_a_stable_anchor_and_evidence_that_resolves(built):
    import re

    project, doc = built
    overview, verdicts = html(project, "results"), html(project, "results/verdicts")
    for page in (overview, verdicts):
        assert doc["started_at"][:10] not in re.findall(r'id="([^"]+)"', page)  # no dated anchors
    for topic in ("decode-linear", "harness-overhead", "framing-parity", "output-preservation", "self-acceptance"):
        assert f'id="{topic}"' in verdicts, topic
    assert 'id="decode-linear-base-fp32"' in verdicts
    for page, least in ((overview, 10), (verdicts, 20)):
        links = re.findall(r'href="(?:\.\./)?((?:wallclock|framing|methods|history|machines|verdicts)/)#([^"]+)"', page)
        assert len(links) >= least
        for target, anchor in links:
            assert f'id="{anchor}"' in html(project, "results/" + target.rstrip("/")), (target, anchor)
    assert "Is decoding O(T)?" in html_module.unescape(verdicts)


def test_the_overview_table_states_speed_and_fidelity_from_the_record(built):
    import csv
    import io

    from measure.analysis.headline import headline
    from measure.analysis.record_analysis import analyse
    from measure.record.model import from_document

    project, doc = built
    h = headline(analyse(from_document(doc, "built")))
    site = project.parent / "site" / "results"
    rows = {r["tier"]: r for r in csv.DictReader(io.StringIO((site / "summary.csv").read_text(encoding="utf-8")))}
    assert set(rows) == set(doc["tiers"])
    page = html_module.unescape(html(project, "results"))
    for t in h.tiers:
        row = rows[t.tier]
        assert float(row["ms_per_token"]) == t.ms_per_token.value
        assert (
            int(row["exact"])
            == t.exact
            == next(x["quality"]["exact"] for x in doc["framing"]["legs"][0]["tiers"] if x["tier"] == t.tier)
        )
        if t.vs_reference is not None:
            assert float(row["vs_reference"]) == t.vs_reference.value
            assert f"{t.vs_reference.value:.2f}×" in page
        if row["fidelity_reference"]:  # one reference per row: its speed and its fidelity are against one tier
            assert row["speed_reference"] == row["fidelity_reference"]
        assert f"{t.ms_per_token.value:.3f}" in page
    assert page.index("What to ship") < page.index("Summary") < page.index("Every check behind this page")


def test_chart_data_is_embedded_and_plotly_left_to_the_chart_script(built):
    import re

    project, _ = built
    # wall-clock: ms/token, growth, the roofline, speedup, acceptance by position, verifier call cost; framing: the
    # layers' present differences and the fidelity pass's KLD distribution
    for page, charts in (("results/wallclock", 6), ("results/framing", 2)):
        text = html(project, page)
        figures = re.findall(r'data-figure="([^"]*)"', text)
        assert len(figures) == charts
        assert all(json.loads(html_module.unescape(f))["data"] for f in figures)
        # plotly.js is only linked (hidden): measure.js fetches it on pages with a chart, after first paint
        assert "<script src" not in text.split('class="md-content"', 1)[1].split("</article>", 1)[0]
        assert text.count('href="../assets/plotly.min.js"') == 1 and text.count('href="../assets/measure.js"') == 1
        assert "javascripts/measure.js" not in text and "stylesheets/measure.css" not in text  # nothing via config
        assert "cdn.plot.ly" not in text


def _table_rows(page: str, heading: str) -> list[list[str]]:
    """The cells of each body row of the first table after an h2 heading (raw HTML of each cell)."""
    start = re.search(r"<h2[^>]*>" + re.escape(heading), page).end()
    table = page[page.index("<table>", start) : page.index("</table>", start)]
    body = table[table.index("<tbody>") :]
    return [re.findall(r"<td[^>]*>(.*?)</td>", r, flags=re.S) for r in re.findall(r"<tr>.*?</tr>", body, flags=re.S)]


def test_hostile_golden_row_renders_inert(built):
    project, doc = built
    text = html(project, "results/framing")
    assert "<script>alert" not in text and "<img src=x" not in text and "<svg onload" not in text
    assert 'href="javascript' not in text
    shown = lambda cell: html_module.unescape(re.sub(r"</?mark>", "", cell))  # noqa: E731
    tiers = set(doc["tiers"])
    misses = [c for c in _table_rows(text, "Golden rows decoded differently") if shown(c[2]) == HOSTILE_IN]
    assert {shown(c[0]) for c in misses} == tiers, "every tier misses the hostile row, listed once each"
    differing = [c for c in _table_rows(text, "Rows where speculative output differs") if shown(c[2]) == HOSTILE_IN]
    assert len(differing) == 1  # the one the record states
    for cells, want in [*((m, (HOSTILE_IN, HOSTILE_OUT)) for m in misses), (differing[0], (HOSTILE_IN, HOSTILE_SPEC))]:
        assert len(cells) == 5  # the pipes did not add table cells
        assert (shown(cells[2]), shown(cells[3])) == want  # shown as the text it is
        assert not re.search(r"<(strong|code|em|a|script|img|svg|b)\b", "".join(cells))
    assert shown(differing[0][4]) == HOSTILE_OUT


def test_escape_covers_markdown_and_html():
    out = md("a|b`c`<i>*d*</i>\n[x](y)")
    for ch in "|`<>*[]()\n":
        assert ch not in out


def _newer(doc: dict, days: int, break_preservation: bool) -> dict:
    new = later(doc, days)
    if break_preservation:
        acc = next(a for a in new["framing"]["acceptance"] if not a["self"])
        acc["preserved"] -= 1
        acc["differing"].append({"line": 1, "input": "слово", "speculative": "slovo", "greedy": "slava"})
    return new


def _preserving(doc: dict) -> dict:
    """The record with every speculative decode preserved: the condition set in the record, whatever this CPU's
    quantized kernels decoded."""
    out = copy.deepcopy(doc)
    for acc in out["framing"]["acceptance"]:
        acc["preserved"], acc["differing"] = acc["rows"], []
    return out


def test_a_new_record_regenerates_the_pages_and_the_correction_shows(built, tmp_path):
    project, doc = built
    doc = _preserving(doc)
    results = tmp_path / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    assert build(project, results).returncode == 0
    machine_page = f"results/history/{doc['machine_id'].lower().replace('_', '-')}"
    assert "<del>" not in html(project, machine_page)
    newer = _newer(doc, 1, break_preservation=True)
    write_atomic(results / newer["machine_id"] / f"{newer['run_id']}.json", newer)
    done = build(project, results)
    assert done.returncode == 0, done.stderr[-2000:]
    history = html(project, machine_page)
    assert f"{doc['machine_id'].lower().replace('_', '-')}/" in html(project, "results/history")
    assert f"</del> until {newer['started_at'][:10]}" in history  # the replaced answer, struck through
    assert history.index("got worse") < history.index("Is decoding O")  # what got worse is listed first
    overview = html(project, "results")
    assert newer["run_id"] in overview and 'class="measure-badge measure-failure"' in overview
    framing = html(project, "results/framing")
    assert "<mark>" in framing  # the differing row is shown with its difference marked


def test_a_bad_record_fails_the_build_with_its_name(built, tmp_path):
    project, _ = built
    bad = tmp_path / "results" / "m" / "20260101T000000Z-000000.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"schema_version": 1}', encoding="utf-8")
    done = build(project, tmp_path / "results")
    assert done.returncode != 0
    assert "20260101T000000Z-000000.json" in done.stderr and "Traceback" not in done.stderr


def test_no_records_still_builds(tmp_path):
    project = site_project(tmp_path / "p")
    (tmp_path / "empty").mkdir()  # an empty tree; a missing one is an error (tests/site/test_plugin.py)
    done = build(project, tmp_path / "empty")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "No run records yet" in html(project, "results")


def test_render_verb_writes_plain_markdown(built, tmp_path):
    from measure.cli import main

    _, doc = built
    results = tmp_path / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    assert main(["render", "--results", str(results), "--out", str(tmp_path / "md")]) == 0
    text = (tmp_path / "md" / "framing.md").read_text(encoding="utf-8")
    assert "| tier | precision |" in text and "<script>alert" not in text
    assert (tmp_path / "md" / "metrics.json").is_file() and (tmp_path / "md" / "assets" / "measure.js").is_file()


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="module")
def browser_page(hostile_record, tmp_path_factory):
    """Headless Debian Chromium, driven by playwright, on the built site served from loopback."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    import functools
    import http.server
    import threading

    project = site_project(tmp_path_factory.mktemp("browser"))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(project.parent / "site"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    done = build(project, hostile_record[1], site_url=f"http://127.0.0.1:{server.server_address[1]}/")
    assert done.returncode == 0, done.stderr[-2000:]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    errors: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page, f"http://127.0.0.1:{server.server_address[1]}", errors
        browser.close()
    server.shutdown()


CHART_PAGES = {
    "results/wallclock/": [
        "wallclock-ms-per-token",
        "wallclock-growth",
        "wallclock-roofline",
        "wallclock-speculative",
        "wallclock-acceptance",
    ],
    "results/framing/": ["framing-layers"],
}


def _drawn(page, chart_id: str) -> dict:
    page.wait_for_selector(f"#{chart_id} .main-svg", timeout=15000)
    return page.evaluate(
        f"() => {{ const g = document.getElementById('{chart_id}');"
        " return {traces: g.data.length, font: g.layout.font.color}; }"
    )


def test_charts_render_in_light_and_dark_and_after_instant_navigation(browser_page):
    page, base, errors = browser_page
    fonts = {}
    for path, ids in CHART_PAGES.items():
        page.goto(base + "/" + path)
        for chart_id in ids:
            assert _drawn(page, chart_id)["traces"] > 0
        fonts[path] = _drawn(page, ids[0])["font"]
    page.goto(base + "/results/history/")
    page.locator("article a[href*='history/linux']").first.click()
    history_id = page.locator(".measure-chart").first.get_attribute("id")
    assert history_id.startswith("history-") and _drawn(page, history_id)["traces"] > 0
    assert page.evaluate(f"() => document.getElementById('{history_id}').layout.xaxis.type") == "date"
    # dark mode: the palette toggle re-draws every chart with the dark template
    page.locator("form[data-md-component=palette] label:not([hidden])").first.click()
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'slate'")
    for path, ids in CHART_PAGES.items():
        page.goto(base + "/" + path)
        for chart_id in ids:
            drawn = _drawn(page, chart_id)
            assert drawn["traces"] > 0 and drawn["font"] != fonts[path], chart_id
    # instant navigation: Material swaps the page without a reload; the charts must still be drawn
    page.goto(base + "/results/")
    page.wait_for_load_state("networkidle")  # instant navigation needs the sitemap it fetches after load
    page.evaluate("() => window.__marker = 1")
    page.locator("nav.md-nav a[href$='framing/']:not([href*='explanation'])").first.click()
    _drawn(page, "framing-layers")
    assert page.evaluate("() => window.__marker") == 1, "navigation reloaded the page instead of swapping it"
    page.locator("nav.md-nav a[href$='wallclock/']").first.click()
    for chart_id in CHART_PAGES["results/wallclock/"]:
        assert _drawn(page, chart_id)["traces"] > 0
    assert errors == []


SITE_PAGES = (
    "",
    "results/",
    "results/wallclock/",
    "results/framing/",
    "results/history/",
    "results/machines/",
    "results/methods/",
    "results/runs/",
)
TABLE_PAGES = ("results/", "results/wallclock/", "results/framing/")


def _context(page, scheme: str, width: int, height: int):
    return page.context.browser.new_context(viewport={"width": width, "height": height}, color_scheme=scheme)


def test_pages_fit_answer_first_and_load_plotly_only_where_they_draw(browser_page, hostile_record):
    page, base, _ = browser_page
    shots = screenshots()
    run_page = f"results/runs/{hostile_record[0]['machine_id']}--{hostile_record[0]['run_id']}/"
    for scheme, width, height in (("light", 1440, 900), ("dark", 1440, 900), ("light", 390, 844)):
        context = _context(page, scheme, width, height)
        tab = context.new_page()
        errors: list[str] = []
        requested: list[str] = []
        tab.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        tab.on("request", lambda r, requested=requested: requested.append(r.url))
        history = f"results/history/{hostile_record[0]['machine_id'].lower().replace('_', '-')}/"
        for path in (*SITE_PAGES, history, run_page):
            requested.clear()
            tab.goto(f"{base}/{path}", wait_until="networkidle")
            charts = tab.locator(".measure-chart").count()
            if charts:  # plotly.js is fetched after first paint: on a busy host, after the network went idle
                tab.wait_for_selector(".measure-chart .main-svg", timeout=15000)
            plotly = any(u.endswith("plotly.min.js") for u in requested)
            assert plotly == (charts > 0), (path, charts)  # plotly.js only where a chart is drawn
            name = path.strip("/").replace("/", "_") or "home"
            name = "run" if path == run_page else name
            tab.screenshot(path=str(shots / f"{name}-{scheme}-{width}.png"), full_page=True)
            if width == 1440 and path in TABLE_PAGES:
                overflow = tab.evaluate(
                    "() => [...document.querySelectorAll('.md-content .md-typeset__scrollwrap')]"
                    ".filter(w => w.scrollWidth > w.clientWidth + 1).length"
                )
                assert overflow == 0, f"{path}: {overflow} table(s) scroll sideways at {width} px"
            if path == "results/" and height == 900:  # the decision, its first ship line whole, on the first screen
                bottom = tab.evaluate(
                    "() => document.querySelector('#decision + ul > li').getBoundingClientRect().bottom"
                )
                assert bottom < 900, f"the first decision line ends at {bottom} px, below the first screen"
                if width == 1440:
                    tall = tab.evaluate("() => document.body.scrollHeight")
                    assert tall <= 4 * 900, f"the Overview is {tall} px tall, over four screens"
            if path == run_page:
                first = tab.evaluate("() => document.querySelector('.md-content article').innerText.trim()")
                assert first.startswith("Run " + hostile_record[0]["run_id"]), first[:80]
        assert errors == [], (scheme, width, errors)
        context.close()


def test_chart_grid_and_text_colours_follow_the_palette(browser_page):
    page, base, _ = browser_page
    seen = {}
    for scheme in ("light", "dark"):
        context = _context(page, scheme, 1440, 900)
        tab = context.new_page()
        tab.goto(f"{base}/results/wallclock/", wait_until="networkidle")
        tab.wait_for_selector("#wallclock-growth .main-svg", timeout=15000)
        seen[scheme] = tab.evaluate(
            "() => { const l = document.getElementById('wallclock-growth')._fullLayout;"
            " return [l.font.color, l.xaxis.gridcolor, l.yaxis.gridcolor]; }"
        )
        context.close()
    assert all(a != b for a, b in zip(seen["light"], seen["dark"], strict=True)), seen


CONTRAST_JS = """() => {
  const rgb = c => { const m = c.match(/rgba?\\(([^)]+)\\)/); if (m) return m[1].split(',').slice(0, 3).map(Number);
    const h = c.replace('#', ''); const f = h.length === 3 ? h.split('').map(x => x + x).join('') : h;
    return [0, 2, 4].map(i => parseInt(f.slice(i, i + 2), 16)); };
  const lum = c => { const [r, g, b] = rgb(c).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92
    : Math.pow((v + 0.055) / 1.055, 2.4); }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const page = getComputedStyle(document.querySelector('.md-main')).backgroundColor;
  const bg = page === 'rgba(0, 0, 0, 0)' ? getComputedStyle(document.body).backgroundColor : page;
  const found = [];
  document.querySelectorAll('.measure-chart').forEach(div => (div._fullData || []).forEach(t => {
    if (!(t.mode || '').includes('markers') || !t.marker) return;
    [].concat(t.marker.color).forEach(c => found.push(['marker ' + t.name, c, ratio(c, bg)]));
  }));
  document.querySelectorAll('.md-typeset mark').forEach(m => { const st = getComputedStyle(m);
    found.push(['highlight', st.backgroundColor, ratio(st.backgroundColor, bg)]);
    found.push(['highlighted text', st.color, ratio(st.color, st.backgroundColor)]); });
  return {bg, found};
}"""


def test_dark_mode_markers_and_highlights_reach_wcag_aa(browser_page):
    """Every chart marker and every highlight of a differing character at 4.5:1 or more against the slate page,
    measured in the browser on the colours Plotly and the stylesheet actually applied."""
    page, base, _ = browser_page
    context = _context(page, "dark", 1440, 900)
    tab = context.new_page()
    kinds = set()
    for path in ("results/", "results/wallclock/", "results/framing/"):
        tab.goto(f"{base}/{path}", wait_until="networkidle")
        if tab.locator(".measure-chart").count():
            tab.wait_for_selector(".measure-chart .main-svg", timeout=15000)
        seen = tab.evaluate(CONTRAST_JS)
        low = [(what, colour, round(r, 2)) for what, colour, r in seen["found"] if r < 4.5]
        assert low == [], (path, seen["bg"], low)
        kinds |= {what.split(" ")[0] for what, _, _ in seen["found"]}
    context.close()
    assert {"marker", "highlight"} <= kinds  # both were on the pages and measured


def test_mkdocs_serve_shows_a_new_record_without_a_restart(built, tmp_path):
    import socket
    import time
    import urllib.request

    _, doc = built
    project = site_project(tmp_path / "p")
    results = tmp_path / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MEASURE_RESULTS=str(results), NO_MKDOCS_2_WARNING="1")
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "-f", str(project), "-a", f"127.0.0.1:{port}"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )

    def runs_page(deadline: float, want: str) -> bool:
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/results/runs/", timeout=5) as r:
                    if want in r.read().decode("utf-8"):
                        return True
            except OSError:
                pass
            time.sleep(0.5)
        return False

    try:
        assert runs_page(time.monotonic() + 90, doc["run_id"]), (tmp_path / "serve.log").read_text()
        newer = _newer(doc, 2, break_preservation=False)
        write_atomic(results / newer["machine_id"] / f"{newer['run_id']}.json", newer)
        assert runs_page(time.monotonic() + 90, newer["run_id"]), (tmp_path / "serve.log").read_text()[-3000:]
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


def _site(results: Path):
    from measure.results.cache import SummaryCache
    from measure.results.reader import load_results
    from measure.site.build import build_site

    cache = SummaryCache(None)
    return build_site(load_results(results, cache), cache)


def _write(results: Path, *docs: dict) -> Path:
    for d in docs:
        write_atomic(results / d["machine_id"] / f"{d['run_id']}.json", d)
    return results


def test_machines_page_shows_platform_parity_by_precision_with_the_first_divergent_token(both_suites, tmp_path):
    doc, _ = both_suites
    arm = copy.deepcopy(doc)
    arm["machine_id"], arm["run_id"] = "linux-aarch64-4c-0000000000", "20261202T000000Z-abcdef"
    int8 = next(t for t in arm["framing"]["legs"][0]["tiers"] if t["tier"] == "base-int8")
    int8["output_ids"][2][1] += 1  # this machine's int8 kernels decode row 3 differently from its second token
    other = copy.deepcopy(arm)
    other["machine_id"] = "windows-amd64-8c-1111111111"  # sorts last: never the reference
    other["tiers"]["base-fp32"]["fingerprint"]["files"][0]["sha256"] = "0" * 64
    site = _site(_write(tmp_path / "results", doc, arm, other))
    text = html_module.unescape
    rows = {text(str(r.label)): [text(str(c)) for c in r.cells] for r in site.machines.outputs}
    by_machine = [text(str(c.machine)) for c in site.machines.columns]
    fp32 = dict(zip(by_machine, rows["base-fp32 (fp32)"], strict=True))
    int8_cells = dict(zip(by_machine, rows["base-int8 (int8-dynamic)"], strict=True))
    reference = by_machine[0]
    assert fp32[reference].startswith("reference")
    assert fp32["windows-amd64-8c-1111111111"] == "other artifacts or golden rows: not comparable"
    rows_n = doc["golden"]["rows"]
    (compared,) = {doc["machine_id"], arm["machine_id"]} - {reference}
    assert fp32[compared] == f"{rows_n}/{rows_n} rows identical"
    assert int8_cells[compared] == f"{rows_n - 1}/{rows_n} rows identical; first divergence: row 3, token 2"
    assert next(iter(rows)).endswith("(fp32)")  # grouped by precision


def test_history_charts_ms_per_token_and_calls_a_30_percent_slowdown_on_that_tier_only(built, tmp_path):
    from measure.analysis.calibration import calibrate
    from measure.record.io import load_record
    from measure.results.cache import SummaryCache
    from measure.results.calibration_file import write
    from measure.results.reader import load_results

    project, _ = built
    base = load_record(ROOT / "tests" / "data" / "record-v1.json")  # a real recorded run, 5 repeats
    base["environment"]["git"] = {"commit": "a" * 40, "dirty": False}
    again = _newer(base, 1, break_preservation=False)  # the same build measured again: an A/A pair
    slowed = _newer(base, 2, break_preservation=False)
    slowed["environment"]["git"] = {"commit": "b" * 40, "dirty": False}
    case = slowed["wallclock"]["cases"]["small-int4"]
    case["wall_s"] = [[w * 1.3 for w in rep] for rep in case["wall_s"]]
    results = _write(tmp_path / "results", base, again, slowed)
    write(
        results, calibrate(load_results(results, SummaryCache(None)).summaries, base["machine_id"])
    )  # the recorded band

    (page,) = _site(results).history_pages.values()
    metric = page.metric
    assert (metric.records, metric.compared) == (3, 2)
    assert [(c.case, c.outcome, c.new.run_id) for c in metric.changes] == [("small-int4", "slower", slowed["run_id"])]
    assert "recorded A/A calibration: 1 pair" in metric.calibration
    figure = json.loads(html_module.unescape(metric.chart.figure))
    lines = figure["data"]
    assert {t["name"] for t in lines} == {"base-fp32", "base-int8", "small-int4"}  # greedy tiers only
    assert all(len(t["x"]) == 3 for t in lines)
    assert len({t["line"]["color"] for t in lines}) == 3  # one colour per tier
    # two commits are no history yet: the chart shades no change point, the consecutive call is listed below it
    assert metric.points == () and "fewer than 4 commits" in metric.searched

    done = build(project, results)
    assert done.returncode == 0, done.stderr[-2000:]
    page = html(project, f"results/history/{base['machine_id'].lower().replace('_', '-')}")
    assert f'id="{metric.chart.id}"' in page and "data-figure=" in page
    assert "<strong>slower</strong>" in page and page.count("<strong>slower</strong>") == 1
    assert page.index("Change points") < page.index("Consecutive records compared") < page.index("<strong>slower")


def _nav(site: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """The primary nav of a built page: (href, title) of each link, and the section titles."""
    import re

    text = (site / "index.html").read_text(encoding="utf-8")
    start = text.index("md-nav--primary")
    nav = text[start : text.index("</nav>", start)]
    span = r'>\s*<span class="md-ellipsis">\s*([^<]*?)\s*</span>'
    links = re.findall(r'<a href="([^"#]*)"[^>]*class="md-nav__link[^"]*"[^>]*' + span, nav)
    return links, re.findall(r'<label class="md-nav__link"[^>]*' + span, nav)


def _slug(path: str) -> str:
    return f"results/{path.removesuffix('index.md').removesuffix('.md')}/".replace("//", "/")


@pytest.mark.parametrize(
    ("options", "nav", "sections"),
    [
        ("results: results", "", ["Results"]),
        ("section: ''", "", []),
        ("results: results", "nav:\n  - Start: index.md\n  - Speed: results/wallclock.md\n", []),
    ],
    ids=["no-nav", "top-level", "nav-lists-a-page"],
)
def test_the_plugin_adds_its_pages_to_the_nav_once(tmp_path, options, nav, sections):
    """A site with only theme and plugins gets measure's section; a nav that lists its pages is kept as written."""
    from measure.site.nav import PAGES

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Start\n", encoding="utf-8")
    config = f"site_name: t\ntheme:\n  name: material\nplugins:\n  - search\n  - measure:\n      {options}\n{nav}"
    (tmp_path / "mkdocs.yml").write_text(config, encoding="utf-8")
    (tmp_path / "no-records").mkdir()  # an empty tree (a missing one is an error)
    done = build(tmp_path / "mkdocs.yml", tmp_path / "no-records")
    assert done.returncode == 0, done.stderr[-2000:]
    links, found_sections = _nav(tmp_path / "site")
    assert found_sections == sections
    if nav:
        assert links == [(".", "Start"), ("results/wallclock/", "Speed")]
    else:
        assert links == [(".", "Start"), *[(_slug(p.path), p.title) for p in PAGES]]
        assert [t for _, t in links[1:]] == [
            "Overview",
            "Wall-clock",
            "Framing parity",
            "Verdicts",
            "History",
            "Machines",
            "Methods",
            "Runs",
        ]
    assert (tmp_path / "site" / "results" / "methods" / "index.html").is_file()  # built, listed or not


def test_every_verdict_topic_has_a_row_to_link_to():
    """A new verdict topic must say where its evidence is (else its link would fall back to Methods)."""
    import inspect

    from measure.analysis import rules as verdicts
    from measure.site.evidence import ROWS

    source = inspect.getsource(verdicts)
    topics = set(re.findall(r'^\s+"([a-z-]+)",\n\s+"[A-Z][^"]*\?"', source, flags=re.M))
    assert topics and topics <= set(ROWS), topics - set(ROWS)
