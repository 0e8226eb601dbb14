"""The block every page carries so that it loads measure's stylesheet and chart script itself, under any generator.

A Markdown site generator rewrites the links of a page (``assets/measure.js`` becomes
``../assets/measure.js`` once ``wallclock.md`` is built as ``wallclock/index.html``) but
never the URLs inside raw HTML. So each page lists its assets as ordinary Markdown
links, in a paragraph hidden with ``attr_list``, and a one-line script reads the URLs the
generator gave them: it adds the stylesheet beside the links and, once per browser tab,
the chart script, which fetches plotly.js from the third link only on a page with a chart.
The block goes right after the page's title, so the first heading stays the first element
(mkdocs takes a page's title from it) and the stylesheet is asked for before the tables.
Under Material's instant navigation the block is swapped in with the page and its script
runs again: the stylesheet comes and goes with measure's pages, the chart script stays.
"""

from __future__ import annotations

import posixpath
from importlib.util import find_spec
from pathlib import Path

from measure.errors import MeasureError

ASSETS = Path(__file__).resolve().parent / "assets"
"""measure's chart script and stylesheet, shipped inside the package."""
FOLDER = "assets"
"""Where the assets go, relative to the folder of pages."""
SCRIPT = f"{FOLDER}/measure.js"
STYLE = f"{FOLDER}/measure.css"
PLOTLY = f"{FOLDER}/plotly.min.js"

LOADER = (
    "<script>(function (d) {"
    ' var p = d.querySelector("p.measure-assets"); if (!p) return;'
    " function url(n) { var a = p.querySelector('a[href$=\"' + n + '\"]'); return a ? a.href : \"\"; }"
    ' if (!d.querySelector("link[data-measure]")) { var l = d.createElement("link"); l.rel = "stylesheet";'
    ' l.href = url("measure.css"); l.setAttribute("data-measure", ""); p.appendChild(l); }'
    ' if (!window.measureCharts && !d.querySelector("script[data-measure]")) { var s = d.createElement("script");'
    ' s.src = url("measure.js"); s.setAttribute("data-measure", ""); d.body.appendChild(s); }'
    " })(document);</script>"
)
"""Finds the hidden links of this page and loads what they point to (the script once per tab)."""


def plotly_js() -> Path:
    """The plotly.min.js the plotly package ships (found without importing plotly): never a CDN's."""
    spec = find_spec("plotly")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / "package_data" / "plotly.min.js"
        if path.is_file():
            return path
    raise MeasureError("plotly.min.js not found in the installed plotly package (pip install plotly)")


def asset_sources() -> dict[str, Path]:
    """Path relative to the folder of pages -> the file it is copied from."""
    return {SCRIPT: ASSETS / "measure.js", STYLE: ASSETS / "measure.css", PLOTLY: plotly_js()}


def block(page: str) -> str:
    """The asset links and their loader for the page at ``page`` (relative to the folder of pages)."""
    here = posixpath.dirname(page) or "."
    links = " ".join(f"[{posixpath.basename(a)}]({posixpath.relpath(a, here)})" for a in (STYLE, SCRIPT, PLOTLY))
    return f"{links}\n{{: .measure-assets hidden }}\n\n{LOADER}\n"


def with_assets(page: str, text: str) -> str:
    """``text`` with the block inserted after its title (the first ``# `` line past any front matter)."""
    lines = text.splitlines(keepends=True)
    start = 0
    if lines and lines[0].strip() == "---":  # YAML front matter: the title comes after it
        start = next((i + 1 for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
    title = next((i for i in range(start, len(lines)) if lines[i].startswith("# ")), None)
    at = start if title is None else title + 1
    head = "".join(lines[:at])
    if head and not head.endswith("\n"):
        head += "\n"
    return f"{head}\n{block(page)}\n{''.join(lines[at:])}"
