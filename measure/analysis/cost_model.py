"""The measured cost model of one record: what its timed calls predict for each speculative pair, and what the
decode loop delivered of it; and what a decoder layout costs against another on the same weights.

Pure functions of the record (no onnxruntime). The calls were timed on their
own (:mod:`measure.suites.calls`), so the prediction here holds the
model's cost, and efficiency = observed / predicted isolates what the rest of
a decode (the loop, the encoder, tokenizing) does with it. See
:mod:`measure.analysis.speedup` for the formula and how it differs from Leviathan's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from measure.analysis.speedup import BatchCostLine, CallCostInputs, SpeculativePrediction, fit_batch_cost, predict
from measure.analysis.stats import Estimate, paired_ratio, summarize
from measure.analysis.timings import PairTiming
from measure.record.model import Case, LayoutPair, Record, TierCalls


@dataclass(frozen=True)
class BatchCost:
    """One verifier tier: a call of n tokens against a single step, per n, and the line through them."""

    tier: str
    n: tuple[int, ...]
    call_us: tuple[Estimate, ...]
    """Microseconds of one call of each n: the median over repeats of each repeat's median over rows."""
    vs_single: tuple[Estimate, ...]
    """A call of each n over a single step, repeats paired (n = 1 gives exactly 1)."""
    line: BatchCostLine | None
    """cost(n) = fixed_s + per_token_s * n, least squares over every repeat's medians; None with a single width."""
    cache_tokens: float
    """Mean cached positions the calls ran on top of."""

    def ratio(self, n: int) -> Estimate | None:
        return self.vs_single[self.n.index(n)] if n in self.n else None


@dataclass(frozen=True)
class CostModelRow:
    """One speculative pair at one k: Leviathan's prediction, the measured-cost one, and the observed speedup."""

    case: str
    pair: str
    drafter: str
    verifier: str
    k: int
    single_s: float
    batched_s: float
    draft_s: float
    batched_fitted: bool
    """True where no call of k + 1 tokens was timed and ``batched_s`` is read off the fitted line."""
    prediction: SpeculativePrediction
    observed: Estimate
    """Verifier greedy wall time / speculative wall time, repeats paired (as
    :class:`~measure.analysis.timings.PairTiming`)."""
    efficiency: Estimate
    """observed / measured-cost prediction; the interval carries the observed speedup's uncertainty only."""
    inside: Estimate | None = None
    """The speedup inside onnxruntime's run alone: the verifier's greedy run time / the speculative decode's
    (both models' calls, encoders included), repeats paired; what the decode would give with no harness at all."""

    @property
    def in_loop(self) -> float | None:
        """inside / measured-cost prediction: how the calls fared in the loop against alone (encoders, the two
        models taking turns in the core's cache); the machine's share of a low efficiency, not measure's."""
        return None if self.inside is None else self.inside.value / self.prediction.measured_cost

    @property
    def harness(self) -> float | None:
        """observed / inside: what measure's loop (the time outside onnxruntime) costs speculative against greedy;
        1 when both decodes spend the same share outside. efficiency = in_loop x harness."""
        return None if self.inside is None else self.observed.value / self.inside.value


@dataclass(frozen=True)
class LayoutFinding:
    """One model's merged decoder layout against its split one, per output token, repeats paired."""

    name: str
    merged_layout: str
    split_layout: str
    merged_ms_per_token: Estimate
    split_ms_per_token: Estimate
    ratio: Estimate
    """merged / split ms per token: above 1, the merged layout is slower."""
    call_ratio: float
    """merged / split seconds inside session.run per call."""
    same_outputs: bool
    repeats: int


@dataclass(frozen=True)
class CostModel:
    rows: int
    """Golden rows whose caches the calls ran on."""
    repeats: int
    tiers: tuple[BatchCost, ...]
    pairs: tuple[CostModelRow, ...]
    layouts: tuple[LayoutFinding, ...] = ()


def _median(samples: np.ndarray | None) -> float | None:
    return None if samples is None or samples.size == 0 else float(np.median(samples))


def batch_cost(tier: str, calls: TierCalls) -> BatchCost:
    single = calls.samples(1)
    estimates, ratios = [], []
    table = calls.per_repeat_s
    for i, _ in enumerate(calls.n):
        column = table[:, i]
        estimates.append(summarize(1e6 * column))
        ratios.append(paired_ratio(column, single) if single is not None else Estimate(1.0, 1.0, 1.0))
    line = None
    if len(set(calls.n)) >= 2:
        line = fit_batch_cost([n for _ in range(table.shape[0]) for n in calls.n], table.ravel().tolist())
    mean_cache = float(np.mean(calls.cache_tokens)) if calls.cache_tokens else 0.0
    return BatchCost(tier, calls.n, tuple(estimates), tuple(ratios), line, mean_cache)


def _inside(greedy: Case | None, case: Case) -> Estimate | None:
    """The verifier's greedy run time over the speculative decode's, repeats paired (both decode the same rows)."""
    if greedy is None or greedy.run_s.shape[0] != case.run_s.shape[0] or case.run_s.shape[0] == 0:
        return None
    base, spec = greedy.run_s.sum(axis=1), case.run_s.sum(axis=1)
    return paired_ratio(base, spec) if np.all(base > 0) and np.all(spec > 0) else None


def _pair_row(
    p: PairTiming,
    case: Case,
    verifier: TierCalls,
    drafter: TierCalls,
    line: BatchCostLine | None,
    greedy: Case | None = None,
) -> CostModelRow | None:
    """Tokens and drafter calls per round are what the decode really did (short rows end in cut rounds);
    the tokens committed per round are the single steps a greedy decode takes for them."""
    single, draft = _median(verifier.samples(1)), _median(drafter.samples(1))
    batched = _median(verifier.samples(p.k + 1))
    fitted = batched is None
    if fitted and line is not None:
        batched = line.at(p.k + 1)
    rounds = sum(case.rounds)
    if p.acceptance is None or not rounds or single is None or draft is None or batched is None or batched <= 0:
        return None
    costs = CallCostInputs(single_s=single, batched_s=batched, draft_s=draft)
    prediction = predict(
        p.k,
        p.acceptance,
        costs,
        draft_calls_per_round=sum(case.drafter_calls) / rounds,
        tokens_per_round=p.mean_accepted_length,
        observed=p.observed_speedup.value,
    )
    m = prediction.measured_cost
    o = p.observed_speedup
    return CostModelRow(
        case=p.case,
        pair=p.pair,
        drafter=p.drafter,
        verifier=p.verifier,
        k=p.k,
        single_s=single,
        batched_s=batched,
        draft_s=draft,
        batched_fitted=fitted,
        prediction=prediction,
        observed=o,
        efficiency=Estimate(o.value / m, o.lo / m, o.hi / m, level=o.level),
        inside=_inside(greedy, case),
    )


def layout_finding(x: LayoutPair) -> LayoutFinding | None:
    m, s = x.merged, x.split
    if m.wall_s.shape[0] == 0 or m.wall_s.shape != s.wall_s.shape:
        return None
    merged, split = m.per_repeat_ms_per_token, s.per_repeat_ms_per_token
    return LayoutFinding(
        name=x.name,
        merged_layout=m.layout,
        split_layout=s.layout,
        merged_ms_per_token=summarize(merged),
        split_ms_per_token=summarize(split),
        ratio=paired_ratio(merged, split),
        call_ratio=m.run_s_per_call / s.run_s_per_call,
        same_outputs=x.same_outputs,
        repeats=int(m.wall_s.shape[0]),
    )


def cost_model(record: Record, pairs: Sequence[PairTiming]) -> CostModel | None:
    """None for records with neither call costs nor layouts (older records, or both switched off)."""
    wc = record.wallclock
    if wc is None or (wc.call_costs is None and not wc.layouts):
        return None
    layouts = tuple(f for f in (layout_finding(x) for x in wc.layouts) if f is not None)
    cc = wc.call_costs
    if cc is None or cc.repeats == 0:
        return CostModel(0, 0, (), (), layouts)
    timed = {name: calls for name, calls in cc.tiers.items() if len(calls.n) > 1 and calls.per_repeat_s.size}
    tiers = {name: batch_cost(name, calls) for name, calls in timed.items()}  # a tier a stopped run never timed: none
    rows = []
    for p in pairs:
        verifier, drafter, case = cc.tiers.get(p.verifier), cc.tiers.get(p.drafter), wc.cases.get(p.case)
        if verifier is None or drafter is None or case is None:
            continue
        line = tiers[p.verifier].line if p.verifier in tiers else None
        row = _pair_row(p, case, verifier, drafter, line, wc.cases.get(p.verifier))
        if row is not None:
            rows.append(row)
    return CostModel(cc.rows, cc.repeats, tuple(tiers.values()), tuple(rows), layouts)
