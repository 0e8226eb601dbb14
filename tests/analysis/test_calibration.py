"""A/A calibration from real runs: same-build pairs only, the quantile as tolerance, recorded and used by compare."""

from __future__ import annotations

import copy
import json
import math
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from tests_support import DATA_DIR, write_config

from measure.analysis.calibration import AAPair, Calibration, build_key, calibrate, from_dict
from measure.analysis.comparison import CaseSamples, Drift
from measure.analysis.stats import Estimate
from measure.analysis.summary import summarize_record
from measure.errors import MeasureError
from measure.record.io import SCHEMA_VERSION, load_record, write_atomic
from measure.record.model import from_document
from measure.record.tree import calibration_path
from measure.results.cache import SummaryCache
from measure.results.calibration_file import load_calibration, write
from measure.results.reader import load_results
from measure.suites.config import load_config
from measure.suites.runner import run

COMMIT = "c" * 40


def _pin(doc: dict, commit: str | None = COMMIT, dirty: bool = False) -> dict:
    """The records of a test checkout carry no commit; pin the build the way a CI checkout records it."""
    doc = copy.deepcopy(doc)
    doc["environment"]["git"] = {"commit": commit, "dirty": dirty}
    return doc


@pytest.fixture(scope="module")
def aa_runs(tmp_path_factory):
    """Two real wall-clock runs of one build, one after the other."""
    folder = tmp_path_factory.mktemp("aa")
    config = load_config(write_config(folder, rows=6, repeats=3))
    paths = [run(config, ["wallclock"], folder / "results", argv=["test"])]
    time.sleep(1.1)  # records are ordered by started_at, to the second; two runs within one would tie
    paths.append(run(config, ["wallclock"], folder / "results", argv=["test"]))
    return [_pin(load_record(p)) for p in paths]


def _runs(docs: list[dict]) -> list:
    """Each document as the calibration reads it: its summary."""
    return [summarize_record(from_document(d, "test"), f"{i:064x}") for i, d in enumerate(docs)]


def _tree(tmp_path: Path, docs: list[dict]) -> Path:
    for d in docs:
        write_atomic(tmp_path / "results" / d["machine_id"] / f"{d['run_id']}.json", d)
    return tmp_path / "results"


def test_two_runs_of_one_clean_build_are_an_aa_pair_and_set_the_tolerance(aa_runs):
    first, second = aa_runs
    cal = calibrate(_runs(aa_runs), first["machine_id"])
    (pair,) = cal.pairs
    assert (pair.base, pair.new, pair.commit) == (first["run_id"], second["run_id"], COMMIT)
    assert [c for c, _ in pair.ratios] == sorted(first["wallclock"]["cases"])
    for case, r in pair.ratios:
        new = [sum(rep) for rep in second["wallclock"]["cases"][case]["wall_s"]]
        old = [sum(rep) for rep in first["wallclock"]["cases"][case]["wall_s"]]
        assert r == pytest.approx(np.median(new) / np.median(old))
    drifts = sorted(abs(r - 1) for _, r in pair.ratios)
    assert cal.tolerance == pytest.approx(np.quantile(drifts, 0.95, method="higher"))
    assert cal.worst is not None and abs(cal.worst[2] - 1) == pytest.approx(drifts[-1])
    assert calibrate(_runs(aa_runs), first["machine_id"], quantile=0.5).tolerance <= cal.tolerance


def test_the_drift_is_what_the_runs_own_repeats_do_not_explain(aa_runs):
    first, second = aa_runs
    cal = calibrate(_runs(aa_runs), first["machine_id"])
    excess = []
    for case in first["wallclock"]["cases"]:
        x = np.log([sum(rep) for rep in first["wallclock"]["cases"][case]["wall_s"]])
        y = np.log([sum(rep) for rep in second["wallclock"]["cases"][case]["wall_s"]])
        excess.append((y.mean() - x.mean()) ** 2 - x.var(ddof=1) / x.size - y.var(ddof=1) / y.size)
    assert cal.drift_sd == pytest.approx(np.sqrt(max(0.0, np.mean(excess)) / 2))
    assert cal.weak and cal.drift is not None and cal.drift.df == 1.0  # one pair: one degree of freedom
    assert cal.to_dict()["weak"] is True
    # CPU time has a drift of its own, from the same pair (its runs recorded CPU samples).
    cpu_excess = []
    for case in first["wallclock"]["cases"]:
        x = np.log([sum(rep) for rep in first["wallclock"]["cases"][case]["cpu_s"]])
        y = np.log([sum(rep) for rep in second["wallclock"]["cases"][case]["cpu_s"]])
        cpu_excess.append((y.mean() - x.mean()) ** 2 - x.var(ddof=1) / x.size - y.var(ddof=1) / y.size)
    assert cal.cpu_pairs == 1 and cal.cpu_drift_sd == pytest.approx(np.sqrt(max(0.0, np.mean(cpu_excess)) / 2))
    assert cal.drift_of("cpu") == Drift(cal.cpu_drift_sd, 1.0) and cal.drift_of("wall") == cal.drift


def test_a_version_1_calibration_reads_with_its_drift_bounded_by_the_ratios(tmp_path):
    ratios = {"a": 1.1, "b": 0.9}
    doc = {"calibration_version": 1, "machine_id": "m", "quantile": 0.95, "tolerance": 0.1}
    doc["pairs"] = [{"base": "r1", "new": "r2", "commit": COMMIT, "ratios": ratios}]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "calibration.json").write_text(json.dumps(doc), encoding="utf-8")
    cal = load_calibration(tmp_path, "m")
    expected = np.sqrt(np.mean([np.log(1.1) ** 2, np.log(0.9) ** 2]) / 2)
    assert cal.drift_sd == pytest.approx(expected) and cal.tolerance == 0.1 and cal.weak


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["environment"]["git"].update(dirty=True),
        lambda d: d["environment"]["git"].update(commit="d" * 40),
        lambda d: d["environment"]["git"].update(commit=None),
        lambda d: d["environment"].update(onnxruntime="0.0.1"),
        lambda d: d["golden"].update(sha256="0" * 64),
        lambda d: d["config"]["wallclock"].update(repeats=99),
        lambda d: d["tiers"]["small-int4"]["fingerprint"]["files"][0].update(sha256="0" * 64),
    ],
    ids=["dirty", "other-commit", "no-commit", "other-onnxruntime", "other-golden", "other-settings", "other-tier"],
)
def test_records_of_different_builds_are_never_paired(aa_runs, change):
    first, second = aa_runs[0], copy.deepcopy(aa_runs[1])
    change(second)
    assert build_key(from_document(second, "b")) != build_key(from_document(first, "a"))
    cal = calibrate(_runs([first, second]), first["machine_id"])
    assert cal.pairs == () and cal.tolerance is None


def test_only_consecutive_records_of_the_machine_pair(aa_runs):
    first, second = aa_runs
    between = _pin(second, commit="e" * 40)
    between["run_id"], between["started_at"] = "29990101T000000Z-aaaaaa", "2999-01-01T00:00:00Z"
    later = copy.deepcopy(second)
    later["run_id"], later["started_at"] = "29990102T000000Z-bbbbbb", "2999-01-02T00:00:00Z"
    other = copy.deepcopy(second)
    other["machine_id"] = "another-machine"
    cal = calibrate(_runs([first, second, between, later, other]), first["machine_id"])
    assert [(p.base, p.new) for p in cal.pairs] == [(first["run_id"], second["run_id"])]


def test_the_calibration_is_recorded_and_compare_uses_it(aa_runs, tmp_path):
    results = _tree(tmp_path, aa_runs)
    summaries = load_results(results, SummaryCache(None)).summaries
    cal = calibrate(summaries, aa_runs[0]["machine_id"])
    path = write(results, cal)
    assert path == calibration_path(results, cal.machine_id)
    assert load_calibration(results, cal.machine_id) == cal
    assert load_record(next(results.glob("*/2*.json")))  # a calibration file is not taken for a record
    # A large recorded drift (as a noisy runner would calibrate) is what compare then adds to its intervals.
    doc = json.loads(path.read_text(encoding="utf-8")) | {"drift_sd": 0.25}
    path.write_text(json.dumps(doc), encoding="utf-8")
    # NEW: the newest run measured again (another run id), so compare does not pair it with itself.
    newest = tmp_path / "again.json"
    newest.write_text(json.dumps(aa_runs[1] | {"run_id": "20991231T000000Z-000001"}), encoding="utf-8")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "measure", "compare", str(results), str(newest)),
            *("--base-commit", COMMIT[:8], "--markdown", str(tmp_path / "summary.md")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = f"A/A drift 25.0% (log sd) from 1 A/A pair(s) in {results / cal.machine_id}; weak: fewer than 3 pairs"
    assert found in done.stdout
    assert "same = the 95% interval within +/-5.0%" in done.stdout  # the drift widens intervals, not the band
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "same = the 95% interval within ±5.0%" in summary
    assert "A/A drift 25.0% from 1 pair(s) in the intervals; weak" in summary


def test_the_calibrate_verb_prints_and_writes(aa_runs, tmp_path):
    results = _tree(tmp_path, aa_runs[:1])
    cmd = [sys.executable, "-m", "measure", "calibrate", str(results), "--write"]
    alone = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0 and "no A/A pairs" in alone.stdout
    assert load_calibration(results, aa_runs[0]["machine_id"]).tolerance is None
    _tree(tmp_path, aa_runs)
    paired = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert paired.returncode == 0 and "1 A/A pair(s)" in paired.stdout and "wrote" in paired.stdout
    assert load_calibration(results, aa_runs[0]["machine_id"]).tolerance is not None
    empty = subprocess.run([*cmd[:4], str(tmp_path / "nothing")], capture_output=True, text=True, timeout=120)
    assert empty.returncode == 2 and "not a results tree" in empty.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", "not a readable JSON calibration"),
        ("[]", "expected a JSON object"),
        ('{"calibration_version": 7}', "field 'calibration_version': expected 1 or 2, got 7"),
        ('{"calibration_version": 2, "machine_id": "m", "quantile": 0.95, "pairs": [], "drift_sd": -1}', "'drift_sd'"),
        ('{"calibration_version": 1, "machine_id": "m", "quantile": 0.95, "tolerance": -1}', "field 'tolerance'"),
        ('{"calibration_version": 1, "machine_id": "m", "quantile": 0.95, "pairs": [{}]}', "field 'pairs[0]'"),
        ('{"calibration_version": 1, "machine_id": "x", "quantile": 0.95, "pairs": []}', "field 'machine_id'"),
    ],
)
def test_a_bad_calibration_file_is_a_clear_error_naming_it(tmp_path, text, expected):
    path = tmp_path / "m" / "calibration.json"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(MeasureError, match=re.escape(expected)) as err:
        load_calibration(tmp_path, "m")
    assert str(path) in str(err.value)


# --- A/A calibration over many synthetic drifts: the tolerance is the stated quantile, not the largest drift ---


MACHINE = "m1"
DATA = DATA_DIR


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
