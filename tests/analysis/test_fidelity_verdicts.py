"""Fidelity figures and verdicts read from constructed records: too few rows are no interval."""

from __future__ import annotations

import copy

import pytest
from tests_support import DATA_DIR

from measure.analysis.fidelity import MIN_ROWS, fidelity_verdicts, tier_fidelity
from measure.policy import Policy
from measure.record.io import load_record, validate
from measure.record.model import from_document


@pytest.fixture(scope="module")
def golden() -> dict:
    return load_record(DATA_DIR / "record-v4.json")


def _rows(doc: dict, n: int) -> dict:
    """The record's fidelity pass as if it had scored only its first ``n`` golden rows."""
    doc = copy.deepcopy(doc)
    f = doc["fidelity"]
    for r in f["references"]:
        for key in ("greedy_positions", "golden_positions", "golden_nll"):
            r[key] = r[key][:n]
    for t in f["tiers"]:
        t["golden_nll"] = t["golden_nll"][:n]
        for key in ("kld", "same_top1"):
            t["greedy"][key] = t["greedy"][key][:n]
    for p in f["pairs"]:
        p["positions"] = p["positions"][:n]
        for key in ("kld", "same_top1"):
            p["greedy"][key] = p["greedy"][key][:n]
    validate(doc, "constructed", [])
    return doc


def test_figures_on_fewer_rows_than_an_interval_needs_are_never_judged_faithful(golden):
    loose = Policy(kld_mean_max=1e9, same_top1_min=-1.0, ppl_ratio_max=1e9)  # any figure passes, with an interval
    few, enough = from_document(_rows(golden, 2), "few"), from_document(_rows(golden, MIN_ROWS), "enough")
    assert {f.greedy.rows for f in tier_fidelity(few)} == {2}
    assert not any(f.greedy.interval for f in tier_fidelity(few))
    for v in fidelity_verdicts(few, loose):
        assert v.outcome == "inconclusive" and v.answer == "inconclusive: 2 rows are too few for an interval"
    assert {v.outcome for v in fidelity_verdicts(enough, loose)} == {"success"}


def test_a_row_flips_when_any_of_its_top1_decisions_departs_from_the_reference(golden):
    """Built in the record: row 0 keeps every top-1 decision, row 1 loses one, row 2 loses all of its."""
    doc = _rows(golden, MIN_ROWS)
    ref = doc["fidelity"]["references"][0]
    tier = next(t for t in doc["fidelity"]["tiers"] if t["reference"] == ref["name"])
    same = list(ref["greedy_positions"])
    same[1] -= 1
    same[2] = 0
    tier["greedy"]["same_top1"] = same
    validate(doc, "constructed", [])
    (f,) = [f for f in tier_fidelity(from_document(doc, "flips")) if f.tier == tier["tier"]]
    assert f.greedy.flipped_rows == 2 and f.greedy.flip_rate == 2 / MIN_ROWS
