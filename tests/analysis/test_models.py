"""Which tiers are one model: a named model over the source chain, the chain's full-precision end otherwise, and a
model's reference only a timed full-precision tier of it."""

from __future__ import annotations

import copy

import pytest
from tests_support import DATA_DIR

from measure.analysis.models import model_of, models, source_root
from measure.record.io import load_record
from measure.record.model import from_document


@pytest.fixture(scope="module")
def doc() -> dict:
    return load_record(DATA_DIR / "record-v5.json")  # base-fp32, base-int8 (from base-fp32), small-int4 (small-fp32)


def test_unnamed_tiers_follow_their_source_chain(doc):
    r = from_document(doc, "x")
    assert [model_of(r, t) for t in r.tiers] == ["base-fp32", "base-fp32", "small-fp32"]
    assert source_root(r, "small-int4") == "small-fp32"
    base, small = models(r, set(r.tiers))
    assert (base.tiers, base.reference, base.missing) == (("base-fp32", "base-int8"), "base-fp32", None)
    assert (small.tiers, small.sources, small.reference) == (("small-int4",), ("small-fp32",), None)
    assert small.missing == "its full-precision source small-fp32 was not timed: add it as a [[tiers]] entry"


def test_a_named_model_holds_every_export_and_its_source_chain(doc):
    named = copy.deepcopy(doc)
    named["tiers"]["base-fp32"]["model"] = "base"  # base-int8 follows its source into it
    named["tiers"]["small-int4"]["model"] = "base"  # another export of the same model, by its own name
    r = from_document(named, "x")
    assert {t: model_of(r, t) for t in r.tiers} == dict.fromkeys(r.tiers, "base")
    (base,) = models(r, set(r.tiers))
    assert (base.sources, base.reference, base.named) == (("base-fp32", "small-fp32"), "base-fp32", True)
    (untimed,) = models(r, {"base-int8", "small-int4"})  # its full-precision tier not timed: no reference
    assert untimed.reference is None
    assert (
        untimed.missing
        == "its full-precision sources base-fp32 and small-fp32 were not timed: add one as a [[tiers]] entry"
    )
