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


@pytest.mark.parametrize(
    "values",
    [
        [3, 7, 1, 64, 12, 9],  # positions and same-top-1 counts: whole numbers, to the bit
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [0.013, 2.5e-7, 0.41, 1.0 / 3, 7.25, 0.002],  # KLD and NLL sums: to their last bits
        [1e308, 1e308, 3.0, 1e308, 5.0, 2.0],  # sums that overflow: infinite in the same resamples
        [float("nan"), 1.0, 2.0, 3.0, 4.0, 5.0],  # a NaN spoils the resamples that drew it, only those
    ],
)
def test_a_resampled_sum_is_the_gathered_sum(values):
    """Each resample's sum is ``v[idx].sum(axis=1)``, as one product with the draw counts: whole numbers exactly,
    other floats but for the order of the additions (the intervals printed to three figures do not move)."""
    import numpy as np

    from measure.analysis.fidelity import _Draws

    v = np.asarray(values, dtype=float)
    draws = _Draws(20261202, 2000, v.size)
    with np.errstate(over="ignore", invalid="ignore"):
        gathered = v[draws.idx].sum(axis=1)
        summed = draws.sums(v)
    if (v == np.rint(v)).all():
        assert summed.tobytes() == gathered.tobytes()
    assert np.array_equal(np.isfinite(summed), np.isfinite(gathered))
    assert np.array_equal(np.isnan(summed), np.isnan(gathered)) and not np.isnan(summed).all()
    finite = np.isfinite(gathered)
    np.testing.assert_allclose(summed[finite], gathered[finite], rtol=1e-13, atol=0)


def test_a_records_fidelity_figures_are_computed_once_for_its_verdicts(golden, monkeypatch):
    """The verdicts and the unjudged tiers read the same figures: one bootstrap of every tier a record, not two."""
    from measure.analysis import fidelity

    calls = []
    real = fidelity.tier_figures
    monkeypatch.setattr(fidelity, "tier_figures", lambda *a: calls.append(1) or real(*a))
    record = from_document(golden, "golden")
    judged = fidelity_verdicts(record, record.config.policy)
    assert len(calls) == 1 and {v.subject for v in judged} >= {f.tier for f in real(record.fidelity, _boot(record))}


def _boot(record):
    from measure.analysis.timings import bootstrap_of

    return bootstrap_of(record)


def test_sums_past_a_floats_range_give_figures_without_a_numpy_warning(golden):
    """A record's KLD sums and golden NLLs of 1e308 (which validate accepts) are judged in silence: a warning
    would be a second line on a verb's stderr."""
    import warnings

    doc = copy.deepcopy(golden)
    for t in doc["fidelity"]["tiers"]:
        t["golden_nll"] = [1e308] * len(t["golden_nll"])
        t["greedy"]["kld"] = [1e308] * len(t["greedy"]["kld"])
    record = from_document(doc, "constructed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        figures = tier_fidelity(record)
        fidelity_verdicts(record, record.config.policy)
    assert figures and all(f.greedy.kld_mean.value > 0 for f in figures)
