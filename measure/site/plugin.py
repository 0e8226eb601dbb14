"""The mkdocs plugin: RESULTS pages generated from the records at build time, never written into docs/.

``on_files`` adds every page as ``File.generated`` (mkdocs >= 1.6), plus the
local plotly.min.js and ``metrics.json``; ``on_serve`` watches the results
folder, so a new record shows up in an open ``mkdocs serve`` tab.
"""

from __future__ import annotations

import os
from pathlib import Path

from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File, Files

from measure.errors import MeasureError
from measure.site.render import PREFIX, TEMPLATES, render_results

PLOTLY_JS = "assets/javascripts/plotly.min.js"


def plotly_js() -> Path:
    """The plotly.min.js the plotly package ships: the site loads it locally, never from a CDN."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise PluginError(f"{path}: plotly.min.js not found in the installed plotly package")
    return path


class MeasureConfig(Config):
    results = c.Type(str, default="results")
    """Results tree (``<machine-id>/<run-id>.json``), relative to mkdocs.yml; env MEASURE_RESULTS overrides.

    Missing, it is a build error, except this default ``results`` (a fresh checkout's site says "no run")."""
    templates = c.Type(str, default="")
    """Page templates folder, relative to mkdocs.yml (default: measure's templates/)."""
    prefix = c.Type(str, default=PREFIX)
    """Where the pages go in the site."""
    cache_dir = c.Type(str, default=".cache/measure")
    """Per-record summary cache, relative to mkdocs.yml (keep it between CI runs); env MEASURE_CACHE overrides,
    and an empty value keeps summaries in memory for one build only."""


class MeasurePlugin(BasePlugin[MeasureConfig]):
    def _dirs(self, config) -> tuple[Path, Path]:
        base = Path(config.config_file_path).resolve().parent
        results = Path(os.environ.get("MEASURE_RESULTS") or self.config.results)
        templates = Path(self.config.templates) if self.config.templates else TEMPLATES
        return (
            results if results.is_absolute() else base / results,
            templates if templates.is_absolute() else base / templates,
        )

    def _cache(self, config) -> Path | None:
        folder = os.environ.get("MEASURE_CACHE", self.config.cache_dir)
        if not folder:
            return None
        path = Path(folder)
        return path if path.is_absolute() else Path(config.config_file_path).resolve().parent / path

    def on_files(self, files: Files, config) -> Files:
        results, templates = self._dirs(config)
        # Only the configured default may be missing (a fresh checkout before its first run); a results
        # folder named by MEASURE_RESULTS or by mkdocs.yml that does not exist is a typo, never an empty site.
        explicit = bool(os.environ.get("MEASURE_RESULTS")) or self.config.results != "results"
        try:
            pages, metrics = render_results(
                results, templates, self.config.prefix, self._cache(config), missing_ok=not explicit
            )
        except MeasureError as exc:
            raise PluginError(f"measure: {exc}") from exc
        for path, text in pages.items():
            files.append(File.generated(config, path, content=text))
        files.append(File.generated(config, PLOTLY_JS, abs_src_path=str(plotly_js())))
        files.append(File.generated(config, "metrics.json", content=metrics))
        return files

    def on_serve(self, server, config, builder):
        results, templates = self._dirs(config)
        results.mkdir(parents=True, exist_ok=True)
        server.watch(str(results))
        server.watch(str(templates))
        return server
