"""Numbers derived from a run record: medians, intervals, ratios, fits. Pure functions of the record.

Records store raw samples; everything a page, ``show``, ``check`` or
``compare`` prints is computed here, once, with the bootstrap settings the
record itself carries, so the same record always gives the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.stats import Estimate, fit_exponent, paired_ratio, predicted_speedup, summarize


@dataclass(frozen=True)
class TierTiming:
    tier: str
    role: str
    precision: str
    tokens: int
    """Output tokens over all golden rows (one pass)."""
    total_s: Estimate
    ms_per_token: Estimate
    tokens_per_s: Estimate
    ratio_vs_plain: Estimate | None
    """ms/token of this tier / ms/token of the plain tier, repeats paired."""
    exponent: Estimate | None
    """b in row time ~ (tokens + 1)^b."""
    overhead: float
    """Share of wall time outside session.run."""


@dataclass(frozen=True)
class PairTiming:
    case: str
    pair: str
    drafter: str
    verifier: str
    k: int
    ms_per_token: Estimate
    acceptance: float | None
    mean_accepted_length: float
    """Tokens committed per round, the bonus/correction token included (vLLM's convention)."""
    acceptance_by_position: tuple[float | None, ...]
    cost_ratio: float
    """c: drafter time per call / verifier time per call (single-step, from its greedy case)."""
    predicted_speedup: float
    observed_speedup: Estimate
    """Verifier greedy wall time / speculative wall time, repeats paired."""
    observed_over_predicted: float
    overhead: float


@dataclass(frozen=True)
class Bootstrap:
    resamples: int
    seed: int


def bootstrap_of(doc: dict[str, Any]) -> Bootstrap:
    wc = doc["config"]["wallclock"]
    return Bootstrap(int(wc.get("bootstrap", 2000)), int(wc.get("seed", 0)))


def per_repeat_totals(case: dict[str, Any]) -> np.ndarray:
    """Total wall seconds over the golden rows, one value per repeat."""
    return np.asarray([sum(rep) for rep in case["wall_s"]], dtype=float)


def per_repeat_ms_per_token(case: dict[str, Any]) -> np.ndarray:
    return 1000 * per_repeat_totals(case) / max(1, sum(case["tokens"]))


def median_ms_per_token(case: dict[str, Any]) -> float:
    """The point value every ratio between runs is taken of (the compare gate, A/A calibration, History)."""
    return float(np.median(per_repeat_ms_per_token(case)))


def _overhead(case: dict[str, Any]) -> float:
    wall = sum(map(sum, case["wall_s"]))
    return 1 - sum(map(sum, case["run_s"])) / wall if wall else 0.0


def _exponent(case: dict[str, Any], b: Bootstrap) -> Estimate | None:
    lengths = [t + 1 for t in case["tokens"]]
    per_row = np.median(np.asarray(case["wall_s"], dtype=float), axis=0)
    try:
        return fit_exponent(lengths, per_row, resamples=min(b.resamples, 1000), seed=b.seed)
    except ValueError:
        return None


def _point(values: np.ndarray) -> Estimate:
    v = float(np.median(values))
    return Estimate(v, v, v)


def tier_timings(doc: dict[str, Any], intervals: bool = True) -> list[TierTiming]:
    """``intervals=False`` skips the bootstrap of totals, ms/token and ratios (lo = hi = value, ratio None):
    what verdicts need (exponent, overhead) at a fraction of the cost, for history over many records."""
    wc = doc.get("wallclock") or {}
    cases = {n: c for n, c in wc.get("cases", {}).items() if c["kind"] == "greedy" and c["wall_s"]}
    if not cases:
        return []
    b = bootstrap_of(doc)
    plain = next((n for n, t in doc["tiers"].items() if t["role"] == "plain"), None)
    plain_ms = per_repeat_ms_per_token(cases[plain]) if plain in cases else None
    out = []
    for name, case in cases.items():
        ms = per_repeat_ms_per_token(case)
        totals = per_repeat_totals(case)
        ratio = None
        if intervals and plain_ms is not None and len(plain_ms) == len(ms):
            ratio = paired_ratio(ms, plain_ms, resamples=b.resamples, seed=b.seed)
        tier = doc["tiers"][name]
        est = (lambda x: summarize(x, resamples=b.resamples, seed=b.seed)) if intervals else _point
        out.append(
            TierTiming(
                tier=name,
                role=tier["role"],
                precision=tier["fingerprint"]["precision"],
                tokens=sum(case["tokens"]),
                total_s=est(totals),
                ms_per_token=est(ms),
                tokens_per_s=est(1000 / ms),
                ratio_vs_plain=ratio,
                exponent=_exponent(case, b),
                overhead=_overhead(case),
            )
        )
    return out


def pair_timings(doc: dict[str, Any], intervals: bool = True) -> list[PairTiming]:
    """``intervals=False`` gives ms/token as a point value; the observed speedup keeps its interval."""
    wc = doc.get("wallclock") or {}
    cases = wc.get("cases", {})
    b = bootstrap_of(doc)
    out = []
    for name, case in cases.items():
        if case["kind"] != "speculative" or not case["wall_s"]:
            continue
        verifier = cases.get(case["verifier"])
        if verifier is None or len(verifier["wall_s"]) != len(case["wall_s"]):
            continue
        proposed, accepted, rounds = sum(case["proposed"]), sum(case["accepted"]), sum(case["rounds"])
        acceptance = accepted / proposed if proposed else None
        reps = len(case["wall_s"])
        drafter_per_call = sum(map(sum, case["drafter_run_s"])) / (
            reps * (sum(case["drafter_calls"]) + len(case["tokens"]))
        )
        verifier_per_call = sum(map(sum, verifier["run_s"])) / (reps * sum(verifier["calls"]))
        c = drafter_per_call / verifier_per_call if verifier_per_call else float("nan")
        predicted = predicted_speedup(acceptance or 0.0, case["k"], c)
        observed = paired_ratio(
            per_repeat_totals(verifier), per_repeat_totals(case), resamples=b.resamples, seed=b.seed
        )
        by_pos = tuple(
            a / p if p else None
            for a, p in zip(case["accepted_by_position"], case["proposed_by_position"], strict=True)
        )
        out.append(
            PairTiming(
                case=name,
                pair=case["pair"],
                drafter=case["drafter"],
                verifier=case["verifier"],
                k=case["k"],
                ms_per_token=summarize(per_repeat_ms_per_token(case), resamples=b.resamples, seed=b.seed)
                if intervals
                else _point(per_repeat_ms_per_token(case)),
                acceptance=acceptance,
                mean_accepted_length=(accepted + rounds) / rounds if rounds else 0.0,
                acceptance_by_position=by_pos,
                cost_ratio=c,
                predicted_speedup=predicted,
                observed_speedup=observed,
                observed_over_predicted=observed.value / predicted if predicted else float("nan"),
                overhead=_overhead(case),
            )
        )
    return out


def ratio(part: dict[str, int]) -> float | None:
    return part["accepted"] / part["proposed"] if part["proposed"] else None


def framing_legs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The framing suite's runtime legs; the first is always Python onnxruntime."""
    return (doc.get("framing") or {}).get("legs", [])


def python_tiers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Framing facts of the Python onnxruntime leg, the one that also carries quality."""
    legs = framing_legs(doc)
    return legs[0]["tiers"] if legs else []


@dataclass(frozen=True)
class Agreement:
    """single-step == batched for one tier under one runtime, counted in golden rows."""

    rows_same: int
    rows: int
    present_max_abs_diff: float
    logits_max_abs_diff: float


def row_agreement(tier: dict[str, Any]) -> Agreement:
    """A row agrees when no batched block changes any argmax of its single-step decode."""
    per_row = zip(*(b["first_divergent_step"] for b in tier["blocks"]), strict=True)
    same = [all(step is None for step in row) for row in per_row]
    return Agreement(
        sum(same),
        len(same),
        max((b["present_max_abs_diff"] for b in tier["blocks"]), default=0.0),
        max((b["logits_max_abs_diff"] for b in tier["blocks"]), default=0.0),
    )
