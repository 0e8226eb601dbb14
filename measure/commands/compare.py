"""Compare two run records case by case: faster / slower / same / inconclusive, Holm-corrected over all cases.

A call needs the ratio past the tolerance band, the two runs' intervals apart,
and a corrected p-value below the policy's alpha; the policy is NEW's.
``--markdown FILE`` also writes the verdict table as Markdown (for a CI job summary).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", type=Path, metavar="BASE", help="the baseline record, or a results tree (see --base-commit)")
    p.add_argument("new", type=Path, metavar="NEW", help="the record to judge, or a results tree (its newest record)")
    p.add_argument(
        "--base-commit",
        default=None,
        metavar="SHA",
        help="BASE is a results tree: take its newest complete record of NEW's machine measured at this commit",
    )
    p.add_argument(
        "--missing-base-ok",
        action="store_true",
        help="when no baseline record exists (first run, new machine), say so and exit 0",
    )
    p.add_argument(
        "--fail-on",
        choices=["slower", "faster", "inconclusive"],
        action="append",
        default=[],
        help="exit 1 when any case has this outcome (repeatable)",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="a band used when wider than the policy's (default: BASE tree's calibration.json of NEW's machine)",
    )
    p.add_argument("--markdown", type=Path, default=None, help="also write the table as Markdown to this file")
    p.add_argument(
        "--metric",
        default="ms_per_token",
        choices=[
            "ms_per_token",
            "first_token_ms",
            "row_p90_ms",
            "row_p99_ms",
            "load_cold_ms",
            "load_warm_ms",
            "memory_bytes",
        ],
        help="what to compare (default ms_per_token); the others are the cost profile's, per tier",
    )


def _markdown(base: Path, new: Path, rows: list, failing: list, source: str, metric: str = "ms_per_token") -> str:
    tol = rows[0].tolerance
    label = "ms/token" if metric == "ms_per_token" else metric
    lines = [
        f"### measure compare: {len(rows)} cases, same = within ±{tol:.1%}",
        "",
        f"`{base.name}` → `{new.name}`; Holm-corrected over all cases; band from {source}.",
        "",
        f"| case | base {label} | new {label} | new/base | 95% CI | outcome |",
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


def _newest(results: Path, machine: str | None, commit: str | None) -> Path | None:
    """The newest complete record in a tree, of one machine and (by prefix) one commit when given."""
    from measure.tree import entries, newest

    found = newest(entries(results), machine, commit)
    return None if found is None else found.path


def _calibrated(base_path: Path, machine: str) -> tuple[float | None, str]:
    """The A/A tolerance recorded for NEW's machine in the results tree BASE's record lies in."""
    from measure.calibration import load_calibration

    results = base_path.parent.parent  # <results>/<machine-id>/<run-id>.json
    cal = load_calibration(results, machine)
    if cal is None or cal.tolerance is None:
        return None, "the policy"
    print(f"calibrated tolerance {cal.tolerance:.1%} from {len(cal.pairs)} A/A pair(s) in {results / machine}")
    return cal.tolerance, f"the A/A calibration ({len(cal.pairs)} pair(s), wider of it and the policy)"


def run(args: argparse.Namespace) -> int:
    from measure.comparison import compare_records
    from measure.errors import MeasureError
    from measure.record import load
    from measure.terminal import clean

    new_path = _newest(args.new, None, None) if args.new.is_dir() else args.new
    if new_path is None:
        raise MeasureError(f"{args.new}: no complete run records (expected <machine-id>/<run-id>.json)")
    new = load(new_path)
    base_path = _newest(args.base, new.machine_id, args.base_commit) if args.base.is_dir() else args.base
    if base_path is None:
        what = f"{args.base}: no complete record of machine {new.machine_id} at commit {args.base_commit or 'any'}"
        if not args.missing_base_ok:
            raise MeasureError(what)
        print(f"no baseline: {what}")
        if args.markdown is not None:
            args.markdown.write_text(f"### measure compare\n\nNo baseline: {what}.\n", encoding="utf-8")
        return 0
    base = load(base_path)
    args.base, args.new = base_path, new_path
    if base.golden.sha256 != new.golden.sha256:
        raise MeasureError(f"{args.new}: golden rows differ from {args.base} (sha256); the runs are not comparable")
    tolerance, source = args.tolerance, "--tolerance (wider of it and the policy)"
    if tolerance is None:
        tolerance, source = _calibrated(base_path, new.machine_id)
    rows = compare_records(base, new, tolerance=tolerance, metric=args.metric)
    if not rows:
        what = "wall-clock case" if args.metric == "ms_per_token" else f"tier with {args.metric} measured"
        raise MeasureError(f"{args.new}: no {what} in common with {args.base}")
    label = "ms/token" if args.metric == "ms_per_token" else args.metric
    print(f"{'case':<30}{'new/base ' + label:>20}  {'95% CI':<18}{'p(slower)':>10}  outcome")
    for c in rows:
        ci = f"[{c.ratio.lo:.3f}, {c.ratio.hi:.3f}]"
        print(f"{clean(c.case):<30}{c.ratio.value:>20.3f}  {ci:<18}{c.p_slower:>10.4f}  {c.outcome}")
    print(f"same = within +/-{rows[0].tolerance:.1%}; p-values Holm-corrected over {len(rows)} cases")
    failing = [c for c in rows if c.outcome in args.fail_on]
    if args.markdown is not None:
        args.markdown.write_text(_markdown(args.base, args.new, rows, failing, source, args.metric), encoding="utf-8")
    return 1 if failing else 0
