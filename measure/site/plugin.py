"""The mkdocs plugin: RESULTS pages generated from the records at build time, never written into docs/.

It brings everything the pages need, so a site needs only ``theme: material`` and
``plugins: [search, measure]``: the templates (inside the installed package),
the chart script and stylesheet (added to ``extra_javascript`` / ``extra_css``
and served, with plotly.min.js, from the site itself), and the nav section for
the pages of :data:`render.PAGES` (unless the site's own nav lists them).
``on_files`` adds every page as ``File.generated`` (mkdocs >= 1.6), plus
``metrics.json``; ``on_serve`` watches the results folder, so a new record shows
up in an open ``mkdocs serve`` tab.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from mkdocs.config import config_options as c
from mkdocs.config.base import Config
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin
from mkdocs.structure.files import File, Files, InclusionLevel, file_sort_key
from mkdocs.utils import nest_paths

from measure.errors import MeasureError, SettingError
from measure.site.render import PAGES, PREFIX, TEMPLATES, render_results

ASSETS = Path(__file__).resolve().parent / "assets"
"""The chart script and stylesheet, shipped inside the package."""
PLOTLY_JS = "assets/javascripts/plotly.min.js"
SCRIPTS = ("assets/javascripts/measure.js",)
"""The script that draws every figure; it fetches plotly.js (served beside it) only on pages with a chart."""
STYLES = ("assets/stylesheets/measure.css",)
MARKER = "<!-- measure:summary -->"
"""Where a site's own page (Home) gets the summary of its records."""


def plotly_js() -> Path:
    """The plotly.min.js the plotly package ships: the site loads it locally, never from a CDN."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise PluginError(f"{path}: plotly.min.js not found in the installed plotly package")
    return path


def _asset_sources() -> dict[str, Path]:
    """Site path -> the file it is served from."""
    return {PLOTLY_JS: plotly_js()} | {uri: ASSETS / PurePosixPath(uri).name for uri in (*SCRIPTS, *STYLES)}


def _nav_paths(item: Any) -> Iterator[str]:
    """Every page path a nav (mkdocs' nested lists and ``{title: path}`` dicts) lists."""
    if isinstance(item, str):
        yield PurePosixPath(item).as_posix()
    elif isinstance(item, list):
        for child in item:
            yield from _nav_paths(child)
    elif isinstance(item, dict):
        for child in item.values():
            yield from _nav_paths(child)


class MeasureConfig(Config):
    results = c.Type(str, default="results")
    """Results tree (``<machine-id>/<run-id>.json``), relative to mkdocs.yml; env MEASURE_RESULTS overrides.

    Missing, it is a build error, except this default ``results`` (a fresh checkout's site says "no run")."""
    templates = c.Type(str, default="")
    """A page templates folder that replaces measure's, relative to mkdocs.yml (default: the installed ones)."""
    prefix = c.Type(str, default=PREFIX)
    """Where the pages go in the site."""
    cache_dir = c.Type(str, default=".cache/measure")
    """Per-record summary cache, relative to mkdocs.yml (keep it between CI runs); env MEASURE_CACHE overrides,
    and an empty value keeps summaries in memory for one build only."""

    section = c.Type(str, default="Results")
    """Title of the nav section that holds the pages; empty puts them at the nav's top level."""
    reference_machine = c.Type(str, default="")
    """The machine id the Overview, Wall-clock, Framing parity and Methods answer for (the Summary adds a row per
    other machine). Empty: the machine with the most complete records, a tie going to the first id in sort order."""


class MeasurePlugin(BasePlugin[MeasureConfig]):
    _home = ""

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

    def on_config(self, config):
        if not config.site_url and os.environ.get("MEASURE_SITE_URL"):  # what the reusable workflow deploys to
            config.site_url = os.environ["MEASURE_SITE_URL"].rstrip("/") + "/"
        scripts = {str(s) for s in config.extra_javascript}
        config.extra_javascript.extend(uri for uri in SCRIPTS if uri not in scripts)
        config.extra_css.extend(uri for uri in STYLES if uri not in config.extra_css)
        return config

    def _setting(self, config, name: str, resolved: Path | None = None) -> str:
        """How an error names one of the plugin's settings: the config file and the option (or the env var that
        overrides it), and the folder it resolved to where that is not what was written."""
        env = "MEASURE_RESULTS" if name == "results" else ""
        if env and os.environ.get(env):
            value = os.environ[env]
            where = f"{env}={value}"
        else:
            value = getattr(self.config, name)
            where = f"{config.config_file_path}: plugins.measure.{name} = {value!r}"
        if resolved is not None and str(resolved) != value:
            where += f" ({resolved})"
        return where

    def on_files(self, files: Files, config) -> Files:
        results, templates = self._dirs(config)
        # Only the configured default may be missing (a fresh checkout before its first run); a results
        # folder named by MEASURE_RESULTS or by mkdocs.yml that does not exist is a typo, never an empty site.
        explicit = bool(os.environ.get("MEASURE_RESULTS")) or self.config.results != "results"
        if (explicit or results.exists()) and not results.is_dir():
            what = "is not a folder" if results.exists() else "no such folder"
            raise PluginError(
                f"measure: {self._setting(config, 'results', results)}: {what}; "
                "expected a results tree of <machine-id>/<run-id>.json"
            )
        if self.config.templates and not (templates / "overview.md.j2").is_file():
            raise PluginError(
                f"measure: {self._setting(config, 'templates', templates)}: no measure page templates "
                "(expected overview.md.j2 and the others)"
            )
        try:
            pages, metrics, self._home = render_results(
                results,
                templates,
                self.config.prefix,
                self._cache(config),
                missing_ok=not explicit,
                reference_machine=self.config.reference_machine or None,
            )
        except SettingError as exc:
            where = self._setting(config, exc.setting) if exc.setting in self.config else exc.setting
            raise PluginError(f"measure: {where}: {exc.problem}") from exc
        except MeasureError as exc:
            raise PluginError(f"measure: {exc}") from exc
        fixed = {self._uri(p.path) for p in PAGES}
        for path, text in pages.items():
            inclusion = InclusionLevel.UNDEFINED if path in fixed else InclusionLevel.NOT_IN_NAV  # runs: linked
            files.append(File.generated(config, path, content=text, inclusion=inclusion))
        for uri, source in _asset_sources().items():
            files.append(File.generated(config, uri, abs_src_path=str(source)))
        files.append(File.generated(config, "metrics.json", content=metrics))
        config["nav"] = self._nav(config["nav"], files, fixed)
        return files

    def on_page_markdown(self, markdown: str, page, config, files) -> str:
        """The site's own pages may say what the records hold: ``<!-- measure:summary -->`` becomes that summary,
        counted from the records at build time (a home page never states a number typed by hand)."""
        if MARKER not in markdown:
            return markdown
        depth = page.file.src_uri.count("/")
        prefix = "../" * depth + self.config.prefix + "/"
        return markdown.replace(MARKER, self._home.replace("](results/", f"]({prefix}"))

    def _uri(self, path: str) -> str:
        return PurePosixPath(self.config.prefix, path).as_posix()

    def _nav(self, nav: list | None, files: Files, ours: set[str]) -> list:
        """The site's nav with measure's pages added, once; a nav that lists any of them is left as written."""
        if nav is None:  # what mkdocs would make of the site's own pages, as it does for a site without a nav
            theirs = sorted(files.documentation_pages(), key=file_sort_key)
            nav = nest_paths(f.src_uri for f in theirs if f.inclusion.is_in_nav() and f.src_uri not in ours)
        elif ours & set(_nav_paths(nav)):
            return nav
        entries = [{p.title: self._uri(p.path)} for p in PAGES]
        return [*nav, {self.config.section: entries}] if self.config.section else [*nav, *entries]

    def on_serve(self, server, config, builder):
        results, templates = self._dirs(config)
        results.mkdir(parents=True, exist_ok=True)
        server.watch(str(results))
        server.watch(str(templates))
        return server
