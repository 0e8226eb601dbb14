"""The full analysis of one record (timings with intervals, pairs, verdicts) and the metrics.json document.

The current record of each machine is analysed in full; every other record
only through its cached :class:`~measure.summary.Summary`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.analysis import PairTiming, TierTiming, pair_timings, tier_timings
from measure.cost import TierCost, tier_costs
from measure.model import Record
from measure.verdicts import Verdict, verdicts


@dataclass(frozen=True)
class Analysis:
    record: Record
    tiers: tuple[TierTiming, ...]
    pairs: tuple[PairTiming, ...]
    verdicts: tuple[Verdict, ...]
    costs: tuple[TierCost, ...] = ()
    """The cost profile per tier: size, load, memory, first token, latency percentiles, threads."""


def analyse(record: Record) -> Analysis:
    tiers, pairs = tuple(tier_timings(record)), tuple(pair_timings(record))
    found = tuple(verdicts(record, tiers=tiers, pairs=pairs))
    return Analysis(record, tiers, pairs, found, tuple(tier_costs(record)))


def _estimate(e: Any) -> dict[str, Any] | None:
    return None if e is None else e.to_dict()


def cost_metrics(c: TierCost) -> dict[str, Any]:
    """One tier's cost profile as metrics.json states it (times in ms, memory in bytes; None where not measured)."""
    return {
        "bytes": c.bytes,
        "load_cold_ms": _estimate(c.load_cold_ms),
        "load_warm_ms": _estimate(c.load_warm_ms),
        "peak_rss_bytes": _estimate(c.peak_rss_bytes),
        "memory_bytes": _estimate(c.memory_bytes),
        "first_token_ms": _estimate(c.first_token_ms),
        "next_token_ms": _estimate(c.next_token_ms),
        "row_ms": _estimate(c.row_ms),
        "token_ms": _estimate(c.token_ms),
        "threads_ms_per_token": {str(n): e.to_dict() for n, e in c.threads_ms_per_token.items()},
        "fastest_threads": c.fastest_threads,
        "size_vs_plain": c.size_vs_plain,
        "load_vs_plain": _estimate(c.load_vs_plain),
        "memory_vs_plain": _estimate(c.memory_vs_plain),
        "first_token_vs_plain": _estimate(c.first_token_vs_plain),
    }


def metrics(latest: dict[str, Analysis]) -> dict[str, Any]:
    """The headline numbers of each machine's current record, for metrics.json."""
    out: dict[str, Any] = {"machines": {}}
    for machine, a in sorted(latest.items()):
        out["machines"][machine] = {
            "run_id": a.record.run_id,
            "date": a.record.date,
            "tiers": {
                t.tier: {
                    "ms_per_token": t.ms_per_token.to_dict(),
                    "ratio_vs_plain": t.ratio_vs_plain.to_dict() if t.ratio_vs_plain else None,
                    "exponent": t.exponent.to_dict() if t.exponent else None,
                    "overhead": t.overhead,
                }
                for t in a.tiers
            },
            "profile": {c.tier: cost_metrics(c) for c in a.costs},
            "pairs": {
                p.case: {
                    "acceptance": p.acceptance,
                    "predicted_speedup": p.predicted_speedup,
                    "observed_speedup": p.observed_speedup.to_dict(),
                }
                for p in a.pairs
            },
            "framing": {
                t.tier: {
                    "argmax_agree": t.argmax_agree,
                    "argmax_total": t.argmax_total,
                    "present_max_abs_diff": t.present_max_abs_diff,
                }
                for t in a.record.python_tiers
            },
            "verdicts": [
                {k: v.to_dict()[k] for k in ("topic", "subject", "outcome", "answer", "value", "lo", "hi")}
                for v in a.verdicts
            ],
        }
    return out
