"""Merge run records from many folders into one results tree: duplicates once, conflicts side by side.

Exit 0 when everything merged cleanly, 1 when a conflict or an invalid file
was reported (what was valid is merged all the same). With ``--shards`` the
sources are the shard records of one split ``measure explore --shard I/N``:
they are joined into one record (:mod:`measure.record.shards`), merged like
any other; anything that keeps them from being one search is one line, exit 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from measure.record.merge import MergeReport


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="+", type=Path, metavar="SRC", help="record files or folders (searched deeply)")
    p.add_argument("--into", type=Path, required=True, metavar="RESULTS_DIR", help="the results tree to merge into")
    p.add_argument(
        "--gzip",
        action="store_true",
        help="store new records as <run-id>.json.gz (what a results branch keeps: about a quarter of the bytes)",
    )
    p.add_argument(
        "--shards",
        action="store_true",
        help="the sources are the N shard records of one measure explore --shard I/N search: join them into one "
        "record (each recipe's ratio paired with the baseline timed in its own shard) and merge that",
    )


def run(args: argparse.Namespace) -> int:
    import tempfile

    from measure.record.merge import merge

    if not args.shards:
        return _report(merge(list(args.sources), args.into, gzipped=args.gzip), args.into)
    with tempfile.TemporaryDirectory(prefix="measure-join-") as scratch:
        joined = _joined(list(args.sources), args.into, Path(scratch))
        return _report(merge([joined], args.into, gzipped=args.gzip), args.into)


def _joined(sources: list[Path], into: Path, scratch: Path) -> Path:
    """The shard records under ``sources`` joined into one record file in ``scratch``, filed as a tree files it."""
    from measure.record.io import record_name, write_record
    from measure.record.merge import record_files
    from measure.record.shards import join_files

    doc = join_files(record_files(sources, into))
    return write_record(scratch / doc["machine_id"] / record_name(doc["run_id"]), doc)


def _report(report: MergeReport, into: Path) -> int:
    from measure.terminal import clean

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
        f"merged into {into}: {len(report.added)} added, {len(report.duplicates)} duplicate(s), "
        f"{len(report.conflicts)} conflict(s), {len(report.invalid)} invalid"
    )
    return 1 if report.conflicts or report.invalid else 0
