"""A/A calibration from real runs: same-build pairs only, the quantile as tolerance, recorded and used by compare."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tests_support import write_config

from measure.analysis.calibration import build_key, calibrate
from measure.analysis.comparison import Drift
from measure.analysis.summary import summarize_record
from measure.errors import MeasureError
from measure.record.io import load_record, write_atomic
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
