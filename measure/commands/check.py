"""Exit 1 when a policy gate fails in the newest complete record of each machine (a gate failure is a bug)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", type=Path, metavar="FILE", help="records to check (default: --results)")
    p.add_argument("--results", type=Path, default=Path("results"), help="results tree (default ./results)")


def run(args: argparse.Namespace) -> int:
    from measure.errors import MeasureError
    from measure.record import load_record, record_paths
    from measure.verdicts import failed_gates, verdicts

    paths = list(args.files)
    if not paths:
        newest: dict[str, Path] = {}
        for path in record_paths(args.results):
            doc = load_record(path)
            if doc["complete"]:
                newest[doc["machine_id"]] = path
        paths = list(newest.values())
        if not paths:
            raise MeasureError(f"{args.results}: no complete run records (expected <machine-id>/<run-id>.json)")
    failures = 0
    for path in paths:
        doc = load_record(path)
        found = verdicts(doc)
        bad = [v for v in failed_gates(found) if v.outcome not in ("success", "info")]
        for v in bad:
            print(f"FAIL {path}: {v.question} {v.subject}: {v.answer} (rule: {v.rule})")
        if not bad:
            print(f"ok {path}: {len(found)} verdicts, no gate failed")
        failures += len(bad)
    return 1 if failures else 0
