"""The site's fixed pages and where they go: what the nav lists and ``measure init`` writes into a site config.

Kept apart from :mod:`measure.site.render` (Jinja, the analysis) so the generator configs and the scaffold read
the page list without importing either.
"""

from __future__ import annotations

from dataclasses import dataclass

PREFIX = "results"
"""The folder of the docs the pages go in (``docs/results``)."""


@dataclass(frozen=True)
class Page:
    """One fixed page of the site: the plugin builds both the files and the nav from these."""

    path: str
    """Where it goes, relative to the prefix."""
    template: str
    context: str
    """The :class:`Site` attribute the template receives as ``page``."""
    title: str
    """Its nav title."""


PAGES = (
    Page("index.md", "overview.md.j2", "overview", "Overview"),
    Page("wallclock.md", "wallclock.md.j2", "wallclock", "Wall-clock"),
    Page("framing.md", "framing.md.j2", "framing", "Framing parity"),
    Page("verdicts.md", "verdicts.md.j2", "verdicts", "Verdicts"),
    Page("history.md", "history.md.j2", "history", "History"),
    Page("machines.md", "machines.md.j2", "machines", "Machines"),
    Page("methods.md", "methods.md.j2", "methods", "Methods"),
    Page("runs/index.md", "runs.md.j2", "runs_index", "Runs"),
)
"""The site's fixed pages, in nav order; each run adds ``runs/<slug>.md`` (kept out of the nav)."""
