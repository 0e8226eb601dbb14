"""Exit 1 when a policy gate fails in the newest complete record of each machine (a gate failure is a bug)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", type=Path, metavar="FILE", help="records to check (default: --results)")
    p.add_argument("--results", type=Path, default=Path("results"), help="results tree (default ./results)")


def run(args: argparse.Namespace) -> int:
    from measure.errors import MeasureError
    from measure.record import load
    from measure.terminal import clean
    from measure.tree import entries, newest_per_machine
    from measure.verdicts import failed_gates, verdicts

    if args.files:
        records = [load(path) for path in args.files]
    else:
        records = [load(e.path) for e in newest_per_machine(entries(args.results)).values()]
        if not records:
            raise MeasureError(f"{args.results}: no complete run records (expected <machine-id>/<run-id>.json)")
    failures = 0
    for r in records:
        found = verdicts(r)
        bad = [v for v in failed_gates(found) if v.outcome not in ("success", "info")]
        for v in bad:
            print(clean(f"FAIL {r.source}: {v.question} {v.subject}: {v.answer} (rule: {v.rule})"))
        if not bad:
            print(clean(f"ok {r.source}: {len(found)} verdicts, no gate failed"))
        failures += len(bad)
    return 1 if failures else 0
