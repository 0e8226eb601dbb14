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
