"""The JSON Schema against the section classes: each class's fields are its part of the schema, key for key.

The mapping (:mod:`measure.record.model.section`): a field is the key of its name, or of :func:`renamed`'s;
a :func:`filed_under` field is the key its entry sits under (a tier's name), a :func:`derived` one is never
stored, so neither is a property. A field with a default is optional in the schema; one without is required.
So a figure added to a class without the schema (or to the schema without the class) fails here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from measure.record.io import schema
from measure.record.model.acceptance import Acceptance, Counts, Differing
from measure.record.model.call_costs import CallTimings, LayoutPair, LayoutVariant, TierCalls
from measure.record.model.explore import Candidate, Explore, Joined, Screen, ScreenFigure, Shard
from measure.record.model.fidelity import Fidelity, FidelityReference, PairFidelity, PathFidelity, TierFidelity
from measure.record.model.framing import Framing, FramingSample
from measure.record.model.framing_blocks import Block, LayerDiff
from measure.record.model.framing_leg import Adapter, Execution, Leg
from measure.record.model.framing_tier import Divergence, FramingTier, LegTiming, Miss, Quality
from measure.record.model.genai import GenaiMeasure, GenaiPair, GenaiTier, PairedSpread, Spread
from measure.record.model.instructions import Instructions, InstructionTier
from measure.record.model.plan import PlannedLegRate, PlanOutcome, RunPlan
from measure.record.model.section import derived, filed_under, record_keys, renamed, required_keys
from measure.record.model.wallclock import Case, Wallclock

LEG = ("framing", "legs", "[]")
TIER = (*LEG, "tiers", "[]")
"""Any leg's (the Python leg's tiers are these too, with ``quality`` required by its own ``prefixItems``)."""

SECTIONS: list[tuple[type, tuple[str, ...]]] = [
    (Instructions, ("instructions",)),
    (InstructionTier, ("instructions", "tiers", "*")),
    (RunPlan, ("plan",)),
    (Fidelity, ("fidelity",)),
    (FidelityReference, ("fidelity", "references", "[]")),
    (TierFidelity, ("fidelity", "tiers", "[]")),
    (PairFidelity, ("fidelity", "pairs", "[]")),
    (PathFidelity, ("fidelity", "tiers", "[]", "greedy")),
    (Wallclock, ("wallclock",)),
    (Case, ("wallclock", "cases", "*")),
    (CallTimings, ("wallclock", "call_costs")),
    (TierCalls, ("wallclock", "call_costs", "tiers", "*")),
    (LayoutPair, ("wallclock", "layouts", "*")),
    (LayoutVariant, ("wallclock", "layouts", "*", "merged")),
    (PlanOutcome, ("plan", "outcome")),
    (PlannedLegRate, ("plan", "leg_rates", "[]")),
    (Framing, ("framing",)),
    (FramingSample, ("framing", "sample")),
    (Acceptance, ("framing", "acceptance", "[]")),
    (Counts, ("framing", "acceptance", "[]", "probe")),
    (Differing, ("framing", "acceptance", "[]", "differing", "[]")),
    (Leg, LEG),
    (Execution, (*LEG, "execution")),
    (Adapter, (*LEG, "execution", "adapter")),
    (FramingTier, TIER),
    (Block, (*TIER, "blocks", "[]")),
    (Block, (*TIER, "prefill", "[]")),
    (LayerDiff, (*TIER, "blocks", "[]", "layers", "[]")),
    (Quality, (*TIER, "quality")),
    (Miss, (*TIER, "quality", "misses", "[]")),
    (Divergence, (*TIER, "divergence", "[]")),
    (LegTiming, (*TIER, "timing")),
    (GenaiTier, (*TIER, "genai")),
    (Spread, (*TIER, "genai", "ms_per_step")),
    (Spread, (*TIER, "genai", "first_token_ms")),
    (PairedSpread, (*TIER, "genai", "measure_over_og")),
    (GenaiPair, (*LEG, "speculative", "[]")),
    (Counts, (*LEG, "speculative", "[]", "acceptance")),
    (GenaiMeasure, (*LEG, "speculative", "[]", "measure")),
    (Explore, ("explore",)),
    (Shard, ("explore", "shard")),
    (Joined, ("explore", "joined")),
    (Candidate, ("explore", "candidates", "[]")),
    (Screen, ("explore", "candidates", "[]", "screen")),
    (ScreenFigure, ("explore", "candidates", "[]", "screen", "kld_mean")),
]
"""Each section class and where its object lies in the schema: a property's name, ``[]`` an array's items, ``*``
a map's values."""


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """Follow ``$ref`` (into ``$defs``) and the one object branch of an ``anyOf``/``oneOf``."""
    while True:
        if "$ref" in node:
            node = root["$defs"][node["$ref"].removeprefix("#/$defs/")]
        elif "properties" not in node and any(k in node for k in ("anyOf", "oneOf")):
            branches = [b for b in node.get("anyOf", node.get("oneOf")) if b.get("type") != "null"]
            assert len(branches) == 1, f"more than one object branch in {node}"
            node = branches[0]
        else:
            return node


def schema_object(path: tuple[str, ...], root: dict[str, Any]) -> dict[str, Any]:
    node = root
    for step in path:
        node = _resolve(node, root)
        if step == "[]":
            node = node["items"]
        elif step == "*":
            node = node["additionalProperties"]
        else:
            node = node["properties"][step]
    return _resolve(node, root)


def differences(cls: type, obj: dict[str, Any]) -> list[str]:
    """What a class and its schema object disagree on, in words (empty: they agree)."""
    keys, required = set(record_keys(cls)), set(required_keys(cls))
    props, needed = set(obj["properties"]), set(obj.get("required", ()))
    out = [f"{cls.__name__}: field {k!r} has no schema property" for k in sorted(keys - props)]
    out += [f"{cls.__name__}: schema property {k!r} has no field" for k in sorted(props - keys)]
    name = cls.__name__
    out += [f"{name}: {k!r} is required by the schema, its field has a default" for k in sorted(needed - required)]
    out += [f"{name}: {k!r} has no default, the schema lets records omit it" for k in sorted(required - needed)]
    return out


@pytest.mark.parametrize(("cls", "path"), SECTIONS, ids=[f"{c.__name__}:{'.'.join(p)}" for c, p in SECTIONS])
def test_schema_object_is_the_class(cls: type, path: tuple[str, ...]) -> None:
    assert differences(cls, schema_object(path, schema())) == []


def test_a_field_the_schema_lacks_is_found() -> None:
    """The check can fail: a class with a new figure (and one losing a default) differs from the same schema."""

    @dataclass(frozen=True)
    class Grown:
        tool: str
        valgrind: str
        rows: int
        runs: int
        tiers: dict[str, Any]
        flips: int = 0

    @dataclass(frozen=True)
    class Marked:
        tier: str = filed_under()
        tokens: int = renamed("tokens")
        counts: tuple[int, ...] = renamed("instructions")
        per_token: float = derived(default=0.0)

    root = schema()
    assert differences(Grown, schema_object(("instructions",), root)) == ["Grown: field 'flips' has no schema property"]
    assert differences(Marked, schema_object(("instructions", "tiers", "*"), root)) == []
    assert record_keys(Marked) == ("tokens", "instructions")
