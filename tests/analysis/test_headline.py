"""A Summary row has one reference: the tier's own source for its speed and its fidelity alike."""

from __future__ import annotations

from tests_support import DATA_DIR, timed_cases

from measure.analysis.headline import headline
from measure.analysis.record_analysis import analyse
from measure.record.io import load_record, validate
from measure.record.model import from_document


def _lines(ms: dict[str, float]) -> dict:
    doc = timed_cases(load_record(DATA_DIR / "record-v4.json"), ms)
    validate(doc, "constructed", [])
    return {t.tier: t for t in headline(analyse(from_document(doc, "constructed"))).tiers}


def test_a_tier_whose_source_was_not_timed_states_no_ratio_against_another_tier_as_its_reference():
    """small-int4 was made from small-fp32, which the run judged it against but did not time: its row's reference
    is small-fp32 (no speed ratio), and the kind's reference base-fp32 is its own, named comparison."""
    lines = _lines({"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10})
    lite = lines["small-int4"]
    assert lite.fidelity is not None and lite.reference == lite.fidelity.reference == "small-fp32"
    assert lite.vs_reference is None
    assert lite.kind_reference == "base-fp32" and lite.vs_kind_reference is not None
    assert 0.2 < lite.vs_kind_reference.value < 0.3  # 0.10 over 0.40 ms/token, paired
    plain = lines["base-int8"]
    assert plain.reference == plain.fidelity.reference == "base-fp32" and plain.vs_reference is not None
    assert plain.kind_reference is None and plain.vs_kind_reference is None  # its source is the kind's reference
