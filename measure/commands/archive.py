"""Fold each machine's past months of records into one month archive apiece: what the runs share stored once.

Every month before the tree's newest is archived, except each machine's newest runs (``--keep``), which stay
their own files. Every verb reads an archived record as ``<machine-id>/<YYYY-MM>.archive.json.gz/<run-id>.json``;
its bytes, sha256 and cached summary are the same as before. Exit 0 (nothing due is not an error).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    from measure.record.months import KEEP

    p.add_argument("results", type=Path, metavar="RESULTS_DIR", help="the results tree (a results branch's results/)")
    p.add_argument(
        "--keep", type=int, default=KEEP, help=f"each machine's newest runs left as their own files (default {KEEP})"
    )


def run(args: argparse.Namespace) -> int:
    from measure.errors import MeasureError
    from measure.record.months import archive_months
    from measure.terminal import clean

    if args.keep < 0:
        raise MeasureError(f"--keep: expected 0 or more runs, got {args.keep}")
    done = archive_months(args.results, args.keep)
    for a in done:
        print(
            clean(
                f"archived {a.added} record(s) into {a.path}: {a.records} in all, "
                f"{a.before / 1e6:.1f} MB -> {a.after / 1e6:.1f} MB"
            )
        )
    if not done:
        print(clean(f"{args.results}: nothing to archive (no past month with runs beyond each machine's newest)"))
    return 0
