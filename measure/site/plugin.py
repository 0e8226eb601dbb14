"""The mkdocs plugin (mkdocs 1.6 and ProperDocs): the site source of :mod:`measure.site.source`, generated
at build time and never written into docs/.

A thin wrapper: the pages, their data and their assets are the files ``measure render``
writes for Zensical, handed to mkdocs as ``File.generated`` under the ``prefix`` folder,
so every host builds the same pages. What only a host can do stays here: the nav section
for the pages of :data:`nav.PAGES` (unless the site's own nav lists them), the summary
for ``<!-- measure:summary -->`` in the site's own pages, the Markdown extensions the
pages need, and ``on_serve`` watching the results folder, so a new record shows up in an
open ``mkdocs serve`` tab.
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
from measure.site.nav import PAGES, PREFIX
from measure.site.render import TEMPLATES, bytecode_cache
from measure.site.source import SiteSource, site_source

MARKER = "<!-- measure:summary -->"
"""Where a site's own page (Home) gets the summary of its records."""
EXTENSIONS = ("attr_list", "admonition", "tables", "toc")
"""The Markdown extensions the pages are written for (anchors and the asset block, notes, tables, headings)."""


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
        names = {
            str(e).rsplit(".", 1)[-1] if str(e).startswith("markdown.extensions.") else str(e)
            for e in config.markdown_extensions
        }
        config.markdown_extensions.extend(e for e in EXTENSIONS if e not in names)
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

    def _check_folders(self, config, results: Path, templates: Path) -> bool:
        """Whether the results folder was named (then it must exist); a templates folder must hold the pages.

        Only the configured default may be missing (a fresh checkout before its first run); a results folder
        named by MEASURE_RESULTS or by mkdocs.yml that does not exist is a typo, never an empty site."""
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
        return explicit

    def _source(self, config, results: Path, templates: Path, explicit: bool) -> SiteSource:
        """The site source, its errors named by the setting they come from."""
        try:
            return site_source(
                results,
                templates,
                self._cache(config),
                missing_ok=not explicit,
                reference_machine=self.config.reference_machine or None,
            )
        except SettingError as exc:
            where = self._setting(config, exc.setting) if exc.setting in self.config else exc.setting
            raise PluginError(f"measure: {where}: {exc.problem}") from exc
        except MeasureError as exc:
            raise PluginError(f"measure: {exc}") from exc

    def on_files(self, files: Files, config) -> Files:
        results, templates = self._dirs(config)
        explicit = self._check_folders(config, results, templates)
        source = self._source(config, results, templates, explicit)
        self._home = source.home
        theirs = [f for f in (files.get_file_from_path(self._uri(p)) for p in (*source.texts, *source.copies)) if f]
        if theirs:  # never replace a file of the docs folder silently (a folder measure render wrote, or the user's)
            raise PluginError(
                f"measure: {theirs[0].abs_src_path}: the plugin generates this file itself; build a folder that "
                "`measure render` wrote without the plugin, or move the file away"
            )
        fixed = {self._uri(p.path) for p in PAGES}
        for path, text in source.texts.items():
            uri = self._uri(path)
            linked = path.endswith(".md") and uri not in fixed  # run, month and machine pages: linked, not in the nav
            inclusion = InclusionLevel.NOT_IN_NAV if linked else InclusionLevel.UNDEFINED
            files.append(File.generated(config, uri, content=text, inclusion=inclusion))
        for path, src in source.copies.items():
            files.append(File.generated(config, self._uri(path), abs_src_path=str(src)))
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

    def on_env(self, env, config, files):
        """The theme's templates compiled once, not on every build (see :func:`render.bytecode_cache`)."""
        if env.bytecode_cache is None:
            env.bytecode_cache = bytecode_cache()
        return env

    def on_serve(self, server, config, builder):
        results, templates = self._dirs(config)
        results.mkdir(parents=True, exist_ok=True)
        server.watch(str(results))
        server.watch(str(templates))
        return server
