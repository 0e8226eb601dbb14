"""Measure two artifact sets (BASE and NEW suite configs) in one job, repeats paired; write two records.

Both configs must name the same tiers and speculative pairs. Each repeat times
every case on both sides, on fresh sessions, the two sides decoding each golden
row back to back in alternating order; ``measure compare BASE NEW`` then judges them paired by repeat.
Prints the two records' paths (BASE, then NEW), one a line. The records go to
``--out`` (default ``results-ab``), never into the published results tree unless
asked: two artifact sets measured in one job are not a point of the history.
The cost profile is off unless ``--profile``: it is not paired and takes longer
than the paired passes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", type=Path, metavar="BASE_CONFIG", help="the baseline's suite config (TOML)")
    p.add_argument(
        "new", type=Path, metavar="NEW_CONFIG", help="the changed suite config; its wall-clock settings rule"
    )
    p.add_argument("--out", type=Path, default=Path("results-ab"), help="where the two records go (default results-ab)")
    p.add_argument("--repeats", type=int, default=None, help="timed passes per case and side (default NEW's repeats)")
    p.add_argument("--rows", type=int, default=None, help="decode only the first N golden rows")
    p.add_argument("--profile", action="store_true", help="also each side's cost profile, after the paired passes")


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from measure.commands.progress import progress_bar
    from measure.errors import MeasureError
    from measure.suites.config import load_config
    from measure.suites.paired import run_paired

    base, new = load_config(args.base), load_config(args.new)
    if args.repeats is not None:
        if args.repeats < 2:
            raise MeasureError(f"--repeats {args.repeats}: expected at least 2 (a paired test needs two differences)")
        new = replace(new, wallclock=replace(new.wallclock, repeats=args.repeats))
    if args.rows is not None and args.rows < 1:
        raise MeasureError(f"--rows {args.rows}: expected at least 1")
    bar, update = progress_bar()
    call = (base, new, args.out)
    options = {"argv": sys.argv, "progress": update, "rows": args.rows, "profile": args.profile}
    if bar is not None:
        with bar:
            paths = run_paired(*call, **options)
    else:
        paths = run_paired(*call, **options)
    for path in paths:
        print(path)
    return 0
