"""Exit 1 when a policy gate fails in each machine's current results (a gate failure is a bug).

A machine's current results are what its pages show: the newest complete record of each part (wall-clock,
cost profile, framing, instruction counts), so after a wall-clock-only run the framing gates are still those
of the newest framing result, not skipped.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", type=Path, metavar="FILE", help="records to check (default: --results)")
    p.add_argument("--results", type=Path, default=Path("results"), help="results tree (default ./results)")


def run(args: argparse.Namespace) -> int:
    from measure.analysis.current import compose
    from measure.analysis.rules import failed_gates, verdicts
    from measure.errors import MeasureError
    from measure.record.io import load
    from measure.record.model import Record
    from measure.record.tree import current_parts, entries
    from measure.terminal import clean

    if args.files:
        checked = [(str(path), load(path)) for path in args.files]
    else:
        loaded: dict[Path, Record] = {}
        checked = []
        for parts in current_parts(entries(args.results)).values():
            state = compose({p: loaded.setdefault(e.path, load(e.path)) for p, e in parts.items()})
            checked.append((" + ".join(dict.fromkeys(r.source for r in state.sources.values())), state.record))
        if not checked:
            raise MeasureError(f"{args.results}: no complete run records (expected <machine-id>/<run-id>.json)")
    failures = 0
    for where, r in checked:
        found = verdicts(r)
        bad = [v for v in failed_gates(found) if v.outcome not in ("success", "info")]
        for v in bad:
            print(clean(f"FAIL {where}: {v.question} {v.subject}: {v.answer} (rule: {v.rule})"))
        if not bad:
            print(clean(f"ok {where}: {len(found)} verdicts, no gate failed"))
        failures += len(bad)
    return 1 if failures else 0
