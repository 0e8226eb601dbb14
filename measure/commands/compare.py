"""Compare two run records case by case: faster / slower / same / inconclusive, Holm-corrected over all cases.

A call needs the ratio past the tolerance band, the two runs' intervals apart,
and a corrected p-value below the policy's alpha; the policy is NEW's.
``--markdown FILE`` also writes the verdict table as Markdown (for a CI job summary).
"""

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
    p.add_argument("--tolerance", type=float, default=None, help="a calibrated band, used when wider than the policy's")
    p.add_argument("--markdown", type=Path, default=None, help="also write the table as Markdown to this file")


def _markdown(base: Path, new: Path, rows: list, failing: list) -> str:
    tol = rows[0].tolerance
    lines = [
        f"### measure compare: {len(rows)} cases, same = within ±{tol:.1%}",
        "",
        f"`{base.name}` → `{new.name}`; Holm-corrected over all cases.",
        "",
        "| case | base ms/token | new ms/token | new/base | 95% CI | outcome |",
        "|---|---|---|---|---|---|",
    ]
    for c in rows:
        lines.append(
            f"| `{c.case}` | {c.base.value:.4f} | {c.new.value:.4f} | {c.ratio.value:.3f} | "
            f"[{c.ratio.lo:.3f}, {c.ratio.hi:.3f}] | **{c.outcome}** |"
        )
    if failing:
        lines += ["", f"Gate failed: {', '.join(sorted({c.outcome for c in failing}))} in {len(failing)} case(s)."]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from measure.comparison import compare
    from measure.errors import MeasureError
    from measure.record import load_record

    base, new = load_record(args.base), load_record(args.new)
    if base["golden"]["sha256"] != new["golden"]["sha256"]:
        raise MeasureError(f"{args.new}: golden rows differ from {args.base} (sha256); the runs are not comparable")
    rows = compare(base, new, tolerance=args.tolerance)
    if not rows:
        raise MeasureError(f"{args.new}: no wall-clock case in common with {args.base}")
    print(f"{'case':<30}{'new/base ms/token':>20}  {'95% CI':<18}{'p(slower)':>10}  outcome")
    for c in rows:
        ci = f"[{c.ratio.lo:.3f}, {c.ratio.hi:.3f}]"
        print(f"{c.case:<30}{c.ratio.value:>20.3f}  {ci:<18}{c.p_slower:>10.4f}  {c.outcome}")
    print(f"same = within +/-{rows[0].tolerance:.1%}; p-values Holm-corrected over {len(rows)} cases")
    failing = [c for c in rows if c.outcome in args.fail_on]
    if args.markdown is not None:
        args.markdown.write_text(_markdown(args.base, args.new, rows, failing), encoding="utf-8")
    return 1 if failing else 0
