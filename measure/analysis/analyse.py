"""The full analysis of one record (timings with intervals, pairs, verdicts) and the metrics.json document.

The current record of each machine is analysed in full; every other record
only through its cached :class:`~measure.analysis.summary.Summary`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.analysis.cost_model import CostModel, cost_model
from measure.analysis.current import Current
from measure.analysis.profile import TierCost, tier_costs
from measure.analysis.stats import Estimate, paired_ratio
from measure.analysis.timings import PairTiming, TierTiming, pair_timings, tier_timings
from measure.analysis.verdicts import Verdict, verdicts
from measure.record.model import FP32, Record


@dataclass(frozen=True)
class Analysis:
    record: Record
    tiers: tuple[TierTiming, ...]
    pairs: tuple[PairTiming, ...]
    verdicts: tuple[Verdict, ...]
    costs: tuple[TierCost, ...] = ()
    """The cost profile per tier: size, load, memory, first token, latency percentiles, threads."""
    cost_model: CostModel | None = None
    """Timed single calls and what they predict per pair; layout findings. None for records without them."""


def analyse(record: Record) -> Analysis:
    tiers, pairs = tuple(tier_timings(record)), tuple(pair_timings(record))
    found = tuple(verdicts(record, tiers=tiers, pairs=pairs))
    return Analysis(record, tiers, pairs, found, tuple(tier_costs(record)), cost_model(record, pairs))


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


def _cost_metrics(m: CostModel | None) -> dict[str, Any]:
    """The measured cost model as metrics.json states it; nothing for records without it."""
    if m is None:
        return {}
    return {
        "cost_model": {
            r.case: {
                "leviathan": r.prediction.leviathan,
                "measured_cost": r.prediction.measured_cost,
                "batch_ratio": r.prediction.batch_ratio,
                "efficiency": r.efficiency.to_dict(),
                "inside_onnxruntime": None if r.inside is None else r.inside.to_dict(),
                "calls_in_loop_over_alone": r.in_loop,
                "harness": r.harness,
            }
            for r in m.pairs
        },
        "layouts": {
            f.name: {"merged_over_split": f.ratio.to_dict(), "same_outputs": f.same_outputs} for f in m.layouts
        },
    }


def metrics(
    latest: dict[str, Analysis], states: dict[str, Current] | None = None, reference: str | None = None
) -> dict[str, Any]:
    """The headline numbers of each machine's current state, for metrics.json.

    ``states``: where each machine's parts come from (``parts``: run id and date per part; ``builds_differ``:
    how their builds differ, empty for one build); ``reference``: the machine the Overview answers for.
    """
    out: dict[str, Any] = {"reference_machine": reference, "machines": {}}
    for machine, a in sorted(latest.items()):
        state = (states or {}).get(machine)
        sources = state.sources if state else dict.fromkeys(a.record.parts, a.record)
        out["machines"][machine] = {
            "run_id": a.record.run_id,
            "date": a.record.date,
            "parts": {p: {"run_id": r.run_id, "date": r.date} for p, r in sources.items()},
            "builds_differ": list(state.differences()) if state else [],
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
            **_cost_metrics(a.cost_model),
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


@dataclass(frozen=True)
class TierLine:
    """One tier in the headline table: cost, speed against the reference, fidelity, stability, its verdicts."""

    tier: str
    role: str
    precision: str
    size_bytes: int
    ms_per_token: Estimate | None
    vs_reference: Estimate | None
    """This tier's ms/token over the reference tier's, repeats paired (below 1: faster)."""
    exact: int | None
    rows: int | None
    same_as_reference: int | None
    """Golden rows this tier decodes to the same text as the reference tier."""
    framing_changed: int | None
    framing_total: int | None
    runtimes: tuple[tuple[str, str], ...]
    """(runtime, "64/64" or a status) for every leg after Python onnxruntime."""
    verdicts: tuple[Verdict, ...]


@dataclass(frozen=True)
class PairLine:
    pair: str
    drafter: str
    verifier: str
    ks: tuple[PairTiming, ...]
    verdict: Verdict | None
    """The pair's verdict over every k."""
    acceptance: float | None
    preserved: str | None


@dataclass(frozen=True)
class Headline:
    """What the Overview says first: the RESULTS entry's facts, from the current record."""

    reference: str | None
    plain: str | None
    lite: str | None
    tiers: tuple[TierLine, ...]
    pairs: tuple[PairLine, ...]
    gates_failed: tuple[Verdict, ...]


def _reference(record: Record) -> str | None:
    """The tier the headline measures against: the reference role, else the first fp32 tier."""
    by_role = next((n for n, t in record.tiers.items() if t.role == "reference"), None)
    return by_role or next((n for n, t in record.tiers.items() if t.precision in FP32), None)


def _vs(record: Record, tier: str, reference: str | None) -> Estimate | None:
    cases = record.wallclock.cases if record.wallclock else {}
    a, b = cases.get(tier), cases.get(reference or "")
    if a is None or b is None or not a.measured or not b.measured or a.repeats != b.repeats:
        return None
    return paired_ratio(a.per_repeat_ms_per_token, b.per_repeat_ms_per_token)


def _tier_line(a: Analysis, name: str, reference: str | None) -> TierLine:
    r = a.record
    tier = r.tiers[name]
    timing = next((t for t in a.tiers if t.tier == name), None)
    framing = next((t for t in r.python_tiers if t.tier == name), None)
    ref = next((t for t in r.python_tiers if t.tier == reference), None)
    same = None
    if framing is not None and ref is not None:
        same = sum(x == y for x, y in zip(framing.outputs, ref.outputs, strict=False))
    runtimes = []
    for leg in r.legs[1:]:
        t = leg.tier(name)
        if not leg.measured or t is None or not t.measured:
            runtimes.append((leg.name, "not measured"))
        elif framing is not None and t.output_ids is not None and framing.output_ids is not None:
            equal = sum(x == y for x, y in zip(framing.output_ids, t.output_ids, strict=False))
            runtimes.append((leg.name, f"{equal}/{len(framing.output_ids)}"))
        else:
            runtimes.append((leg.name, "-"))
    quality = framing.quality if framing else None
    return TierLine(
        name,
        tier.role,
        tier.precision,
        tier.total_bytes,
        timing.ms_per_token if timing else None,
        _vs(r, name, reference) if name != reference else None,
        quality.exact if quality else None,
        quality.rows if quality else None,
        same,
        framing.argmax_total - framing.argmax_agree if framing else None,
        framing.argmax_total if framing else None,
        tuple(runtimes),
        tuple(v for v in a.verdicts if v.key == name),
    )


def headline(a: Analysis) -> Headline:
    r = a.record
    reference = _reference(r)
    role = {t.role: n for n, t in reversed(r.tiers.items())}
    pairs = []
    for name in dict.fromkeys(p.pair for p in a.pairs):
        ks = tuple(sorted((p for p in a.pairs if p.pair == name), key=lambda p: p.k))
        acc = next((x for x in (r.framing.acceptance if r.framing else ()) if x.name == name), None)
        pairs.append(
            PairLine(
                name,
                ks[0].drafter,
                ks[0].verifier,
                ks,
                next((v for v in a.verdicts if v.topic == "speculative-speedup" and v.key == name), None),
                acc.runtime.ratio if acc else None,
                f"{acc.preserved}/{acc.rows}" if acc else None,
            )
        )
    return Headline(
        reference,
        role.get("plain"),
        role.get("lite"),
        tuple(_tier_line(a, n, reference) for n in r.tiers),
        tuple(pairs),
        tuple(v for v in a.verdicts if v.gate and v.outcome not in ("success", "info")),
    )
