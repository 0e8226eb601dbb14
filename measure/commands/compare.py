"""Compare two run records case by case: faster / slower / same / inconclusive, from the ratio's interval."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", type=Path, metavar="BASE", help="the baseline record")
    p.add_argument("new", type=Path, metavar="NEW", help="the record to judge")
    p.add_argument(
        "--fail-on",
        choices=["slower", "faster", "inconclusive"],
        action="append",
        default=[],
        help="exit 1 when any case has this outcome (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    from measure.errors import MeasureError
    from measure.policy import policy_from
    from measure.record import load_record
    from measure.verdicts import compare

    base, new = load_record(args.base), load_record(args.new)
    if base["golden"]["sha256"] != new["golden"]["sha256"]:
        raise MeasureError(f"{args.new}: golden rows differ from {args.base} (sha256); the runs are not comparable")
    tol = policy_from(new["config"].get("policy")).compare_tolerance
    rows = compare(base, new)
    if not rows:
        raise MeasureError(f"{args.new}: no wall-clock case in common with {args.base}")
    print(f"{'case':<30}{'new/base ms/token':>20}  {'95% CI':<18}outcome (same = within +/-{tol:.0%})")
    for c in rows:
        print(f"{c.case:<30}{c.ratio.value:>20.3f}  [{c.ratio.lo:.3f}, {c.ratio.hi:.3f}]  {c.outcome}")
    failing = [c for c in rows if c.outcome in args.fail_on]
    return 1 if failing else 0
