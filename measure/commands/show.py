"""Summarise one run record: per-tier timings, speculative pairs, framing parity and verdicts."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="a run record JSON file")


def _ci(e) -> str:
    return f"{e.value:.3f} [{e.lo:.3f}, {e.hi:.3f}]"


def run(args: argparse.Namespace) -> int:
    from measure.analysis import framing_legs, pair_timings, python_tiers, ratio, row_agreement, tier_timings
    from measure.record import load_record
    from measure.verdicts import verdicts

    doc = load_record(args.file)
    env = doc["environment"]
    state = "complete" if doc["complete"] else f"INCOMPLETE ({doc.get('error', 'not finished')})"
    print(f"run {doc['run_id']} on {doc['machine_id']} ({env['machine']['cpu']}), {state}")
    print(
        f"golden rows {doc['golden']['rows']} sha256 {doc['golden']['sha256'][:12]}; "
        f"onnxruntime {env['onnxruntime']}; started {doc['started_at']}"
    )
    w = max([12, *(len(name) + 2 for name in doc.get("tiers", {}))])  # the tier column fits the longest name
    tiers = tier_timings(doc)
    if tiers:
        print("\nwall-clock (median [95% CI])")
        print(f"  {'tier':<{w}}{'precision':<14}{'ms/token':<26}{'x plain':<24}{'exponent':<24}{'overhead':>8}")
        for t in tiers:
            ratio_s = _ci(t.ratio_vs_plain) if t.ratio_vs_plain else "-"
            exp_s = _ci(t.exponent) if t.exponent else "-"
            ms_s = _ci(t.ms_per_token)
            print(f"  {t.tier:<{w}}{t.precision:<14}{ms_s:<26}{ratio_s:<24}{exp_s:<24}{t.overhead:>8.1%}")
    pairs = pair_timings(doc)
    if pairs:
        print("\nspeculative pairs")
        print(f"  {'case':<28}{'accept':>8}{'len/round':>10}{'c':>7}{'predicted':>10}  observed speedup")
        for p in pairs:
            acc = f"{p.acceptance:.4f}" if p.acceptance is not None else "-"
            print(
                f"  {p.case:<28}{acc:>8}{p.mean_accepted_length:>10.2f}{p.cost_ratio:>7.2f}"
                f"{p.predicted_speedup:>10.2f}  {_ci(p.observed_speedup)}"
            )
    fr = doc.get("framing")
    if fr:
        print("\nframing parity (single-step == batched argmax; worst present |diff|)")
        for t in python_tiers(doc):
            cells = "  ".join(
                f"k={b['block']}: {b['argmax_agree']}/{b['argmax_total']} ({b['present_max_abs_diff']:.1e})"
                for b in t["blocks"]
            )
            print(f"  {t['tier']:<{w}}{t['precision']:<14}{cells}")
        for leg in framing_legs(doc)[1:]:
            print(
                f"\n{leg['runtime']} {leg.get('version') or ''} leg: {leg['status']}  {leg.get('reason', '')}".rstrip()
            )
            for t in leg["tiers"]:
                if t["status"] != "measured":
                    print(f"  {t['tier']:<{w}}{t['status']}: {t.get('reason', '')}")
                    continue
                a = row_agreement(t)
                print(
                    f"  {t['tier']:<{w}}{t['precision']:<14}{a.rows_same}/{a.rows} rows single == batched "
                    f"(present |diff| <= {a.present_max_abs_diff:.1e})"
                )
        print("\nacceptance (probe / runtime), output preservation")
        for a in fr["acceptance"]:
            pr, rt = ratio(a["probe"]), ratio(a["runtime"])
            kind = "self" if a["self"] else "pair"
            print(
                f"  {a['drafter'] + '->' + a['verifier']:<28}{kind:<6}probe {pr if pr is None else f'{pr:.4f}'}  "
                f"runtime {rt if rt is None else f'{rt:.4f}'}  preserved {a['preserved']}/{a['rows']}"
            )
    print("\nverdicts")
    for v in verdicts(doc):
        print(f"  [{v.outcome:<12}] {v.question} {v.subject}: {v.answer}")
    return 0
