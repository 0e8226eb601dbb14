"""Comparison outcomes that hold under any sound decision rule: a large clear speedup is "faster".

The decision rule itself may change; these cases are far enough from every boundary that
any rule worth keeping must decide them this way.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from measure.analysis.comparison import compare, compare_records, samples_of
from measure.policy import Policy
from measure.record.model import from_document

DATA = Path(__file__).resolve().parent / "data"


def _doc() -> dict:
    return json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))


def _scaled(doc: dict, case: str, factor: float) -> dict:
    new = copy.deepcopy(doc)
    c = new["wallclock"]["cases"][case]
    c["wall_s"] = [[w * factor for w in rep] for rep in c["wall_s"]]
    return new


def test_a_case_twice_as_fast_is_faster_there_and_nowhere_else():
    base = _doc()
    found = {
        c.case: c
        for c in compare_records(from_document(base, "a"), from_document(_scaled(base, "small-int4", 0.5), "b"))
    }
    fast = found["small-int4"]
    assert fast.outcome == "faster" and fast.kind == "greedy"
    assert fast.ratio.value == pytest.approx(0.5) and fast.ratio.hi < 1
    assert fast.new.hi < fast.base.lo
    assert {c.outcome for n, c in found.items() if n != "small-int4"} <= {"same", "inconclusive"}


def test_a_case_twice_as_slow_is_slower_and_the_band_is_the_wider_of_policy_and_calibration():
    base = _doc()
    new = from_document(_scaled(base, "base-int8", 2.0), "b")
    found = {c.case: c for c in compare_records(from_document(base, "a"), new, Policy(compare_tolerance=0.05))}
    assert found["base-int8"].outcome == "slower" and found["base-int8"].ratio.value == pytest.approx(2.0)
    assert found["base-int8"].tolerance == 0.05
    wide = compare_records(from_document(base, "a"), new, Policy(compare_tolerance=0.05), tolerance=0.2)
    assert {c.tolerance for c in wide} == {0.2}


def test_samples_are_each_cases_ms_per_token_per_repeat():
    doc = _doc()
    samples = samples_of(from_document(doc, "a"))
    assert set(samples) == set(doc["wallclock"]["cases"])
    for name, s in samples.items():
        raw = doc["wallclock"]["cases"][name]
        ms = [1000 * sum(rep) / sum(raw["tokens"]) for rep in raw["wall_s"]]
        assert s.kind == raw["kind"] and s.ms_per_token == pytest.approx(ms)
        assert s.median == s.estimate.value == pytest.approx(np.median(ms))
        assert s.estimate.lo <= s.median <= s.estimate.hi and s.estimate.lo < s.estimate.hi
    doc["wallclock"] = None
    assert samples_of(from_document(doc, "none")) == {}


def test_cases_not_in_both_records_are_not_compared():
    base = _doc()
    new = copy.deepcopy(base)
    del new["wallclock"]["cases"]["base-fp32"]
    found = compare_records(from_document(base, "a"), from_document(new, "b"))
    assert {c.case for c in found} == set(new["wallclock"]["cases"])
    empty = copy.deepcopy(base)
    empty["wallclock"] = None
    assert compare_records(from_document(base, "a"), from_document(empty, "b")) == []


def test_a_comparison_is_reproducible_from_the_records():
    base, new = _doc(), _scaled(_doc(), "small-int4", 1.02)
    first = compare_records(from_document(base, "a"), from_document(new, "b"))
    again = compare_records(from_document(base, "a"), from_document(new, "b"))
    assert first == again


def test_a_case_missing_from_base_or_without_samples_is_skipped_not_the_rest():
    base, new = _doc(), _doc()
    first = next(iter(new["wallclock"]["cases"]))
    del base["wallclock"]["cases"][first]  # the first case NEW lists has nothing to compare with
    found = compare_records(from_document(base, "a"), from_document(new, "b"))
    assert {c.case for c in found} == set(new["wallclock"]["cases"]) - {first}
    samples = samples_of(from_document(_doc(), "a"))
    empty = {n: replace(s, ms_per_token=()) if n == first else s for n, s in samples.items()}
    one = {n: replace(s, ms_per_token=s.ms_per_token[:1]) if n == first else s for n, s in samples.items()}
    policy = Policy()
    for short in (empty, one):  # a variance needs two repeats a side
        assert {c.case for c in compare(samples, short, policy)} == set(samples) - {first}
        assert {c.case for c in compare(short, samples, policy)} == set(samples) - {first}


def test_each_cases_interval_comes_from_the_records_seed():
    doc = _doc()
    for i, case in enumerate(doc["wallclock"]["cases"].values()):
        row = case["wall_s"][0]
        case["wall_s"] = [[x * (1 + 0.41 * ((5 * r + i) % 9) / 9) for x in row] for r in range(9)]
        case["run_s"] = [[0.9 * x for x in rep] for rep in case["wall_s"]]
        for key in ("drafter_run_s", "verifier_run_s"):
            if key in case:
                case[key] = [[0.4 * x for x in rep] for rep in case["wall_s"]]
    assert samples_of(from_document(doc, "a")) == samples_of(from_document(doc, "b"))
