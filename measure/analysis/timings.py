"""Numbers derived from a run record: medians, intervals, ratios, fits. Pure functions of the record.

Records store raw samples; everything a page, ``show``, ``check`` or
``compare`` prints is computed here, once, with the bootstrap settings the
record itself carries, so the same record always gives the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from measure.analysis.stats import (
    LEVEL,
    Estimate,
    column_medians,
    fit_exponent,
    median,
    paired_ratio,
    predicted_speedup,
    summarize,
)
from measure.record.model import Case, Record


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
    """ms/token of this tier / ms/token of the plain tier, repeats paired; None for a tier of the other model kind
    (a decoder-only tier is never timed against an encoder-decoder one)."""
    exponent: Estimate | None
    """b in row time ~ (tokens + 1)^b, the row time as ``exponent_of`` says."""
    overhead: float
    """Share of wall time outside session.run."""
    exponent_of: str = "wall"
    """What row time the exponent is fitted on: ``cpu`` (the process's CPU time, every thread) where the record
    has it, else ``wall``. See :func:`exponent_rows`."""


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
    observed_speedup_family: Estimate
    """The observed speedup's interval at 1 - 0.05/K for the pair's K values of k (Bonferroni): what a
    verdict over "some k" may claim without the bias of picking the best k by its observed value."""


@dataclass(frozen=True)
class Bootstrap:
    resamples: int
    seed: int


def bootstrap_of(record: Record) -> Bootstrap:
    wc = record.config.wallclock
    return Bootstrap(wc.bootstrap, wc.seed)


def exponent_rows(case: Case) -> tuple[np.ndarray, str]:
    """The row times (repeats x rows) "Is decoding O(T)?" is fitted on, and which they are.

    The question is about the work a decode does per token, so CPU time where the record has it: on a busy
    machine wall time is not proportional to work. A short row runs inside one scheduler slice while a long one
    shares the core with the other jobs, so the wall-time exponent rises with the load. The README's demo run
    beside two busy loops (load 8 to 18) fitted 1.37 [1.20, 1.52] on wall time and 0.98 [0.93, 1.02] on CPU time
    for base-fp32, and five tiers failed the gate on wall time, none on CPU time. A decode that rebuilds its
    cache every step does quadratic work, which CPU time shows as well as wall time does.
    """
    cpu = case.cpu_s
    if cpu is not None and cpu.shape == case.wall_s.shape and cpu.size and bool(np.all(cpu > 0)):
        return cpu, "cpu"
    return case.wall_s, "wall"


def _exponent(case: Case, b: Bootstrap) -> Estimate | None:
    lengths = [t + 1 for t in case.tokens]
    per_row = column_medians(exponent_rows(case)[0])
    try:
        return fit_exponent(lengths, per_row, resamples=min(b.resamples, 1000), seed=b.seed)
    except ValueError:
        return None


def common_repeats(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two cases' per-repeat values paired repeat by repeat: the first repeats both have. A budgeted run's
    top-up gives more repeats to the cases whose intervals are widest; the repeats before it are interleaved
    round by round, as every repeat of an unbudgeted run is."""
    n = min(len(a), len(b))
    return a[:n], b[:n]


def _point(values: np.ndarray) -> Estimate:
    v = median(values)
    return Estimate(v, v, v)


def tier_timings(record: Record, intervals: bool = True) -> list[TierTiming]:
    """``intervals=False`` skips the bootstrap of totals, ms/token and ratios (lo = hi = value, ratio None):
    what verdicts need (exponent, overhead) at a fraction of the cost."""
    if record.wallclock is None:
        return []
    cases = {c.name: c for c in record.wallclock.greedy() if c.name in record.tiers}
    if not cases:
        return []
    b = bootstrap_of(record)
    out = []
    for name, case in cases.items():
        ms = case.per_repeat_ms_per_token
        ratio = None
        # a record joined from shards pairs each tier with the baseline timed beside it, in its own shard
        anchor = record.explore.anchor_of(name, record.plain) if record.explore is not None else record.plain
        plain = cases.get(anchor or "")
        same_kind = plain is not None and record.tiers[plain.name].kind == record.tiers[name].kind
        if intervals and same_kind and plain is not None and plain.measured and case.measured:
            ratio = paired_ratio(*common_repeats(ms, plain.per_repeat_ms_per_token))
        tier = record.tiers[name]
        est = summarize if intervals else _point
        out.append(
            TierTiming(
                tier=name,
                role=tier.role,
                precision=tier.precision,
                tokens=case.total_tokens,
                total_s=est(case.per_repeat_totals),
                ms_per_token=est(ms),
                tokens_per_s=est(1000 / ms),
                ratio_vs_plain=ratio,
                exponent=_exponent(case, b),
                overhead=case.overhead,
                exponent_of=exponent_rows(case)[1],
            )
        )
    return out


def pair_timings(record: Record, intervals: bool = True) -> list[PairTiming]:
    """``intervals=False`` gives ms/token as a point value; the observed speedup keeps its interval."""
    if record.wallclock is None:
        return []
    cases = record.wallclock.cases
    family: dict[str, int] = {}
    for case in record.wallclock.speculative():
        family[case.pair or case.name] = family.get(case.pair or case.name, 0) + 1
    out = []
    for case in record.wallclock.speculative():
        verifier = cases.get(case.verifier or "")
        if verifier is None or not verifier.measured or not case.measured:
            continue
        out.append(_pair_timing(case, verifier, family[case.pair or case.name], intervals))
    return out


def _cost_ratio(case: Case, verifier: Case) -> float:
    """c: a drafter call's time over a verifier call's, against the verifier's single-step calls (its greedy
    case), as Leviathan et al. define it."""
    drafter_s = float(case.drafter_run_s.sum()) if case.drafter_run_s is not None else 0.0
    drafter_per_call = drafter_s / max(1, case.repeats * (sum(case.drafter_calls) + len(case.tokens)))
    verifier_per_call = float(verifier.run_s.sum()) / max(1, verifier.repeats * sum(verifier.calls))
    return drafter_per_call / verifier_per_call if verifier_per_call else float("nan")


def _pair_timing(case: Case, verifier: Case, family: int, intervals: bool) -> PairTiming:
    """One speculative case against its verifier's greedy case; ``family``: the cases of its pair (every k), over
    which the family-wise interval is widened."""
    proposed, accepted, rounds = sum(case.proposed), sum(case.accepted), sum(case.rounds)
    acceptance = accepted / proposed if proposed else None
    c = _cost_ratio(case, verifier)
    predicted = predicted_speedup(acceptance or 0.0, case.k or 0, c)
    paired = common_repeats(verifier.per_repeat_totals, case.per_repeat_totals)
    observed = paired_ratio(*paired)
    adjusted = paired_ratio(*paired, level=1 - (1 - LEVEL) / family)
    by_pos = tuple(
        a / p if p else None for a, p in zip(case.accepted_by_position, case.proposed_by_position, strict=True)
    )
    ms = case.per_repeat_ms_per_token
    return PairTiming(
        case=case.name,
        pair=case.pair or case.name,
        drafter=case.drafter or "?",
        verifier=case.verifier or "?",
        k=case.k or 0,
        ms_per_token=summarize(ms) if intervals else _point(ms),
        acceptance=acceptance,
        mean_accepted_length=(accepted + rounds) / rounds if rounds else 0.0,
        acceptance_by_position=by_pos,
        cost_ratio=c,
        predicted_speedup=predicted,
        observed_speedup=observed,
        observed_over_predicted=observed.value / predicted if predicted else float("nan"),
        overhead=case.overhead,
        observed_speedup_family=adjusted,
    )
