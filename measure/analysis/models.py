"""Which tiers are one model: a model is what was exported, whichever tool exported it and at whatever precision.

A tier names its model where its config entry or its tier.json says ``model`` (two exports of one model by two
tools, optimum and onnxruntime-genai's builder, name one model); otherwise its quantization source chain decides
(its fidelity reference's model, that tier's in turn), and a full-precision tier nobody named is a model of its own.
A model's **reference** is its timed full-precision tier: a ship line's speed is against it, and without one the
ship line says what is missing instead of resting on another model's time. Pure functions of one record.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.record.model import Record

FULL = ("fp32", "fp16")


@dataclass(frozen=True)
class Model:
    name: str
    kind: str
    tiers: tuple[str, ...]
    """The run's tiers that export it, every export and precision, in the record's order."""
    sources: tuple[str, ...]
    """Its full-precision exports the source chains end at (timed or not), each an export of the model."""
    reference: str | None
    """Its timed full-precision tier (the config's reference role first): what its tiers' speed is against."""
    named: bool
    """Whether a config or tier.json named the model (else its source chain did)."""
    timed: tuple[str, ...] = ()
    """Its tiers the wall-clock suite timed."""

    @property
    def missing(self) -> str | None:
        """What a ship line lacks without a timed reference: its untimed full-precision sources, named."""
        if self.reference is not None:
            return None
        untimed = [s for s in self.sources if s not in self.timed]
        if not untimed:
            return "no full-precision tier of the model was timed: add one as a [[tiers]] entry"
        if len(untimed) == 1:
            return f"its full-precision source {untimed[0]} was not timed: add it as a [[tiers]] entry"
        return f"its full-precision sources {' and '.join(untimed)} were not timed: add one as a [[tiers]] entry"


def _source(record: Record, tier: str) -> str | None:
    """The full-precision tier ``tier`` was judged against (its fidelity reference), None where it has none."""
    found = record.fidelity.tier(tier) if record.fidelity is not None else None
    return found.reference if found is not None and found.reference != tier else None


def source_root(record: Record, tier: str) -> str | None:
    """The end of a tier's source chain: its full-precision source's source, and so on (the tier itself where it is
    full precision and has none; None for a quantized tier nobody judged)."""
    seen = {tier}
    at = tier
    while (up := _source(record, at)) is not None and up not in seen:
        seen.add(up)
        at = up
        if up not in record.tiers:
            return up
    entry = record.tiers.get(at)
    return at if at != tier or (entry is not None and entry.precision in FULL) else None


def model_of(record: Record, tier: str) -> str | None:
    """The model ``tier`` exports: the name the config or its tier.json gives, else the first one named along its
    source chain, else the chain's full-precision end. None: a quantized tier with no source (not judged)."""
    seen = {tier}
    at: str | None = tier
    while at is not None:
        entry = record.tiers.get(at)
        if entry is not None and entry.model:
            return entry.model
        up = _source(record, at)
        if up is None or up in seen:
            break
        seen.add(up)
        at = up
    return source_root(record, tier)


def models(record: Record, timed: set[str] | frozenset[str]) -> tuple[Model, ...]:
    """Every model of the record's tiers, in the order its first tier appears; ``timed``: the tiers the wall-clock
    suite measured (a model's reference must be one of them)."""
    by_name: dict[str, list[str]] = {}
    for name in record.tiers:
        model = model_of(record, name)
        if model is not None:
            by_name.setdefault(model, []).append(name)
    out = []
    for name, tiers in by_name.items():
        sources = tuple(dict.fromkeys(r for t in tiers if (r := source_root(record, t)) is not None))
        full = [t for t in tiers if t in timed and record.tiers[t].precision in FULL]
        reference = next((t for t in full if record.tiers[t].role == "reference"), full[0] if full else None)
        named = any(record.tiers[t].model for t in tiers)
        timed_here = tuple(t for t in tiers if t in timed)
        out.append(Model(name, record.tiers[tiers[0]].kind, tuple(tiers), sources, reference, named, timed_here))
    return tuple(out)
