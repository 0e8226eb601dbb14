"""Summarise one run record: per-tier timings, speculative pairs, framing parity and verdicts."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="a run record JSON file")


def _print(text: str = "") -> None:
    """Print a line built from record strings: control characters shown escaped, never sent raw."""
    from measure.terminal import clean

    print("\n".join(clean(part) for part in text.split("\n")))


def _ci(e) -> str:
    return f"{e.value:.3f} [{e.lo:.3f}, {e.hi:.3f}]"


def run(args: argparse.Namespace) -> int:
    from measure.analysis import framing_legs, pair_timings, python_tiers, ratio, row_agreement, tier_timings
    from measure.record import load_record
    from measure.verdicts import verdicts

    doc = load_record(args.file)
    env = doc["environment"]
    state = "complete" if doc["complete"] else f"INCOMPLETE ({doc.get('error', 'not finished')})"
    _print(f"run {doc['run_id']} on {doc['machine_id']} ({env['machine']['cpu']}), {state}")
    _print(
        f"golden rows {doc['golden']['rows']} sha256 {doc['golden']['sha256'][:12]}; "
        f"onnxruntime {env['onnxruntime']}; started {doc['started_at']}"
    )
    w = max([12, *(len(name) + 2 for name in doc.get("tiers", {}))])  # the tier column fits the longest name
    precisions = [t["fingerprint"]["precision"] for t in doc["tiers"].values()]
    pw = max([14, *(len(p) + 2 for p in precisions)])
    cases = [
        *(doc.get("wallclock") or {}).get("cases", {}),
        *(f"{a['drafter']}->{a['verifier']}" for a in (doc.get("framing") or {}).get("acceptance", [])),
    ]
    cw = max([28, *(len(c) + 2 for c in cases)])
    tiers = tier_timings(doc)
    if tiers:
        _print("\nwall-clock (median [95% CI])")
        _print(f"  {'tier':<{w}}{'precision':<{pw}}{'ms/token':<26}{'x plain':<24}{'exponent':<24}{'overhead':>8}")
        for t in tiers:
            ratio_s = _ci(t.ratio_vs_plain) if t.ratio_vs_plain else "-"
            exp_s = _ci(t.exponent) if t.exponent else "-"
            ms_s = _ci(t.ms_per_token)
            _print(f"  {t.tier:<{w}}{t.precision:<{pw}}{ms_s:<26}{ratio_s:<24}{exp_s:<24}{t.overhead:>8.1%}")
    pairs = pair_timings(doc)
    if pairs:
        _print("\nspeculative pairs")
        _print(f"  {'case':<{cw}}{'accept':>8}{'len/round':>10}{'c':>7}{'predicted':>10}  observed speedup")
        for p in pairs:
            acc = f"{p.acceptance:.4f}" if p.acceptance is not None else "-"
            _print(
                f"  {p.case:<{cw}}{acc:>8}{p.mean_accepted_length:>10.2f}{p.cost_ratio:>7.2f}"
                f"{p.predicted_speedup:>10.2f}  {_ci(p.observed_speedup)}"
            )
    fr = doc.get("framing")
    if fr:
        _print("\nframing parity (single-step == batched argmax; worst present |diff|)")
        for t in python_tiers(doc):
            cells = "  ".join(
                f"k={b['block']}: {b['argmax_agree']}/{b['argmax_total']} ({b['present_max_abs_diff']:.1e})"
                for b in t["blocks"]
            )
            _print(f"  {t['tier']:<{w}}{t['precision']:<{pw}}{cells}")
        for leg in framing_legs(doc)[1:]:
            _print(
                f"\n{leg['runtime']} {leg.get('version') or ''} leg: {leg['status']}  {leg.get('reason', '')}".rstrip()
            )
            for t in leg["tiers"]:
                if t["status"] != "measured":
                    _print(f"  {t['tier']:<{w}}{t['status']}: {t.get('reason', '')}")
                    continue
                a = row_agreement(t)
                _print(
                    f"  {t['tier']:<{w}}{t['precision']:<{pw}}{a.rows_same}/{a.rows} rows single == batched "
                    f"(present |diff| <= {a.present_max_abs_diff:.1e})"
                )
        _print("\nacceptance (probe / runtime), output preservation")
        for a in fr["acceptance"]:
            pr, rt = ratio(a["probe"]), ratio(a["runtime"])
            kind = "self" if a["self"] else "pair"
            _print(
                f"  {a['drafter'] + '->' + a['verifier']:<{cw}}{kind:<6}probe {pr if pr is None else f'{pr:.4f}'}  "
                f"runtime {rt if rt is None else f'{rt:.4f}'}  preserved {a['preserved']}/{a['rows']}"
            )
    _print("\nverdicts")
    for v in verdicts(doc):
        _print(f"  [{v.outcome:<12}] {v.question} {v.subject}: {v.answer}")
    return 0
