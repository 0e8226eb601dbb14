"""What to try when no quantized tier of a model is fit: the conditions are built into a recorded explore run's
policy (a bound no tier can meet), never into what this CPU decodes."""

from __future__ import annotations

import copy

from tests_support import DATA_DIR

from measure.analysis.decision import decide
from measure.analysis.recipe_advice import advise
from measure.analysis.record_analysis import Analysis, analyse
from measure.record.io import load_record
from measure.record.model import from_document

EXPLORE = load_record(DATA_DIR / "record-v5-explore.json")
"""measure explore of lm-small-fp32 and small-fp32 by int8 and int8-nbits (12 golden rows, every recipe kept)."""


def _analysis(doc: dict, kld_max: float | None = None, explore: bool = True) -> Analysis:
    doc = copy.deepcopy(doc)
    if kld_max is not None:  # a bound below every quantized tier's interval: each fails fidelity
        doc["config"]["policy"]["kld_mean_max"] = kld_max
    if not explore:
        doc.pop("explore")
        doc["run_id"] = doc["run_id"][:-6] + "000000"
    return analyse(from_document(doc, "test"))


def test_a_model_with_no_fit_tier_is_told_the_best_recipe_an_explore_run_measured():
    current = _analysis(EXPLORE, kld_max=1e-12, explore=False)
    d = decide(current)
    assert {s.model: (s.tier.tier if s.tier else None) for s in d.ships} == {
        "lm-small-fp32": "lm-small-fp32",
        "small-fp32": "small-fp32",
    }
    searched = _analysis(EXPLORE)
    found = {a.model: a for a in advise(d, current.record, [searched])}
    assert set(found) == {"lm-small-fp32", "small-fp32"}
    lm = found["lm-small-fp32"]
    assert set(lm.failing) == {"lm-small-int8", "lm-small-int8-nbits"}
    assert lm.best is not None and lm.searched is None
    ship = next(s for s in decide(searched).ships if s.model == "lm-small-fp32")
    assert ship.tier is not None and lm.best.tier == ship.tier.tier  # the explore run's own decision, not a guess
    recipe = next(c.recipe_name for c in searched.record.explore.candidates if c.tier == lm.best.tier)
    assert lm.best.recipe == recipe and lm.best.run_id == searched.record.run_id and lm.best.tried == 2
    assert lm.best.ms_per_token == ship.tier.ms_per_token and lm.best.fidelity is not None
    assert lm.command == f"measure explore {current.record.tiers['lm-small-fp32'].path}"


def test_without_an_explore_run_the_advice_is_the_command():
    current = _analysis(EXPLORE, kld_max=1e-12, explore=False)
    (first, second) = advise(decide(current), current.record)
    assert first.best is None and first.searched is None and first.command.startswith("measure explore /")
    assert second.model == "small-fp32"


def test_an_explore_run_that_found_nothing_fit_is_named():
    current = _analysis(EXPLORE, kld_max=1e-12, explore=False)
    strict = _analysis(EXPLORE, kld_max=1e-12)
    for a in advise(decide(current), current.record, [strict]):
        assert a.best is None and a.searched == strict.record.run_id


def test_a_model_with_a_fit_quantized_tier_needs_no_advice():
    current = _analysis(EXPLORE, explore=False)
    assert advise(decide(current), current.record, [_analysis(EXPLORE)]) == ()


def test_the_record_says_it_is_a_search_among_its_parts():
    assert from_document(copy.deepcopy(EXPLORE), "x").parts[-1] == "explore"
    assert "explore" not in _analysis(EXPLORE, explore=False).record.parts


def _baseline(doc: dict, tier: str, dropped: bool) -> dict:
    """``doc`` with ``tier`` as the search's baseline and the run's plain tier (lm-small-int8 a verifier)."""
    doc = copy.deepcopy(doc)
    for t in doc["config"]["tiers"]:
        if t["name"] in ("lm-small-int8", tier):
            t["role"] = "plain" if t["name"] == tier else "verifier"
            doc["tiers"][t["name"]]["role"] = t["role"]
    base = next(c for c in doc["explore"]["candidates"] if c["tier"] == tier)
    assert base["screen"] is not None  # scored by the screening: timed even where it dropped it
    base["baseline"] = True
    if dropped:
        base.update(dropped="fidelity", reason="on the first 12 golden rows, mean KLD > bound (role plain)")
    return doc


def test_the_best_recipe_is_read_against_the_searchs_baseline_even_where_screening_dropped_it():
    """The recorded search with int8-nbits as its baseline (the plain tier), dropped by its screening but timed:
    the advice for lm-small-fp32 (the run's own decision: lm-small-int8) states its time against that baseline
    recipe; unmarked, against the run's plain tier as before."""
    current = _analysis(EXPLORE, kld_max=1e-12, explore=False)
    searched = _analysis(_baseline(EXPLORE, "lm-small-int8-nbits", dropped=True))
    (lm,) = [a for a in advise(decide(current), current.record, [searched]) if a.model == "lm-small-fp32"]
    ship = next(s for s in decide(searched).ships if s.model == "lm-small-fp32")
    assert lm.best is not None and ship.tier is not None and lm.best.tier == ship.tier.tier
    assert lm.best.plain == "lm-small-int8-nbits" and lm.best.baseline == "int8-nbits" and lm.best.baseline_dropped
    from measure.site.pages.decision import _advice

    assert lm.best.tier == "lm-small-int8" and lm.best.vs_plain is not None  # the recorded figures' decision
    text = str(_advice(lm))
    assert "the time of baseline recipe int8-nbits (lm-small-int8-nbits, which the screening dropped)" in text
    kept = _analysis(_baseline(EXPLORE, "lm-small-int8-nbits", dropped=False))
    (lm,) = [a for a in advise(decide(current), current.record, [kept]) if a.model == "lm-small-fp32"]
    assert lm.best is not None and lm.best.baseline == "int8-nbits" and not lm.best.baseline_dropped
    (old,) = [a for a in advise(decide(current), current.record, [_analysis(EXPLORE)]) if a.model == "lm-small-fp32"]
    assert old.best is not None and old.best.baseline is None
