"""Regression decisions on a recorded run: no change against itself; a 30% slowdown on one case shows there only.

Real A/A runs and a real injected slowdown live in ``benchmarks/bench_compare.py``:
on a shared host two runs minutes apart differ by more than any unit test may assume.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import numpy as np
import pytest
from tests_support import DATA_DIR

from measure.analysis.comparison import SAME_RUN, CaseSamples, Drift, compare_records, pairing_of, samples_of
from measure.analysis.comparison import compare as compare_samples
from measure.analysis.stats import summarize
from measure.policy import Policy
from measure.record.model import from_document

DATA = DATA_DIR


def _doc():
    return json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))


def compare(
    base: dict, new: dict, policy: Policy | None = None, tolerance: float | None = None, drift=None, paired=None
):
    return compare_records(
        from_document(base, "base"), from_document(new, "new"), policy, tolerance, drift, paired=paired
    )


def test_a_record_against_itself_is_paired_by_construction_and_every_case_is_same():
    doc = _doc()
    base, new = from_document(doc, "base"), from_document(copy.deepcopy(doc), "new")
    assert pairing_of(base, new) == pairing_of(base, new, "cpu") == SAME_RUN
    found = compare_records(base, new, Policy())
    assert found and {c.outcome for c in found} == {"same"}
    assert all(c.ratio.value == c.ratio.lo == c.ratio.hi == 1.0 and c.p_change == 1.0 for c in found)
    # Edited after the fact (other samples under the same run id), it is two runs again.
    edited = copy.deepcopy(doc)
    edited["wallclock"]["cases"]["base-int8"]["wall_s"][0][0] *= 1.01
    assert pairing_of(base, from_document(edited, "edited")) is None


def test_unpaired_a_record_against_itself_is_never_a_change_and_same_where_its_noise_allows():
    doc = _doc()
    found = compare(doc, doc, Policy(), paired=False)
    assert found and all(c.ratio.value == 1.0 and c.ratio.lo < 1 < c.ratio.hi for c in found)
    assert all(c.p_change == 1.0 for c in found)
    # "same" needs the 95% interval inside +/-5%: t(8) * sd * sqrt(2/5) < log(1.05), i.e. sd below 3.3% at 5 repeats.
    # Four of this record's five cases are that steady; the k=4 pair (sd 5.4% per repeat) is not.
    outcomes = {c.case: c.outcome for c in found}
    assert outcomes.pop("small-int4->base-int8@k4") == "inconclusive"
    assert set(outcomes.values()) == {"same"}
    assert all(c.ratio.level == 0.95 for c in found)
    # Under a wider band every case is "same": the interval, not a separate rule, decides it.
    assert {c.outcome for c in compare(doc, doc, Policy(compare_tolerance=0.1), paired=False)} == {"same"}


def test_a_scaled_case_is_slower_there_and_nowhere_else():
    base = _doc()
    new = copy.deepcopy(base)
    case = new["wallclock"]["cases"]["small-int4"]
    case["wall_s"] = [[w * 1.3 for w in rep] for rep in case["wall_s"]]
    result = {c.case: c for c in compare(base, new, Policy())}
    assert result["small-int4"].outcome == "slower"
    assert result["small-int4"].ratio.value == pytest.approx(1.3)
    assert {c.outcome for n, c in result.items() if n != "small-int4"} <= {"same", "inconclusive"}


def test_a_case_made_faster_is_faster():
    base = _doc()
    new = copy.deepcopy(base)
    case = new["wallclock"]["cases"]["base-int8"]
    case["wall_s"] = [[w * 0.7 for w in rep] for rep in case["wall_s"]]
    result = {c.case: c for c in compare(base, new, Policy())}
    assert result["base-int8"].outcome == "faster"
    assert result["base-int8"].ratio.value == pytest.approx(0.7)
    assert result["base-int8"].ratio.hi < 0.95


def _samples(values: dict[str, list[float]]) -> dict[str, CaseSamples]:
    return {n: CaseSamples("greedy", tuple(v), summarize(v)) for n, v in values.items()}


def test_holm_makes_a_borderline_call_inconclusive_when_many_metrics_are_compared():
    base = [1.00, 1.02, 0.98, 1.01, 0.99]
    moved = [x * 1.06 for x in [1.02, 0.99, 1.01, 0.98, 1.03]]  # +6%: raw p about 0.001
    steady = [1.0, 1.01, 0.99, 1.0, 1.0]
    alone = compare_samples(_samples({"a": base}), _samples({"a": moved}), Policy())
    assert alone[0].outcome == "slower" and 0.0005 < alone[0].p_change < 0.01
    raw = alone[0].p_change
    # Beside 99 unchanged cases, Holm multiplies the smallest p by 100: no longer below alpha.
    others = {f"c{i}": steady for i in range(99)}
    many = compare_samples(_samples({"a": base, **others}), _samples({"a": moved, **others}), Policy())
    called = {c.case: c for c in many}
    assert called["a"].p_change == pytest.approx(min(1.0, 100 * raw))
    assert called["a"].outcome == "inconclusive"
    assert {c.outcome for n, c in called.items() if n != "a"} == {"same"}


def test_drift_widens_the_interval_not_the_band():
    base = _doc()
    new = copy.deepcopy(base)
    case = new["wallclock"]["cases"]["small-int4"]
    case["wall_s"] = [[w * 1.3 for w in rep] for rep in case["wall_s"]]
    plain = {c.case: c for c in compare(base, new, Policy())}
    drifting = {c.case: c for c in compare(base, new, Policy(), drift=Drift(0.2, 3.0))}
    assert drifting["small-int4"].tolerance == plain["small-int4"].tolerance == 0.05
    assert drifting["small-int4"].ratio.value == plain["small-int4"].ratio.value
    lo, hi = drifting["small-int4"].ratio.lo, drifting["small-int4"].ratio.hi
    assert lo < plain["small-int4"].ratio.lo and hi > plain["small-int4"].ratio.hi
    assert drifting["small-int4"].outcome == "inconclusive" and plain["small-int4"].outcome == "slower"
    assert drifting["small-int4"].df < plain["small-int4"].df


def test_a_calibrated_tolerance_only_ever_widens_the_band():
    base = _doc()
    new = copy.deepcopy(base)
    case = new["wallclock"]["cases"]["small-int4"]
    case["wall_s"] = [[w * 1.3 for w in rep] for rep in case["wall_s"]]
    wide = {c.case: c for c in compare(base, new, Policy(), tolerance=0.4)}
    assert wide["small-int4"].outcome != "slower" and wide["small-int4"].tolerance == 0.4
    narrow = {c.case: c for c in compare(base, new, Policy(), tolerance=0.001)}
    assert narrow["small-int4"].tolerance == Policy().compare_tolerance


def test_cpu_time_is_a_metric_of_its_own():
    base = _doc()
    for case in base["wallclock"]["cases"].values():
        case["cpu_s"] = [[w * 0.9 for w in rep] for rep in case["wall_s"]]
    new = copy.deepcopy(base)
    case = new["wallclock"]["cases"]["base-int8"]
    case["cpu_s"] = [[c * 1.3 for c in rep] for rep in case["cpu_s"]]  # more CPU, the same wall time
    wall = {c.case: c.outcome for c in compare(base, new)}
    cpu = {c.case: c.outcome for c in compare_records(from_document(base, "b"), from_document(new, "n"), metric="cpu")}
    assert wall["base-int8"] != "slower" and cpu["base-int8"] == "slower"
    assert set(cpu) == set(wall)
    # A record older than the field has no CPU samples: nothing to compare in that metric.
    assert compare_records(from_document(_doc(), "old"), from_document(new, "n"), metric="cpu") == []


def test_aa_false_calls_and_interval_coverage_in_simulation():
    """200 simulated A/A pairs of 15 cases, 7 repeats, lognormal session noise (sd 10%): what compare calls.

    Holm keeps any false call per pair under 5%, so under 1% of cases; the 95% ratio interval of each case
    covers the true ratio (1) 93-97% of the time.
    """
    rng = np.random.default_rng(17)
    names = [f"c{i}" for i in range(15)]
    outcomes, covered = [], []
    for _ in range(200):
        runs = [_samples({n: list(np.exp(0.1 * rng.standard_normal(7))) for n in names}) for _ in range(2)]
        for c in compare_samples(runs[0], runs[1], Policy(compare_tolerance=0.1)):
            outcomes.append(c.outcome)
            covered.append(c.ratio.lo <= 1 <= c.ratio.hi)
    false_calls = sum(o in ("slower", "faster") for o in outcomes) / len(outcomes)
    assert false_calls <= 0.01
    assert 0.93 <= np.mean(covered) <= 0.97
    assert outcomes.count("same") > 0  # reachable: a 10% band against a +/-12% interval half the time


# --- Comparison outcomes that hold under any sound decision rule: a large clear speedup is "faster" ---


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
        assert {c.case for c in compare_samples(samples, short, policy)} == set(samples) - {first}
        assert {c.case for c in compare_samples(short, samples, policy)} == set(samples) - {first}


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
