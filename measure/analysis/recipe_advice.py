"""What to try when no quantized tier of a model is fit to ship: the best recipe an explore run measured for it,
or the one line that runs such a search. Pure functions of the decision and the explore runs' analyses.

A model needs advice when the decision ships no quantized tier of it (it ships the full-precision reference, or
nothing) and at least one of its quantized tiers fails fidelity. The newest ``measure explore`` run that tried
recipes on that model (its reference has the model's name) answers: its decision for the model, which is the
fastest recipe whose fidelity does not fail the policy, is the recipe to try, with its speed against that run's
plain tier (repeats paired, in that run), which is the search's baseline recipe (dynamic ``int8`` unless told)
wherever the search timed one, so the advice reads "this recipe at N× the time of what you would ship today".
Where the search found no recipe fit, or none was run, the advice is the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from measure.analysis.decision import FULL, KIND_MODEL, Decision, decide
from measure.analysis.fidelity import TierFidelityFigures
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.record.model import Record
from measure.record.model.explore import Candidate


@dataclass(frozen=True)
class Explored:
    """The recipe an explore run would ship for the model."""

    run_id: str
    date: str
    recipe: str
    tier: str
    ms_per_token: Estimate
    fidelity: TierFidelityFigures | None
    vs_plain: Estimate | None
    """Its time over the explore run's plain tier's (paired); None where it is the plain tier or kinds differ."""
    plain: str | None
    baseline: str | None
    """The baseline recipe's name where the plain tier is the search's baseline (None: an older search, or none)."""
    baseline_dropped: bool
    """The screening dropped the baseline (it was timed all the same): it cannot meet the policy either."""
    tried: int
    """Recipes the run tried on the model, dropped ones included."""


@dataclass(frozen=True)
class Advice:
    model: str
    kind: str
    failing: tuple[str, ...]
    """The model's quantized tiers in this record whose fidelity fails."""
    best: Explored | None
    searched: str | None
    """The explore run that tried recipes on the model and found none fit (None: no run tried it, or ``best``)."""
    command: str
    """``measure explore <the model's folder>``: the search to run (again, with a wider grid, where ``searched``)."""


def _best(model: str, explored: Sequence[Analysis]) -> tuple[Explored | None, str | None]:
    """The newest explore run that tried ``model``: what it would ship of it, or its run id where nothing."""
    for a in sorted(explored, key=lambda a: a.record.order, reverse=True):
        ex = a.record.explore
        tried = [c for c in ex.candidates if c.reference == model] if ex is not None else []
        if tried:
            found = _shipped(a, model, tried)
            return (found, None) if found is not None else (None, a.record.run_id)
    return None, None


def _shipped(a: Analysis, model: str, tried: list[Candidate]) -> Explored | None:
    """The quantized tier explore run ``a`` would ship of ``model`` (``tried``: its candidates of that model);
    None where it ships none, or only full precision, or one that fails."""
    ship = next((s for s in decide(a).ships if s.model == model), None)
    t = ship.tier if ship is not None else None
    if ship is None or t is None or t.precision in FULL or t.fails:
        return None
    recipe = next((c.recipe_name for c in tried if c.tier == t.tier), t.tier)
    base = next((c for c in tried if c.baseline and c.measured and c.tier == ship.plain), None)
    return Explored(
        a.record.run_id,
        a.record.date,
        recipe,
        t.tier,
        t.ms_per_token,
        t.fidelity,
        ship.vs_plain,
        ship.plain,
        None if base is None else base.recipe_name,
        base is not None and base.dropped is not None,
        len(tried),
    )


def advise(d: Decision, record: Record, explored: Sequence[Analysis] = ()) -> tuple[Advice, ...]:
    """One piece of advice per model of ``d`` that ships no quantized tier while one of them fails fidelity."""
    out = []
    for ship in d.ships:
        if ship.model.startswith(KIND_MODEL) or (ship.tier is not None and ship.tier.precision not in FULL):
            continue
        failing = tuple(s.tier for s in d.speeds if s.model == ship.model and s.precision not in FULL and s.fails)
        if not failing:
            continue
        best, searched = _best(ship.model, explored)
        folder = record.tiers[ship.model].path if ship.model in record.tiers else ship.model
        out.append(Advice(ship.model, ship.kind, failing, best, searched, f"measure explore {folder}"))
    return tuple(out)
