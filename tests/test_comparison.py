"""Regression decisions on a recorded run: no change against itself; a 30% slowdown on one case shows there only.

Real A/A runs and a real injected slowdown live in ``benchmarks/bench_compare.py``:
on a shared host two runs minutes apart differ by more than any unit test may assume.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from measure.comparison import compare_records
from measure.model import from_document
from measure.policy import Policy

DATA = Path(__file__).resolve().parent / "data"


def _doc():
    return json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))


def compare(base: dict, new: dict, policy: Policy | None = None, tolerance: float | None = None):
    return compare_records(from_document(base, "base"), from_document(new, "new"), policy, tolerance)


def test_a_record_against_itself_is_never_a_change():
    doc = _doc()
    found = compare(doc, doc, Policy())
    assert found and {c.outcome for c in found} <= {"same", "inconclusive"}
    assert "same" in {c.outcome for c in found}
    assert all(c.ratio.value == 1.0 and c.ratio.lo < 1 < c.ratio.hi for c in found)


def test_a_scaled_case_is_slower_there_and_nowhere_else():
    base = _doc()
    new = copy.deepcopy(base)
    case = new["wallclock"]["cases"]["small-int4"]
    case["wall_s"] = [[w * 1.3 for w in rep] for rep in case["wall_s"]]
    result = {c.case: c for c in compare(base, new, Policy())}
    assert result["small-int4"].outcome == "slower"
    assert result["small-int4"].ratio.value == pytest.approx(1.3)
    assert {c.outcome for n, c in result.items() if n != "small-int4"} <= {"same", "inconclusive"}


def test_holm_makes_a_borderline_call_inconclusive_when_many_metrics_are_compared():
    base = _doc()
    new = copy.deepcopy(base)
    for case in new["wallclock"]["cases"].values():
        case["wall_s"] = [[w * 1.3 for w in rep] for rep in case["wall_s"]]
    alone = compare(base, new, Policy())
    assert {c.outcome for c in alone} == {"slower"}
    # The smallest raw p-value is 1/401 (400 resamples); alpha between it and m/401 calls every case
    # slower without a multiplicity correction, and none with Holm (m * p for the smallest p).
    strict = compare(base, new, Policy(compare_alpha=2 / 401))
    assert len(strict) >= 3 and "slower" not in {c.outcome for c in strict}
    assert all(c.p_slower >= len(strict) / 401 - 1e-12 for c in strict)


def test_a_calibrated_tolerance_only_ever_widens_the_band():
    base = _doc()
    new = copy.deepcopy(base)
    case = new["wallclock"]["cases"]["small-int4"]
    case["wall_s"] = [[w * 1.3 for w in rep] for rep in case["wall_s"]]
    wide = {c.case: c for c in compare(base, new, Policy(), tolerance=0.4)}
    assert wide["small-int4"].outcome != "slower" and wide["small-int4"].tolerance == 0.4
    narrow = {c.case: c for c in compare(base, new, Policy(), tolerance=0.001)}
    assert narrow["small-int4"].tolerance == Policy().compare_tolerance
