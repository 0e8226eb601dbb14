"""The Overview's headline: what it says first, gathered from the current state's analysis.

Per tier its cost, speed against the reference tier, fidelity, framing, other runtimes' parity and verdicts; per
speculative pair its speedups over k, acceptance and preserved rows; and the gates that fail. The Overview's
sentences, its summary table and summary.csv all read this one gathering.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.analyse import Analysis
from measure.analysis.stats import Estimate, paired_ratio
from measure.analysis.timings import PairTiming
from measure.analysis.verdict import Verdict
from measure.record.model import FP32, Record


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
