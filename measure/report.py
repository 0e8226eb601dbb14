"""The full analysis of one record (timings with intervals, pairs, verdicts) and the metrics.json document.

The current record of each machine is analysed in full; every other record
only through its cached :class:`~measure.summary.Summary`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.analysis import PairTiming, TierTiming, pair_timings, tier_timings
from measure.model import Record
from measure.verdicts import Verdict, verdicts


@dataclass(frozen=True)
class Analysis:
    record: Record
    tiers: tuple[TierTiming, ...]
    pairs: tuple[PairTiming, ...]
    verdicts: tuple[Verdict, ...]


def analyse(record: Record) -> Analysis:
    tiers, pairs = tuple(tier_timings(record)), tuple(pair_timings(record))
    return Analysis(record, tiers, pairs, tuple(verdicts(record, tiers=tiers, pairs=pairs)))


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
