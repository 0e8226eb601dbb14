"""Write the RESULTS site source into a docs folder: for Zensical, or any generator that runs no mkdocs plugin.

The folder gets every page, metrics.json, summary.csv, the paged runs' records and the
assets the pages load themselves; ``--watch`` renders again whenever the records (or the
templates) change, for a generator's own serve to pick up. As with the plugin,
``MEASURE_RESULTS`` names another results tree, and only the default ``results`` may be
missing (a fresh checkout's pages say no run was recorded yet). Nothing is written outside
``--out`` unless ``--cache`` (or ``MEASURE_CACHE``) names a summary cache folder.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

DEFAULT_RESULTS = Path("results")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", type=Path, default=None, help="results tree (default $MEASURE_RESULTS, else ./results)")
    p.add_argument("--out", type=Path, required=True, help="folder of the pages, inside the docs (docs/results)")
    p.add_argument("--templates", type=Path, default=None, help="page templates (default: measure's templates/)")
    p.add_argument(
        "--reference-machine",
        default=None,
        metavar="ID",
        help="the machine the Overview answers for (default: the one with the most complete records)",
    )
    p.add_argument(
        "--cache", type=Path, default=None, help="per-record summary cache folder (default $MEASURE_CACHE, else none)"
    )
    p.add_argument("--watch", action="store_true", help="render again whenever the records change (Ctrl-C stops)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between two looks at the records (--watch)")


def _state(*folders: Path) -> tuple[tuple[str, int, int], ...]:
    """What a change to the records or templates changes: every file's path, size and modification time."""
    found = []
    for folder in folders:
        if folder.is_dir():
            for path in sorted(folder.rglob("*")):
                if path.is_file():
                    stat = path.stat()
                    found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def run(args: argparse.Namespace) -> int:
    from measure.errors import MeasureError, SettingError
    from measure.results.cache import SummaryCache
    from measure.site.output import write_site_source
    from measure.site.render import TEMPLATES
    from measure.site.source import site_source

    if args.out.exists() and not args.out.is_dir():
        raise MeasureError(f"{args.out}: --out is not a folder; expected a folder for the pages")
    if args.interval <= 0:
        raise MeasureError(f"--interval {args.interval}: expected a number of seconds above 0")
    named = args.results or (Path(os.environ["MEASURE_RESULTS"]) if os.environ.get("MEASURE_RESULTS") else None)
    results = named or DEFAULT_RESULTS
    templates = args.templates or TEMPLATES
    folder = args.cache or (Path(os.environ["MEASURE_CACHE"]) if os.environ.get("MEASURE_CACHE") else None)
    cache = SummaryCache(folder)  # kept between renders: a watched render analyses only the records that are new

    def render() -> None:
        try:
            source = site_source(
                results, templates, cache, missing_ok=named is None, reference_machine=args.reference_machine
            )
        except SettingError as exc:
            raise MeasureError(f"--reference-machine {args.reference_machine}: {exc.problem}") from exc
        print(write_site_source(source, args.out).describe(), flush=True)

    if not args.watch:
        render()
        return 0
    seen = _state(results, templates)
    render()
    print(f"watching {results} (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(args.interval)
            now = _state(results, templates)
            if now == seen:
                continue
            seen = now
            try:
                render()
            except MeasureError as exc:  # a record half-copied in, a bad one: say so and keep watching
                print(f"measure render: error: {exc}", flush=True)
    except KeyboardInterrupt:
        return 0
