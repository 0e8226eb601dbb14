"""Every timed greedy tier as the decision reads it (its model, speed, fidelity, what rules it out, the recipe that
made it), and each model's speed-fidelity Pareto front. Pure functions of one analysis.

A front is per **model**, never per kind: two models of one kind are judged against two references, so one model's
mean KLD says nothing about another's, and a tier of one model never hides a tier of another from its front.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.fidelity import TierFidelityFigures, unjudged_why
from measure.analysis.models import model_of
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.analysis.verdict import Verdict, clause

FULL = ("fp32", "fp16")
KIND_MODEL = "kind:"
"""A model name that is a kind's tiers, unjudged (a record without a fidelity pass): ``kind:seq2seq``."""


@dataclass(frozen=True)
class Speed:
    """One greedy tier as the decision reads it."""

    tier: str
    kind: str
    role: str
    precision: str
    model: str
    """The full-precision source it belongs to (its fidelity reference, else itself)."""
    ms_per_token: Estimate
    fidelity: TierFidelityFigures | None
    faithful: Verdict | None
    """The tier's fidelity verdict (None: the tier is a reference, or no fidelity pass ran)."""
    accuracy_level: int | None
    """An int4 tier's MatMulNBits accuracy level (0: unset; 4: int8 activations), None for other precisions."""

    blocked: str | None = None
    """Why a judgment rules the tier out of shipping (a gated check failing), None where none does."""
    recipe: str | None = None
    """The recipe's name where ``measure explore`` made the tier (its ``explore`` candidate), else None."""

    @property
    def fails(self) -> bool:
        return self.blocked is not None or (self.faithful is not None and self.faithful.outcome == "failure")


def fidelity_kld(s: Speed) -> float | None:
    """A tier's mean KLD against its reference: 0 for a full-precision tier unjudged, None where unknown."""
    if s.fidelity is not None:
        return s.fidelity.greedy.kld_mean.value
    return 0.0 if s.precision in FULL else None


def pareto_fronts(found: tuple[Speed, ...]) -> dict[str, tuple[str, ...]]:
    """Per model, in first-seen order: its tiers that no tier of the same model beats on both speed and mean KLD,
    fastest first. Tiers without a KLD (unjudged) are on no front."""
    out: dict[str, tuple[str, ...]] = {}
    for model in dict.fromkeys(s.model for s in found):
        points = sorted(
            (s.ms_per_token.value, kld, s.tier)
            for s in found
            if s.model == model and (kld := fidelity_kld(s)) is not None
        )
        front, best = [], float("inf")
        for _, kld, tier in points:
            if kld < best:
                front.append(tier)
                best = kld
        out[model] = tuple(front)
    return out


def speeds(a: Analysis) -> tuple[Speed, ...]:
    """Every timed greedy tier with its model, fidelity and verdict. Without a fidelity pass nothing says which
    tiers share a source, so the model of each tier is its kind (``KIND_MODEL``): one fastest tier per kind."""
    r = a.record
    verdicts = {v.key: v for v in a.verdicts if v.topic == "fidelity"}
    gated = {v.key: v for v in a.verdicts if v.gate and v.key in r.tiers}
    recipes = {c.tier: c.recipe_name for c in r.explore.measured} if r.explore is not None else {}
    out = []
    for t in a.tiers:
        entry = r.tiers[t.tier]
        if a.fidelity and unjudged_why(r, t.tier):  # no model to ship it for: said apart (Decision.unjudged)
            continue
        level = entry.nbits.accuracy_level if entry.nbits else None
        model = model_of(r, t.tier) if a.fidelity else None  # unjudged, no tier is fit to ship: one line per kind
        gate = gated.get(t.tier)
        out.append(
            Speed(
                t.tier,
                entry.kind,
                entry.role,
                entry.precision,
                model or KIND_MODEL + entry.kind,
                t.ms_per_token,
                a.fidelity_of(t.tier),
                verdicts.get(t.tier),
                level,
                clause(gate) if gate is not None else None,
                recipes.get(t.tier),
            )
        )
    return tuple(out)
