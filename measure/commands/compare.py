"""Compare two run records case by case: faster / slower / same / inconclusive, Holm-corrected over all cases.

Per case, log ms/token per repeat (wall or CPU time, ``--metric``; or callgrind
instructions per token per run, in the policy's own ``instructions_tolerance``): slower or
faster when Welch's p-value, Holm-adjusted, is below the policy's alpha and the
ratio is past the band; same when the ratio's interval (level 1 - alpha) lies
inside the band (see :mod:`measure.analysis.comparison`). The policy is NEW's; a
results-tree BASE brings its machine's A/A drift into every interval.
The two records of one ``measure ab`` job, or a record compared with itself,
are paired by repeat (a paired t on the per-repeat differences), and say so.
``--markdown FILE`` also writes the verdict table as Markdown (for a CI job summary).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from measure.writing import write_report

if TYPE_CHECKING:
    from measure.analysis.comparison import Comparison, Drift
    from measure.record.model import Record

METRICS = [
    "wall",
    "cpu",
    "instructions",
    "first_token_ms",
    "row_p90_ms",
    "row_p99_ms",
    "load_cold_ms",
    "load_warm_ms",
    "memory_bytes",
]
"""wall and cpu: ms/token per repeat; instructions: callgrind instructions/token per run; the rest:
measure.analysis.profile.METRICS (kept here so parsing imports nothing)."""


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
        help="a band used when wider than the policy's (an A/A drift widens the intervals, never the band)",
    )
    p.add_argument(
        "--metric",
        choices=METRICS,
        default="wall",
        help="wall: ms/token of wall-clock time (default); cpu: of process CPU time (records with CPU samples); "
        "instructions: callgrind instructions per token per run (records made with --instructions; its own band, "
        "the policy's instructions_tolerance; a proxy for one tier over time, never for comparing tiers); "
        "or a cost-profile metric per tier: first_token_ms, row_p90_ms, row_p99_ms, load_cold_ms, load_warm_ms, "
        "memory_bytes (lower is better for every one)",
    )
    p.add_argument("--markdown", type=Path, default=None, help="also write the table as Markdown to this file")


def _markdown(base: Path, new: Path, rows: list, failing: list, source: str, metric: str) -> str:
    tol, level = rows[0].tolerance, rows[0].ratio.level or 0.95
    lines = [
        f"### measure compare ({metric}): {len(rows)} cases, same = the {level:.0%} interval within ±{tol:.1%}",
        "",
        f"`{base.name}` → `{new.name}`; Holm-corrected over all cases; {source}.",
        "",
        f"| case | base | new | new/base | {level:.0%} CI | outcome |",
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
    from measure.record.tree import entries, newest

    found = newest(entries(results), machine, commit)
    return None if found is None else found.path


def _calibrated(base_path: Path, machine: str, metric: str) -> tuple[Drift | None, str]:
    """The A/A drift of ``metric`` recorded for NEW's machine in the results tree BASE's record lies in."""
    from measure.analysis.calibration import STRONG_PAIRS
    from measure.record.archive import machine_folder
    from measure.results.calibration_file import load_calibration

    results = machine_folder(base_path).parent  # <results>/<machine-id>/<run-id>.json, or in its month archive
    cal = load_calibration(results, machine)
    drift = None if cal is None else cal.drift_of(metric)
    if drift is None:
        return None, "no A/A drift in the intervals"
    pairs = int(drift.df)
    weak = f"; weak: fewer than {STRONG_PAIRS} pairs" if pairs < STRONG_PAIRS else ""
    print(f"A/A drift {drift.sd:.1%} (log sd) from {pairs} A/A pair(s) in {results / machine}{weak}")
    return drift, f"A/A drift {drift.sd:.1%} from {pairs} pair(s) in the intervals{weak}"


def _records(args: argparse.Namespace) -> tuple[Path, Record, Path, Record] | None:
    """BASE and NEW, paths and records (the newest fitting record of a tree); None where BASE's tree holds none."""
    from measure.errors import MeasureError
    from measure.record.io import load

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
            write_report(args.markdown, f"### measure compare\n\nNo baseline: {what}.\n")
        return None
    return base_path, load(base_path), new_path, new


def _note_timed_regions(base: Record, new: Record, metric: str) -> None:
    """Say when tokenizing moved into or out of the wall-clock samples: a step that is not a speed change."""
    regions = [r.wallclock.timed if r.wallclock else "text" for r in (base, new)]
    if metric != "instructions" and regions[0] != regions[1]:
        print(
            f"note: the timed regions differ (base {regions[0]}, new {regions[1]}): tokenizing moved "
            f"{'out of' if regions[1] == 'ids' else 'into'} the wall-clock samples, a step of a few percent that is "
            "not a speed change"
        )


def _no_rows(metric: str) -> str:
    """What two records must share for ``metric`` to compare them."""
    return {
        "wall": "wall-clock case",
        "cpu": "case with CPU samples (cpu_s) and two repeats",
        "instructions": "tier with instruction counts (two runs, the same valgrind version and rows)",
    }.get(metric, f"tier with {metric} samples")


def _print_table(rows: list[Comparison], metric: str) -> None:
    from measure.terminal import clean

    level = rows[0].ratio.level or 0.95
    print(f"{'case':<30}{'new/base ' + metric:>20}  {f'{level:.0%} CI':<18}{'p(change)':>10}  outcome")
    for c in rows:
        ci = f"[{c.ratio.lo:.3f}, {c.ratio.hi:.3f}]"
        print(f"{clean(c.case):<30}{c.ratio.value:>20.3f}  {ci:<18}{c.p_change:>10.4f}  {c.outcome}")
    print(
        f"same = the {level:.0%} interval within +/-{rows[0].tolerance:.1%}; "
        f"p-values Holm-corrected over {len(rows)} cases"
    )


def run(args: argparse.Namespace) -> int:
    from measure.analysis.comparison import compare_records, pairing_of
    from measure.errors import MeasureError

    found = _records(args)
    if found is None:
        return 0
    base_path, base, new_path, new = found
    args.base, args.new = base_path, new_path
    if base.golden.sha256 != new.golden.sha256:
        raise MeasureError(f"{args.new}: golden rows differ from {args.base} (sha256); the runs are not comparable")
    _note_timed_regions(base, new, args.metric)
    paired = pairing_of(base, new, args.metric)
    if paired is not None:  # both sides saw the same host at the same time: no run-to-run drift between them
        print(paired)
        drift, source = None, paired
    else:
        drift, source = _calibrated(base_path, new.machine_id, args.metric)
    if args.tolerance is not None:
        source = f"band: wider of --tolerance and the policy; {source}"
    rows = compare_records(
        base, new, tolerance=args.tolerance, drift=drift, metric=args.metric, paired=paired is not None
    )
    if not rows:
        raise MeasureError(f"{args.new}: no {_no_rows(args.metric)} in common with {args.base}")
    _print_table(rows, args.metric)
    failing = [c for c in rows if c.outcome in args.fail_on]
    if args.markdown is not None:
        text = _markdown(args.base, args.new, rows, failing, source, args.metric)
        write_report(args.markdown, text)
    return 1 if failing else 0
