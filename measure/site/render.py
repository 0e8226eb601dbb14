"""Jinja rendering of the page contexts into Markdown pages (and metrics.json).

``StrictUndefined`` makes a missing field an error, and ``finalize`` refuses
any plain ``str`` reaching output: only escaped :class:`Md` text and numbers
can be printed, so forgetting to escape is a build failure, not an XSS.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, NamedTuple

import jinja2
from markupsafe import Markup

from measure.errors import MeasureError
from measure.results.cache import SummaryCache
from measure.results.reader import Loaded, load_results
from measure.site.build import Site, build_site
from measure.site.nav import PAGES, PREFIX
from measure.writing import finite, json_text

PACKAGED_TEMPLATES = Path(__file__).resolve().parent / "templates"
"""Where a wheel carries the templates: setup.py's build step copies the top-level templates/ here."""
CHECKOUT_TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"
"""The source of the templates: templates/ in a checkout (what an editable install reads)."""
TEMPLATES = PACKAGED_TEMPLATES if PACKAGED_TEMPLATES.is_dir() else CHECKOUT_TEMPLATES
"""The default templates: the installed copy, else the checkout's (never site-packages/templates)."""


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup):  # Md from the context, or a macro's output (itself built from Md)
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise jinja2.TemplateError(f"unescaped {type(value).__name__} reached a template: {str(value)[:60]!r}")


def environment(templates: Path = TEMPLATES) -> jinja2.Environment:
    if not (templates / "overview.md.j2").is_file():
        raise MeasureError(f"{templates}: no measure page templates (expected overview.md.j2 and the others)")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        undefined=jinja2.StrictUndefined,
        autoescape=True,  # with finalize: only Md (escaped for Markdown and HTML) and numbers get through
        finalize=_finalize,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        bytecode_cache=bytecode_cache(),
    )
    return env


class _Compiled(jinja2.FileSystemBytecodeCache):
    """Jinja's per-user folder of compiled templates; a write that fails costs the next build a compile, no more."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with suppress(OSError):
            super().dump_bytecode(bucket)


def bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between builds, as ``__pycache__`` keeps modules: jinja's own folder for this user
    in the temp directory (made 0700 and checked to be theirs), keyed by each template's source. Otherwise every
    build compiles measure's templates and the theme's fifty again, about a tenth of a warm build of 1,000 runs.
    None where jinja finds no safe folder."""
    try:
        return _Compiled()
    except (OSError, RuntimeError):
        return None


RUN_PAGE = "run.md.j2"


def render_site(site: Site, env: jinja2.Environment, prefix: str = PREFIX) -> dict[str, str]:
    """Page path (under ``prefix``; ``""``: relative to the folder of pages) -> Markdown, and the data files."""

    def at(path: str) -> str:
        return f"{prefix}/{path}" if prefix else path

    try:
        pages = {at(p.path): env.get_template(p.template).render(page=getattr(site, p.context)) for p in PAGES}
        machine_tpl = env.get_template("history-machine.md.j2")
        for slug, page in site.history_pages.items():
            pages[at(f"history/{slug}.md")] = machine_tpl.render(page=page)
        month_tpl = env.get_template("runs-month.md.j2")
        for slug, month in site.months.items():
            pages[at(f"runs/{slug}.md")] = month_tpl.render(page=month)
        run_tpl = env.get_template(RUN_PAGE)
        for slug, run in site.runs:
            pages[at(f"runs/{slug}.md")] = run_tpl.render(page=run)
    except jinja2.TemplateError as exc:
        where = f" ({exc.filename}:{exc.lineno})" if isinstance(exc, jinja2.TemplateSyntaxError) else ""
        raise MeasureError(f"template error{where}: {exc}") from exc
    pages.update({at(path): text for path, text in site.files.items()})
    return pages


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a long history is read and judged; what it made is then frozen.

    A year of records is millions of small objects (summaries, verdicts, samples) that live for the whole build
    and hold no cycles; the collector would walk them all again every few thousand allocations, which made the
    build's cost grow faster than the history. Reference counting still frees everything as it goes. At the end
    they are moved out of the collector's sight (``gc.freeze``) rather than walked once more while still alive
    (1.6 s at 10,000 records); the next build, once the last one's objects are gone, gives the collector back what
    was frozen and collects first, so the few thousand objects in cycles a build leaves (imports, template
    caches) do not pile up over a long ``mkdocs serve``.
    """
    was = gc.isenabled()
    if was:
        gc.unfreeze()
        gc.collect()  # cheap here: the last build's history was freed with it; only its cycles remain
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.enable()


class Rendered(NamedTuple):
    pages: dict[str, str]
    """Path (under the prefix) -> text: the pages, and the data they offer (summary.csv)."""
    metrics: str
    """The metrics.json text."""
    home: str
    """The Home summary (Markdown, links under ``results/``)."""
    downloads: dict[str, Path]
    """Path (under the prefix) -> each paged run's record file, published as it is stored."""


def render_results(
    results: Path,
    templates: Path = TEMPLATES,
    prefix: str = PREFIX,
    cache: Path | SummaryCache | None = None,
    missing_ok: bool = False,
    reference_machine: str | None = None,
) -> Rendered:
    """Pages, the metrics.json text, the Home summary and the paged runs' record files of a results tree.

    ``cache``: the summary cache folder (None: summaries live for this build only), or a cache
    kept between renders. A missing results folder is an error unless ``missing_ok`` (the default
    ``results`` of a fresh checkout, before any run): then the pages say "no run".
    ``reference_machine``: the machine the Overview answers for (default: the most complete records).
    """
    store = cache if isinstance(cache, SummaryCache) else SummaryCache(cache)
    with _collector_paused():
        loaded = Loaded(results, [], {}) if missing_ok and not results.exists() else load_results(results, store)
        site = build_site(loaded, store, reference_machine)
    env = environment(templates)
    metrics = json_text(finite(site.metrics), "metrics.json", indent=2)
    try:
        home = env.get_template("home.md.j2").render(page=site.home)
    except jinja2.TemplateError as exc:
        raise MeasureError(f"template error: {exc}") from exc
    downloads = {f"{prefix}/{path}" if prefix else path: source for path, source in site.downloads.items()}
    return Rendered(render_site(site, env, prefix), metrics, home, downloads)
