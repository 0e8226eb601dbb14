"""Start measuring a model repository: a suite config from its tier folders, golden rows, the site and the workflow.

Writes only files that do not exist yet (measure.toml, golden.jsonl, the site config of the
site generator it finds or ``--site`` names: mkdocs.yml, properdocs.yml or zensical.toml,
docs/index.md, .github/workflows/measure.yml), prints what it wrote and what to run next;
run twice, the second run changes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "tiers",
        type=Path,
        nargs="*",
        metavar="TIER_DIR",
        help="tier folders (default: every folder with a complete graph layout, up to 3 levels down)",
    )
    p.add_argument("--golden", type=Path, default=None, help="your golden rows (JSONL); default: write a template")
    p.add_argument(
        "--site",
        choices=("zensical", "properdocs", "mkdocs"),
        default=None,
        help="the site generator (default: the one whose config is there, else zensical or properdocs if "
        "installed, else mkdocs)",
    )


def run(args: argparse.Namespace) -> int:
    from measure.site.generators import HOSTS, detect, host
    from measure.tools.scaffold import CONFIG, plan, write_new

    root = Path.cwd()
    site = host(args.site) if args.site else detect(root)
    planned, notes = plan(root, args.tiers, args.golden, site)
    written = write_new(planned)
    for w in written:
        where = w.path.relative_to(root).as_posix()
        print(f"{'wrote' if w.wrote else 'kept '}  {where}  ({w.why})")
    for note in notes:
        print(f"note   {note}")
    if not any(w.wrote for w in written):
        print("nothing written: every file measure init writes is already there")
    configured = any(p.path.exists() and p.path.name in {h.config for h in HOSTS.values()} for p in planned)
    build = f" && {site.build}" if configured else ""
    print(f"next   measure run --config {CONFIG} && measure check{build}")
    if configured:
        print(f"serve  {site.serve}")
    return 0
