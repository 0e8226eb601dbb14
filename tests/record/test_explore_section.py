"""The ``explore`` section: written by the builders, held to the schema, read by the model; absent in older records."""

from __future__ import annotations

import copy

import pytest
from tests_support import DATA_DIR

from measure.errors import MeasureError
from measure.record.io import load_record, validate
from measure.record.model.explore import candidate_part, explore_part, screen_part
from measure.record.model.read import from_document

V5 = load_record(DATA_DIR / "record-v5.json")


def _with_explore() -> dict:
    doc = copy.deepcopy(V5)
    tier = next(iter(doc["tiers"]))
    screen = screen_part(
        8, "failure", {"kld_mean": (0.2, 0.1, 0.3), "same_top1": (0.8, 0.7, 0.9), "ppl_ratio": (1.1, 1.0, 1.2)}
    )
    doc["explore"] = explore_part(
        "grid.toml",
        8,
        "plain",
        1200.0,
        [
            candidate_part(tier, {"name": "int8", "method": "dynamic-int8", "bits": 8}, tier, None, None, None),
            candidate_part(
                tier, {"name": "int4", "method": "matmul-nbits", "bits": 4}, "x-int4", "fidelity", "why", screen
            ),
        ],
    )
    return doc


def test_the_section_validates_and_reads_back():
    doc = _with_explore()
    validate(doc, "test")
    ex = from_document(doc, "test").explore
    assert ex is not None and (ex.grid, ex.screen_rows, ex.role, ex.budget_s) == ("grid.toml", 8, "plain", 1200.0)
    assert [c.recipe_name for c in ex.measured] == ["int8"] and [c.tier for c in ex.dropped] == ["x-int4"]
    screen = ex.dropped[0].screen
    assert screen is not None and screen.outcome == "failure" and screen.kld_mean.lo == 0.1


def _with_baseline() -> dict:
    """The first candidate the search's baseline, dropped by its screening (its figures kept) and timed."""
    doc = _with_explore()
    first, dropped = doc["explore"]["candidates"]
    first.update(baseline=True, dropped="fidelity", reason="past the bound", screen=dropped["screen"])
    return doc


def test_a_baseline_the_screening_dropped_is_measured_and_older_sections_have_none():
    doc = _with_baseline()
    validate(doc, "test")
    ex = from_document(doc, "test").explore
    assert ex is not None and [c.recipe_name for c in ex.measured] == ["int8"]
    (base,) = [c for c in ex.candidates if c.baseline]
    assert base.measured and base.dropped == "fidelity" and ex.baseline_of(base.reference) == base
    older = from_document(_with_explore(), "test").explore
    assert older is not None and not any(c.baseline for c in older.candidates)
    assert "baseline" not in _with_explore()["explore"]["candidates"][0]  # written only where true


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ex: ex["candidates"][0].update(tier="x-int8"), r"measured \(the baseline, screened\) but not in tiers"),
        (lambda ex: ex["candidates"][0].update(screen=None), r"dropped \(fidelity\) but is a tier"),
        (lambda ex: ex["candidates"][1].update(baseline=True, screen=None), "two baseline candidates"),
    ],
)
def test_a_baseline_is_measured_exactly_where_the_screening_scored_it(edit, message):
    doc = _with_baseline()
    edit(doc["explore"])
    with pytest.raises(MeasureError, match=message):
        validate(doc, "test")


def test_records_without_the_section_read_as_none():
    assert from_document(V5, "v5").explore is None


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda ex: ex["candidates"][1].update(dropped="speed"), "dropped"),
        (lambda ex: ex["candidates"][0]["recipe"].update(bits=3), "bits"),
        (lambda ex: ex.update(role="verifier"), "role"),
        (lambda ex: ex["candidates"][0].update(extra=1), "extra"),
    ],
)
def test_the_schema_refuses_a_malformed_section(edit, field):
    doc = _with_explore()
    edit(doc["explore"])
    with pytest.raises(MeasureError, match=field):
        validate(doc, "test")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ex: ex["candidates"][0].update(tier="not-a-tier"), r"is measured \(dropped null\) but not in tiers"),
        (lambda ex: ex["candidates"][0].update(dropped="fidelity", reason="x"), r"dropped \(fidelity\) but is a tier"),
        (lambda ex: ex["candidates"][1].update(reason=None), "a dropped candidate says why"),
        (lambda ex: ex["candidates"][1].update(reference="nope"), "tier 'nope' is not in tiers"),
    ],
)
def test_the_candidates_must_agree_with_the_runs_tiers(edit, message):
    doc = _with_explore()
    edit(doc["explore"])
    with pytest.raises(MeasureError, match=message):
        validate(doc, "test")
