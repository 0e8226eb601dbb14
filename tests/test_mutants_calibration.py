"""A/A calibration over many synthetic drifts: the tolerance is the stated quantile, not the largest drift.

Runs are small stand-ins with the attributes pairing reads (:class:`measure.analysis.calibration.AARun`),
so the drifts are exactly the ones written here and the quantile can be worked out by hand.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from measure.analysis.calibration import AAPair, Calibration, build_key, calibrate, from_dict
from measure.analysis.comparison import CaseSamples
from measure.analysis.stats import Estimate
from measure.errors import MeasureError
from measure.record.io import SCHEMA_VERSION, load_record
from measure.record.model import from_document
from measure.results.calibration_file import load_calibration, write

MACHINE = "m1"
DATA = Path(__file__).resolve().parent / "data"


def _case(median: float) -> CaseSamples:
    """One repeat: its ms/token is the median."""
    return CaseSamples("greedy", (median,), Estimate(median, median, median))


@dataclass(frozen=True)
class Run:
    run_id: str
    started_at: str
    medians: dict[str, float]
    build_key: str | None = "build-a"
    machine_id: str = MACHINE
    complete: bool = True
    commit: str | None = "c" * 40
    samples: dict[str, CaseSamples] = field(init=False)
    cpu_samples: dict[str, CaseSamples] = field(default_factory=dict)
    instruction_samples: dict[str, CaseSamples] = field(default_factory=dict)
    instructions_key: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", {n: _case(m) for n, m in self.medians.items()})


def _run(i: int, medians: dict[str, float], **kw) -> Run:
    return Run(f"2026010{i}T000000Z-00000{i}", f"2026-01-0{i}T00:00:00Z", medians, **kw)


# 3 pairs x 7 cases = 21 drifts: |ratio - 1| = 0.01 .. 0.21, half of them slower, half faster
DRIFTS = [round(0.01 * (i + 1), 2) for i in range(21)]


def _aa_runs() -> list[Run]:
    """Three builds, each measured twice: 21 drifts, alternately slower and faster."""
    runs = []
    base = {f"case{c}": 10.0 for c in range(7)}
    for p in range(3):
        runs.append(_run(2 * p + 1, base, build_key=f"build-{p}"))
        new = {f"case{c}": 10.0 * (1 + (-1) ** c * DRIFTS[7 * p + c]) for c in range(7)}
        runs.append(_run(2 * p + 2, new, build_key=f"build-{p}"))
    return runs


def test_the_tolerance_is_the_stated_quantile_not_the_largest_drift():
    runs = _aa_runs()
    cal = calibrate(runs, MACHINE)
    assert len(cal.pairs) == 3 and cal.values == 21 and cal.quantile == 0.95
    # numpy's "higher" quantile of 0.01 .. 0.21: the value at ceil(q * 20), here index 19
    assert cal.tolerance == pytest.approx(0.20)
    assert cal.tolerance < max(DRIFTS)
    lower = calibrate(runs, MACHINE, quantile=0.8)
    assert lower.tolerance == pytest.approx(0.17)  # index 16
    assert lower.tolerance < cal.tolerance
    assert calibrate(runs, MACHINE, quantile=1.0).tolerance == pytest.approx(0.21)
    # between two drifts the higher one is taken, never an interpolation (0.97 * 20 = 19.4 -> index 20)
    assert calibrate(runs, MACHINE, quantile=0.97).tolerance == pytest.approx(0.21)
    assert cal.worst == (runs[5].run_id, "case6", pytest.approx(1.21))


def test_the_quantile_over_pairs_of_new_only_runs_by_hand():
    base = {f"case{c}": 10.0 for c in range(21)}
    new = {f"case{c}": 10.0 * (1 + (-1) ** c * d) for c, d in enumerate(DRIFTS)}
    cal = calibrate([_run(1, base), _run(2, new)], MACHINE)
    (pair,) = cal.pairs
    assert [c for c, _ in pair.ratios] == sorted(base)
    assert dict(pair.ratios)["case3"] == pytest.approx(1 - 0.04)
    assert cal.tolerance == pytest.approx(0.20)  # index ceil(0.95 * 20) = 19 of 0.01 .. 0.21
    assert calibrate([_run(1, base), _run(2, new)], MACHINE, quantile=0.5).tolerance == pytest.approx(0.11)
    assert cal.worst == (pair.new, "case20", pytest.approx(1.21))
    assert (pair.base, pair.commit) == (_run(1, base).run_id, "c" * 40)
    # one sample a side: none of D is the runs' own noise, so drift^2 = mean(D^2) / 2; one pair is weak
    logs = [math.log(1 + (-1) ** c * d) ** 2 for c, d in enumerate(DRIFTS)]
    assert cal.drift_sd == pytest.approx(math.sqrt(sum(logs) / len(logs) / 2))
    assert cal.weak and (cal.drift.sd, cal.drift.df) == (cal.drift_sd, 1.0)


def test_only_consecutive_complete_pinned_runs_of_one_build_and_machine_pair():
    m = {"a": 10.0}
    runs = [
        _run(1, m),
        _run(2, {"a": 11.0}),
        _run(3, {"a": 12.0}, build_key="build-b"),
        _run(4, {"a": 13.0}, build_key=None),
        _run(5, {"a": 14.0}, build_key=None),
        _run(6, {"a": 15.0}, complete=False),
        _run(7, {"a": 9.0}, machine_id="other"),
    ]
    cal = calibrate(runs, MACHINE)
    assert [(p.base, p.new) for p in cal.pairs] == [(runs[0].run_id, runs[1].run_id)]
    assert cal.tolerance == pytest.approx(0.1)
    assert calibrate(runs[2:], MACHINE).pairs == ()
    assert calibrate(runs[2:], MACHINE).tolerance is None and calibrate(runs[2:], MACHINE).worst is None
    assert calibrate(list(reversed(runs[:2])), MACHINE).pairs[0].base == runs[0].run_id  # in time order


def test_cases_missing_or_without_samples_on_either_side_are_left_out():
    a = _run(1, {"x": 10.0, "y": 10.0, "z": 10.0})
    b = _run(2, {"x": 12.0, "y": 10.0, "w": 5.0})
    object.__setattr__(b, "samples", b.samples | {"y": CaseSamples("greedy", (), Estimate(9.0, 9.0, 9.0))})
    (pair,) = calibrate([a, b], MACHINE).pairs
    assert pair.ratios == (("x", pytest.approx(1.2)),)
    empty = _run(3, {"q": 1.0})
    assert calibrate([a, empty], MACHINE).pairs == ()


@pytest.mark.parametrize("quantile", [0.0, -0.1, 1.01])
def test_a_quantile_outside_zero_to_one_is_refused(quantile):
    with pytest.raises(MeasureError, match=r"quantile: expected a number in \(0, 1\]"):
        calibrate(_aa_runs(), MACHINE, quantile)


def test_a_calibration_round_trips_through_its_file(tmp_path: Path):
    cal = calibrate(_aa_runs(), MACHINE)
    d = cal.to_dict()
    assert d["calibration_version"] == 2 and d["values"] == 21 and d["tolerance"] == cal.tolerance
    assert d["drift_sd"] == cal.drift_sd and cal.drift_sd is not None and d["weak"] is False
    assert d["worst"] == {"run_id": cal.worst[0], "case": cal.worst[1], "ratio": cal.worst[2]}
    assert d["pairs"][0] == {"base": cal.pairs[0].base, "new": cal.pairs[0].new, "commit": "c" * 40} | {
        "ratios": dict(cal.pairs[0].ratios)
    }
    write(tmp_path, cal)
    assert load_calibration(tmp_path, MACHINE) == cal
    assert load_calibration(tmp_path, "nobody") is None
    none = Calibration(MACHINE, 0.9, (), None)
    assert from_dict(none.to_dict(), tmp_path) == none and none.to_dict()["worst"] is None
    assert from_dict(d | {"tolerance": 0}, tmp_path).tolerance == 0.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"calibration_version": True}, "field 'calibration_version': expected an integer, got True"),
        ({"calibration_version": "1"}, "field 'calibration_version': expected an integer, got '1'"),
        ({"calibration_version": 3}, "field 'calibration_version': expected 1 or 2, got 3"),
        ({"calibration_version": 0}, "field 'calibration_version': expected 1 or 2, got 0"),
        ({"drift_sd": "0.1"}, "field 'drift_sd': expected a number >= 0 or null, got '0.1'"),
        ({"drift_sd": -0.01}, "field 'drift_sd': expected a number >= 0 or null, got -0.01"),
        ({"machine_id": 3}, "field 'machine_id': expected a machine id, got 3"),
        ({"quantile": "high"}, "field 'quantile': expected a number, got 'high'"),
        ({"tolerance": "0.1"}, "field 'tolerance': expected a number >= 0 or null, got '0.1'"),
        ({"tolerance": True}, "field 'tolerance'"),
        ({"tolerance": -0.01}, "field 'tolerance'"),
        ({"pairs": {}}, "field 'pairs': expected a list of A/A pairs, got {}"),
        ({"pairs": [{"base": "a", "new": "b", "commit": "c", "ratios": []}]}, "field 'pairs[0]'"),
        ({"pairs": [{"base": "a", "new": "b", "commit": "c", "ratios": {"x": "fast"}}]}, "field 'pairs[0]'"),
        ({"pairs": [{"base": "a", "new": "b", "ratios": {}}]}, "field 'pairs[0]'"),
        ({"pairs": ["x"]}, "field 'pairs[0]': expected base, new, commit and ratios {case: number}"),
    ],
)
def test_a_malformed_calibration_names_the_file_and_field(tmp_path, change, message):
    doc = Calibration(MACHINE, 0.95, (AAPair("a", "b", "c", (("x", 1.1),)),), 0.1).to_dict() | change
    path = tmp_path / MACHINE / "calibration.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(MeasureError, match=re.escape(f"{path}: {message}")):
        load_calibration(tmp_path, MACHINE)


def test_a_calibration_in_another_machines_folder_or_not_an_object_is_refused(tmp_path):
    path = tmp_path / "m2" / "calibration.json"
    path.parent.mkdir()
    path.write_text(json.dumps(Calibration(MACHINE, 0.95, (), None).to_dict()), encoding="utf-8")
    with pytest.raises(MeasureError, match=re.escape(f"{path}: field 'machine_id': expected m2 (its folder), got m1")):
        load_calibration(tmp_path, "m2")
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(MeasureError, match=re.escape(f"{path}: expected a JSON object (a measure calibration)")):
        load_calibration(tmp_path, "m2")


def _pinned(commit: str | None = "c" * 40, dirty: bool = False) -> dict:
    doc = copy.deepcopy(load_record(DATA / f"record-v{SCHEMA_VERSION}.json"))
    doc["environment"]["git"] = {"commit": commit, "dirty": dirty}
    return doc


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["environment"].update(onnxruntime="0.0.1"),
        lambda d: d["golden"].update(sha256="0" * 64),
        lambda d: d["config"]["wallclock"].update(repeats=99),
        lambda d: d["config"]["session"].update(intra_op_threads=7),
        lambda d: d["config"].update(pairs=[]),
        lambda d: d["tiers"]["small-int4"]["fingerprint"]["files"][0].update(sha256="0" * 64),
        lambda d: d["tiers"]["small-int4"].update(role="reference"),
        lambda d: d["environment"]["git"].update(commit="d" * 40),
    ],
)
def test_the_build_key_changes_with_everything_an_aa_pair_must_share(change):
    doc = _pinned()
    key = build_key(from_document(doc, "a"))
    assert key is not None and len(key) == 64
    assert build_key(from_document(copy.deepcopy(doc), "same")) == key
    changed = copy.deepcopy(doc)
    change(changed)
    assert build_key(from_document(changed, "b")) != key


def test_a_dirty_or_unknown_checkout_has_no_build_key():
    assert build_key(from_document(_pinned(dirty=True), "dirty")) is None
    assert build_key(from_document(_pinned(commit=None), "none")) is None
    doc = _pinned()
    doc["run_id"], doc["started_at"] = "29990101T000000Z-aaaaaa", "2999-01-01T00:00:00Z"
    assert build_key(from_document(doc, "later")) == build_key(from_document(_pinned(), "a"))  # not the run
