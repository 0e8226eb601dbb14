"""The same RESULTS pages under every supported site generator: mkdocs + Material and ProperDocs (the plugin),
Zensical (a folder ``measure render`` wrote). Real builds of a real demo run, checked in real Chromium.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests_support import ROOT

from measure.site.hosts import nav_yaml, zensical_toml
from measure.site.source import NAV_PAGES

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
HOSTS = ("mkdocs", "properdocs", "zensical")
CHART_PAGES = ("results/wallclock/", "results/framing/")
TABLE_PAGES = ("results/", "results/wallclock/", "results/framing/", "results/methods/")


def _url(page: str) -> str:
    """Where a generator with directory URLs puts the page at ``page`` (relative to results/)."""
    stem = re.sub(r"(^|/)index\.md$|\.md$", r"\1", page).rstrip("/")
    return f"results/{stem}/" if stem else "results/"


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def _project_yaml(plugin: bool) -> str:
    """This project's own mkdocs.yml; without the plugin, with the nav ``measure init`` writes for Zensical."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    if plugin:
        return text
    text = text.replace("  - measure:\n      results: results\n", "")
    return re.sub(r"^nav:.*?\n(?=\S)", nav_yaml(), text, flags=re.S | re.M)


def _docs_nav() -> list:
    """The project's own nav (Home, the guides, the reference...) as mkdocs.yml lists it, before measure's pages."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return yaml.safe_load(re.search(r"^nav:.*?\n(?=\S)", text, flags=re.S | re.M)[0])["nav"]


def _toml_nav(entries: list) -> str:
    """``entries`` (mkdocs.yml's nav) as zensical.toml's: one ``[[project.nav]]`` table per top-level entry."""

    def value(v) -> str:
        if isinstance(v, str):
            return json.dumps(v)
        tables = (f"{{ {json.dumps(k)} = {value(x)} }}" for e in v for k, x in e.items())
        return "[" + ", ".join(tables) + "]"

    return "".join(f"[[project.nav]]\n{json.dumps(k)} = {value(v)}\n\n" for entry in entries for k, v in entry.items())


def _zensical_with_docs() -> str:
    """The zensical.toml ``measure init`` writes, with the project's own docs in its nav before the results."""
    text = zensical_toml("measure RESULTS")
    return text.replace('[[project.nav]]\nHome = "index.md"\n\n', _toml_nav(_docs_nav()), 1)


@pytest.fixture(scope="module")
def sites(both_suites, tmp_path_factory) -> dict[str, Path]:
    """The demo run rendered once, and the site each generator built (plus mkdocs over the rendered folder)."""
    _, record = both_suites
    results = record.parent.parent
    tmp = tmp_path_factory.mktemp("hosts")
    env = {k: v for k, v in os.environ.items() if k not in ("MEASURE_CACHE", "MEASURE_SITE_URL")}
    env |= {"NO_MKDOCS_2_WARNING": "1", "MEASURE_RESULTS": str(results)}
    rendered = tmp / "rendered"
    shutil.copytree(ROOT / "docs", rendered / "docs")
    bin_ = Path(sys.executable).parent
    _run([str(bin_ / "measure"), "render", "--out", "docs/results"], rendered, env)
    out: dict[str, Path] = {}
    for name, config, text, argv in (
        ("mkdocs", "mkdocs.yml", _project_yaml(True), ["mkdocs", "build", "--strict"]),
        ("properdocs", "properdocs.yml", _project_yaml(True), ["properdocs", "build", "--strict"]),
        ("mkdocs-rendered", "mkdocs.yml", _project_yaml(False), ["mkdocs", "build", "--strict"]),
        ("zensical", "zensical.toml", _zensical_with_docs(), ["zensical", "build", "--strict"]),
    ):
        project = tmp / name
        if name.endswith("rendered") or name == "zensical":
            shutil.copytree(rendered / "docs", project / "docs")  # the one render, as a user's docs/ holds it
        else:
            shutil.copytree(ROOT / "docs", project / "docs")
        (project / config).write_text(text, encoding="utf-8")
        done = _run([str(bin_ / argv[0]), *argv[1:]], project, env)
        said = done.stdout + done.stderr
        assert "WARNING" not in said and "Traceback" not in said, said[-2000:]
        out[name] = project / "site"
    return out


def _article(html: str) -> str:
    return html[html.index("<article") : html.index("</article>")]


def test_every_page_is_built_by_every_generator_and_the_plugin_builds_what_render_wrote(sites, both_suites):
    doc, _ = both_suites
    rendered = sites["mkdocs-rendered"].parent / "docs" / "results"
    pages = sorted(p.relative_to(rendered).as_posix() for p in rendered.rglob("*.md"))
    assert set(NAV_PAGES) <= set(pages)
    assert f"runs/{doc['machine_id']}--{doc['run_id']}.md" in pages
    for name in HOSTS:
        for page in pages:
            assert (sites[name] / _url(page) / "index.html").is_file(), (name, page)
        for data in ("metrics.json", "summary.csv", "assets/plotly.min.js", "assets/measure.js", "assets/measure.css"):
            assert (sites[name] / "results" / data).is_file(), (name, data)
        assert not (sites[name] / "results" / ".measure-manifest.json").exists()  # a dot file stays out of a site
        metrics = json.loads((sites[name] / "results" / "metrics.json").read_text(encoding="utf-8"))
        assert doc["machine_id"] in metrics["machines"]
    # the plugin is a thin wrapper: mkdocs builds the same article from the plugin as from the rendered folder
    for page in pages:
        a, b = (
            _article((sites[n] / _url(page) / "index.html").read_text(encoding="utf-8"))
            for n in ("mkdocs", "mkdocs-rendered")
        )
        assert a == b, page
    docs = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    for name in ("zensical", "properdocs", "mkdocs"):  # the guides, reference and explanation build under each
        for page in docs:
            stem = re.sub(r"(^|/)index\.md$|\.md$", r"\1", page).rstrip("/")
            assert (sites[name] / stem / "index.html").is_file(), (name, page)
    guide = (sites["zensical"] / "guide" / "getting-started" / "index.html").read_text(encoding="utf-8")
    assert "Reading the Overview" in guide and "Real-size models" in guide  # in its nav, beside the results
    wallclock = (sites["zensical"] / "results" / "wallclock" / "index.html").read_text(encoding="utf-8")
    assert '<a href="../assets/plotly.min.js">' in wallclock  # the generator resolved the page's own asset links
    assert len(re.findall(r'data-figure="', wallclock)) == 6  # the roofline is the sixth


@contextlib.contextmanager
def _served(folder: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _shots() -> Path:
    import tempfile

    folder = Path(os.environ.get("MEASURE_SCREENSHOTS") or tempfile.mkdtemp(prefix="measure-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, args=[*args, "--disable-component-update", "--disable-sync"]
        )
        yield chromium
        chromium.close()


ALL_DRAWN = "() => [...document.querySelectorAll('.measure-chart')].every(g => g.querySelector('.main-svg'))"
OVERFLOW = """() => [...document.querySelectorAll('article table')].map(t => t.closest('.md-typeset__scrollwrap')
  || t.parentElement).filter(w => w.scrollWidth > w.clientWidth + 1).length"""
DRAWN = """() => [...document.querySelectorAll('.measure-chart')].map(g => ({
  drawn: g.classList.contains('js-plotly-plot') && !!g.data && g.data.length > 0 && !!g.querySelector('.main-svg'),
  font: g._fullLayout ? g._fullLayout.font.color : null }))"""


@pytest.mark.parametrize("name", HOSTS)
def test_every_chart_draws_in_light_and_dark_without_errors_or_overflow(sites, browser, both_suites, name):
    doc, _ = both_suites
    rendered = sites["mkdocs-rendered"].parent / "docs" / "results"
    machine = next(rendered.glob("history/*.md")).relative_to(rendered).as_posix()
    paths = ["", *(_url(p) for p in NAV_PAGES), _url(machine), _url(f"runs/{doc['machine_id']}--{doc['run_id']}.md")]
    shots = _shots()
    fonts: dict[str, list[str]] = {}
    with _served(sites[name]) as base:
        for scheme in ("light", "dark"):
            context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme=scheme)
            tab = context.new_page()
            errors: list[str] = []
            tab.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
            tab.on(
                "response", lambda r, errors=errors: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None
            )
            charts = 0
            for path in paths:
                tab.goto(f"{base}/{path}", wait_until="networkidle")
                if tab.locator(".measure-chart").count():
                    tab.wait_for_function(ALL_DRAWN, timeout=20000)
                drawn = tab.evaluate(DRAWN)
                assert all(d["drawn"] for d in drawn), (name, scheme, path, drawn)
                charts += len(drawn)
                if path in CHART_PAGES:
                    assert drawn, (name, path)
                    fonts.setdefault(path, []).append(drawn[0]["font"])
                if path in TABLE_PAGES:
                    assert tab.locator("article table").count() > 0, (name, path)
                    assert tab.evaluate(OVERFLOW) == 0, f"{name} {path}: a table scrolls sideways at 1440 px ({scheme})"
                if path == "results/wallclock/":
                    tab.screenshot(path=str(shots / f"{name}-wallclock-{scheme}-1440.png"), full_page=False)
            assert charts >= 7, (name, scheme, charts)  # wall-clock 5, framing 1, the machine's history 1 or more
            assert errors == [], (name, scheme, errors)
            context.close()
    for path, seen in fonts.items():
        assert len(set(seen)) == 2, (name, path, seen)  # the charts follow the light / dark palette
