"""Summarise one run record: per-tier timings, speculative pairs, framing parity and verdicts."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="a run record JSON file")


def _ci(e) -> str:
    short = f" at {e.short_level:.1%}" if e.short_level is not None else ""
    return f"{e.value:.3f} [{e.lo:.3f}, {e.hi:.3f}]{short}"


def _ratio(x: float | None) -> str:
    return "None" if x is None else f"{x:.4f}"


def run(args: argparse.Namespace) -> int:
    from measure.analysis import pair_timings, tier_timings
    from measure.record import load
    from measure.verdicts import verdicts

    r = load(args.file)
    env = r.environment
    state = "complete" if r.complete else f"INCOMPLETE ({r.error or 'not finished'})"
    print(f"run {r.run_id} on {r.machine_id} ({env.machine.cpu}), {state}")
    print(
        f"golden rows {r.golden.rows} sha256 {r.golden.sha256[:12]}; "
        f"onnxruntime {env.onnxruntime}; started {r.started_at}"
    )
    w = max([12, *(len(name) + 2 for name in r.tiers)])  # the tier column fits the longest name
    tiers = tier_timings(r)
    if tiers:
        print("\nwall-clock (median [95% CI])")
        print(f"  {'tier':<{w}}{'precision':<14}{'ms/token':<34}{'x plain':<24}{'exponent':<24}{'overhead':>8}")
        for t in tiers:
            ratio_s = _ci(t.ratio_vs_plain) if t.ratio_vs_plain else "-"
            exp_s = _ci(t.exponent) if t.exponent else "-"
            print(
                f"  {t.tier:<{w}}{t.precision:<14}{_ci(t.ms_per_token):<34}{ratio_s:<24}{exp_s:<24}{t.overhead:>8.1%}"
            )
    pairs = pair_timings(r)
    if pairs:
        cw = max([28, *(len(p.case) + 2 for p in pairs)])
        print("\nspeculative pairs")
        print(f"  {'case':<{cw}}{'accept':>8}{'len/round':>10}{'c':>7}{'predicted':>10}  observed speedup")
        for p in pairs:
            acc = f"{p.acceptance:.4f}" if p.acceptance is not None else "-"
            print(
                f"  {p.case:<{cw}}{acc:>8}{p.mean_accepted_length:>10.2f}{p.cost_ratio:>7.2f}"
                f"{p.predicted_speedup:>10.2f}  {_ci(p.observed_speedup)}"
            )
    if r.framing:
        print("\nframing parity (single-step == batched argmax; worst present |diff|)")
        for t in r.python_tiers:
            cells = "  ".join(
                f"k={b.block}: {b.argmax_agree}/{b.argmax_total} ({b.present_max_abs_diff:.1e})" for b in t.blocks
            )
            print(f"  {t.tier:<{w}}{t.precision:<14}{cells}")
        for leg in r.legs[1:]:
            print(f"\n{leg.runtime} {leg.version or ''} leg: {leg.status}  {leg.reason}".rstrip())
            for t in leg.tiers:
                if not t.measured:
                    print(f"  {t.tier:<{w}}{t.status}: {t.reason}")
                    continue
                print(
                    f"  {t.tier:<{w}}{t.precision:<14}{t.rows_same}/{t.rows} rows single == batched "
                    f"(present |diff| <= {t.present_max_abs_diff:.1e})"
                )
        print("\nacceptance (probe / runtime), output preservation")
        aw = max([28, *(len(a.name) + 2 for a in r.framing.acceptance)])
        for a in r.framing.acceptance:
            kind = "self" if a.self_pair else "pair"
            print(
                f"  {a.name:<{aw}}{kind:<6}probe {_ratio(a.probe.ratio)}  "
                f"runtime {_ratio(a.runtime.ratio)}  preserved {a.preserved}/{a.rows}"
            )
    print("\nverdicts")
    for v in verdicts(r):
        print(f"  [{v.outcome:<12}] {v.question} {v.subject}: {v.answer}")
    return 0
