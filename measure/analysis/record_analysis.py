"""The full analysis of one record: timings with intervals, pairs, verdicts, the cost profile and cost model.

The current record of each machine is analysed in full; every other record
only through its cached :class:`~measure.analysis.summary.Summary`. What a
page or metrics.json makes of it lives in :mod:`measure.site`.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.cost_model import CostModel, cost_model
from measure.analysis.fidelity import PairFidelityFigures, TierFidelityFigures, pair_fidelity, tier_fidelity
from measure.analysis.prefill import CausalTiming, causal_timings
from measure.analysis.profile import TierProfile, profile_ratios, tier_costs
from measure.analysis.roofline import Roofline, roofline
from measure.analysis.rules import verdicts
from measure.analysis.timings import PairTiming, TierTiming, pair_timings, tier_timings
from measure.analysis.verdict import Verdict
from measure.record.model import Record


@dataclass(frozen=True)
class Analysis:
    record: Record
    tiers: tuple[TierTiming, ...]
    pairs: tuple[PairTiming, ...]
    verdicts: tuple[Verdict, ...]
    costs: tuple[TierProfile, ...] = ()
    """The cost profile per tier: size, load, memory, first token, latency percentiles, threads."""
    cost_model: CostModel | None = None
    """Timed single calls and what they predict per pair; layout findings. None for records without them."""
    causal: tuple[CausalTiming, ...] = ()
    """Decoder-only tiers: prefill ms per prompt token, time to first token, decode ms per token."""
    fidelity: tuple[TierFidelityFigures, ...] = ()
    """Each judged tier against its reference: KLD, same top-1, perplexity ratio (empty before schema v4)."""
    pair_fidelity: tuple[PairFidelityFigures, ...] = ()
    """Each pair's drafter against its verifier on the verifier's greedy path, beside the acceptance."""
    roofline: Roofline | None = None
    """Each tier's bytes per decode step against the machine's probed bandwidth (None: no tier's bytes counted)."""

    def fidelity_of(self, tier: str) -> TierFidelityFigures | None:
        return next((f for f in self.fidelity if f.tier == tier), None)


def analyse(record: Record) -> Analysis:
    """Timings, profile ratios and the cost model computed once each; the verdicts judge those same values."""
    tiers, pairs = tuple(tier_timings(record)), tuple(pair_timings(record))
    ratios = profile_ratios(record)
    faithful = tier_fidelity(record)
    found = tuple(verdicts(record, tiers=tiers, pairs=pairs, ratios=ratios, fidelity=faithful))
    costs = tuple(tier_costs(record, ratios))
    model, causal = cost_model(record, pairs), tuple(causal_timings(record))
    return Analysis(
        record, tiers, pairs, found, costs, model, causal, faithful, pair_fidelity(record), roofline(record)
    )
