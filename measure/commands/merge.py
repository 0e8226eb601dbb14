"""Merge run records from many folders into one results tree: duplicates once, conflicts side by side.

Exit 0 when everything merged cleanly, 1 when a conflict or an invalid file
was reported (what was valid is merged all the same).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", type=Path, metavar="SRC", help="record files or folders (searched deeply)")
    p.add_argument("--into", type=Path, required=True, metavar="RESULTS_DIR", help="the results tree to merge into")
    p.add_argument(
        "--gzip",
        action="store_true",
        help="store new records as <run-id>.json.gz (what a results branch keeps: about a quarter of the bytes)",
    )


def run(args: argparse.Namespace) -> int:
    from measure.record.merge import merge
    from measure.terminal import clean

    report = merge(list(args.sources), args.into, gzipped=args.gzip)
    for line in report.invalid:
        print(clean(f"invalid {line}"))
    for src, kept in report.conflicts:
        print(
            clean(
                f"conflict {src}: same run id as {kept.parent / kept.name.split('.conflict-')[0]}.json, "
                f"other content; kept as {kept}"
            )
        )
    print(
        f"merged into {args.into}: {len(report.added)} added, {len(report.duplicates)} duplicate(s), "
        f"{len(report.conflicts)} conflict(s), {len(report.invalid)} invalid"
    )
    return 1 if report.conflicts or report.invalid else 0
