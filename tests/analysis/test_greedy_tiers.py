"""The greedy tiers as the decision reads them, and their Pareto fronts: per model, from records built to mean one
thing each (the v4 golden record's timings set by :func:`tests_support.timed_cases`, its KLDs scaled by hand)."""

from __future__ import annotations

import pytest
from tests_support import DATA_DIR, timed_cases

from measure.analysis.decision import decide
from measure.analysis.greedy_tiers import fidelity_kld, pareto_fronts, speeds
from measure.analysis.record_analysis import Analysis, analyse
from measure.record.io import load_record, validate
from measure.record.model import from_document


@pytest.fixture(scope="module")
def golden() -> dict:
    return load_record(DATA_DIR / "record-v4.json")


def _analysis(doc: dict) -> Analysis:
    validate(doc, "constructed", [])
    return analyse(from_document(doc, "constructed"))


def _two_models_one_kind(golden: dict) -> dict:
    """Two encoder-decoder models (base-fp32 with base-int8, small-fp32 with small-int4): small-int4 the fastest,
    base-int8 a thousand times further from its own reference than it was, so small-int4 is faster and, by the
    number alone, closer; yet their KLDs are against two references and do not compare."""
    doc = timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10})
    base = next(t for t in doc["fidelity"]["tiers"] if t["tier"] == "base-int8")
    base["greedy"]["kld"] = [x * 1000 for x in base["greedy"]["kld"]]
    return doc


def test_each_model_has_its_own_front_even_where_a_tier_of_another_model_of_its_kind_beats_it(golden):
    d = decide(_analysis(_two_models_one_kind(golden)))
    by = {s.tier: s for s in d.speeds}
    assert {s.kind for s in d.speeds} == {"seq2seq"}  # one kind, two models
    small, base = by["small-int4"], by["base-int8"]
    assert small.model != base.model
    kld_small, kld_base = fidelity_kld(small), fidelity_kld(base)
    assert kld_small is not None and kld_base is not None
    assert small.ms_per_token.value < base.ms_per_token.value and kld_small < kld_base  # the condition built
    assert d.fronts == {"base-fp32": ("base-int8", "base-fp32"), "small-fp32": ("small-int4",)}


def test_a_front_holds_exactly_the_tiers_of_its_model_nothing_of_it_beats_on_both(golden):
    """The front is computed once, here, per model, fastest first; a tier off it has one of its model both faster
    and closer."""
    d = decide(_analysis(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10})))
    assert set(d.fronts) == {s.model for s in d.speeds}
    kld = {s.tier: (s.ms_per_token.value, fidelity_kld(s)) for s in d.speeds}
    for model, front in d.fronts.items():
        assert front and all(kld[t][1] is not None for t in front)
        assert [kld[t][0] for t in front] == sorted(kld[t][0] for t in front)  # fastest first
        for s in d.speeds:
            if s.model != model or kld[s.tier][1] is None:
                continue
            beaten = any(kld[o][0] < kld[s.tier][0] and kld[o][1] <= kld[s.tier][1] for o in front if o != s.tier)
            assert (s.tier in front) != beaten, s.tier


def test_tiers_of_two_kinds_are_never_on_one_front():
    doc = load_record(DATA_DIR / "record-v3-lm.json")
    d = decide(analyse(from_document(doc, "record-v3-lm.json")))
    of = {s.tier: s for s in d.speeds}
    assert {s.kind for s in d.speeds} == {"seq2seq", "causal"}
    for model, front in d.fronts.items():
        assert {of[t].model for t in front} == {model} and len({of[t].kind for t in front}) == 1


def test_a_tier_an_explore_run_made_carries_its_recipe_and_others_none():
    a = analyse(from_document(load_record(DATA_DIR / "record-v5-explore.json"), "explore"))
    recipes = {s.tier: s.recipe for s in speeds(a)}
    assert recipes["lm-small-int8-nbits"] == "int8-nbits" and recipes["small-int8"] == "int8"
    assert recipes["lm-small-fp32"] is None  # a reference: no recipe made it
    assert pareto_fronts(()) == {}
