"""The hosts: the site generators that build the RESULTS pages, and the site config ``measure init`` writes for each.

mkdocs 1.6 and ProperDocs (a fork of it) run measure's plugin, which generates the pages
at build time; Zensical runs no mkdocs plugin, so ``measure render`` writes the pages into
the docs folder first and the config's nav lists them. Each host is named by the config
file it reads first, which is how the publish workflow tells them apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from measure.errors import MeasureError
from measure.site.nav import PAGES, PREFIX


@dataclass(frozen=True)
class Host:
    """One site generator: the config it reads, how it builds and previews, whether it runs the plugin."""

    name: str
    config: str
    """The site config it reads first (Zensical reads mkdocs.yml too, ProperDocs mkdocs.yml as a legacy name)."""
    build: str
    """The command that builds the site from the records under results/."""
    serve: str
    """The preview that shows a new record without a restart."""
    plugin: bool
    """Whether it runs measure's mkdocs plugin (else ``measure render`` writes the pages first)."""


RENDER = f"measure render --out docs/{PREFIX}"
HOSTS = {
    "zensical": Host(
        "zensical",
        "zensical.toml",
        f"{RENDER} && zensical build --strict",
        f"{RENDER} --watch & zensical serve",
        plugin=False,
    ),
    "properdocs": Host("properdocs", "properdocs.yml", "properdocs build --strict", "properdocs serve", plugin=True),
    "mkdocs": Host("mkdocs", "mkdocs.yml", "mkdocs build --strict", "mkdocs serve", plugin=True),
}
"""In the order ``measure init`` prefers them when the repository has no site config: Material's successor first."""


def host(name: str) -> Host:
    if name not in HOSTS:
        raise MeasureError(f"--site {name}: expected one of {', '.join(HOSTS)}")
    return HOSTS[name]


def detect(root: Path) -> Host:
    """The host of the site config already in ``root``, else the first of :data:`HOSTS` that is installed."""
    for h in HOSTS.values():
        if (root / h.config).exists():
            return h
    return next((h for h in HOSTS.values() if h.name == "mkdocs" or find_spec(h.name) is not None), HOSTS["mkdocs"])


PLUGIN_BLOCK = """plugins:
  - search
  - measure:
      results: results
"""
MARKDOWN = """markdown_extensions:
  - admonition
  - attr_list
  - tables
  - toc
"""
"""What the pages are written for (the plugin adds any that a config leaves out)."""


def yaml_config(h: Host, site_name: str) -> str:
    """mkdocs.yml or properdocs.yml: the theme and the plugin, which brings the pages and their nav section."""
    return (
        f"# The RESULTS site: `{h.build}` turns every record under results/ into pages\n"
        f"# (measure's plugin brings the pages, their nav section and the charts); `{h.serve}` previews it.\n"
        f"site_name: {json.dumps(site_name, ensure_ascii=False)}\n"
        "theme:\n  name: material\n  font: false  # no web fonts: the site works offline\n" + PLUGIN_BLOCK + MARKDOWN
    )


def nav_toml(section: str = "Results") -> str:
    """The nav of a zensical.toml: Home, then a section listing measure's pages."""
    entries = "".join(f"  {{ {json.dumps(p.title)} = {json.dumps(f'{PREFIX}/{p.path}')} }},\n" for p in PAGES)
    return f'[[project.nav]]\nHome = "index.md"\n\n[[project.nav]]\n{json.dumps(section)} = [\n{entries}]\n'


def nav_yaml(section: str = "Results") -> str:
    """The same nav for a mkdocs.yml that Zensical reads."""
    entries = "".join(f"      - {json.dumps(p.title)}: {PREFIX}/{p.path}\n" for p in PAGES)
    return f"nav:\n  - Home: index.md\n  - {json.dumps(section)}:\n{entries}"


_THEME = """
[project.theme]
font = false  # no web fonts: the site works offline

[[project.theme.palette]]
media = "(prefers-color-scheme: light)"
scheme = "default"
toggle = { icon = "material/brightness-7", name = "Switch to dark mode" }

[[project.theme.palette]]
media = "(prefers-color-scheme: dark)"
scheme = "slate"
toggle = { icon = "material/brightness-4", name = "Switch to light mode" }
"""


def zensical_toml(site_name: str) -> str:
    """zensical.toml: the pages ``measure render`` wrote into docs/results, listed in the nav; light and dark."""
    h = HOSTS["zensical"]
    return (
        f"# The RESULTS site, built by Zensical, which runs no mkdocs plugin: `{RENDER}` writes measure's\n"
        f"# pages (and their charts' assets) into docs/{PREFIX}/, then `zensical build --strict` builds site/.\n"
        f"# Preview while records arrive: `{h.serve}`.\n"
        f"[project]\nsite_name = {json.dumps(site_name, ensure_ascii=False)}\n"
        'docs_dir = "docs"\nsite_dir = "site"\n\n' + nav_toml() + _THEME
    )


def site_config(h: Host, site_name: str) -> str:
    return zensical_toml(site_name) if h.name == "zensical" else yaml_config(h, site_name)
