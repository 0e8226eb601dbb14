"""The site source: every file measure gives a Markdown site generator, laid out as one folder of pages.

One generator for every host. ``measure render`` writes this into a docs folder (for
Zensical, or any generator that copies docs/ and runs Python-Markdown with ``attr_list``,
``tables``, ``toc`` and ``admonition``); the mkdocs plugin hands the same files to mkdocs
and ProperDocs as generated files. The pages carry their assets themselves
(:mod:`measure.site.asset_block`), so no host configures a script or a stylesheet.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from measure.results.cache import SummaryCache
from measure.site.asset_block import asset_sources, with_assets
from measure.site.nav import PAGES
from measure.site.render import TEMPLATES, render_results

METRICS = "metrics.json"


@dataclass(frozen=True)
class SiteSource:
    """Paths relative to the folder of pages (``results/`` in a site), each with what goes there."""

    texts: dict[str, str]
    """Markdown pages (each with its asset block), metrics.json and summary.csv."""
    copies: dict[str, Path]
    """Files copied as they are: measure.js, measure.css, plotly.min.js and each paged run's record file."""
    home: str
    """The summary a site's own page shows for ``<!-- measure:summary -->`` (links under ``results/``)."""

    def pages(self) -> list[str]:
        return [p for p in self.texts if p.endswith(".md")]

    def contents(self) -> Iterator[tuple[str, bytes]]:
        """Every file's path and bytes, texts first (a copy is read only here)."""
        for path, text in self.texts.items():
            yield path, text.encode("utf-8")
        for path, source in self.copies.items():
            yield path, source.read_bytes()


NAV_PAGES = tuple(p.path for p in PAGES)
"""The pages a nav lists, in order; run, month and machine pages are linked from them."""


def site_source(
    results: Path,
    templates: Path = TEMPLATES,
    cache: Path | SummaryCache | None = None,
    missing_ok: bool = False,
    reference_machine: str | None = None,
) -> SiteSource:
    """The whole site source of a results tree (see :func:`measure.site.render.render_results` for the arguments)."""
    rendered, metrics, home, downloads = render_results(
        results, templates, prefix="", cache=cache, missing_ok=missing_ok, reference_machine=reference_machine
    )
    texts = {path: with_assets(path, text) if path.endswith(".md") else text for path, text in rendered.items()}
    texts[METRICS] = metrics
    return SiteSource(texts=texts, copies={**asset_sources(), **downloads}, home=home)
