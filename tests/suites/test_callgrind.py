"""Instruction counts under callgrind: the decode region only, parsed from callgrind's own totals; stored in the
record, compared in their own band, calibrated, and drawn on History.

``tests/data/instructions-section.json`` is a real ``instructions`` section: three callgrind runs of each of
record-v2.json's tiers over the first 2 golden rows (valgrind 3.19.0), as ``measure run --instructions``
writes it."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from tests_support import DATA_DIR

from measure import bundled
from measure.engine.load import load_tier
from measure.errors import MeasureError
from measure.record.io import load, load_record, write_atomic
from measure.suites.callgrind import HOOKS, callgrind_total, count
from measure.suites.golden import load_golden

DATA = DATA_DIR
COUNTS = json.loads((DATA / "instructions-section.json").read_text(encoding="utf-8"))

CALLGRIND_OUT = """# callgrind format
version: 1
creator: callgrind-3.19.0
cmd: python -m measure instructions
events: Ir
fl=(1) ???
fn=(1) 0x0000000000108c10
0 7
summary: 22936336
totals: 22936336
"""


def test_the_total_is_callgrinds_own_line():
    assert callgrind_total(CALLGRIND_OUT, "x") == 22_936_336
    assert callgrind_total("events: Ir\nsummary: 5\n", "x") == 5
    with pytest.raises(MeasureError, match="not a callgrind output file"):
        callgrind_total("events: Ir\n", "out.txt")


def test_without_the_extra_the_error_names_it(monkeypatch, tmp_path):
    import measure.suites.callgrind as instructions

    monkeypatch.setattr(instructions, "HOOKS", "measure_no_such_module.hooks")
    with pytest.raises(MeasureError, match=r"pip install 'measure\[instructions\]'"):
        instructions.count(bundled.LITE, bundled.GOLDEN, 1, valgrind="/bin/true")


AGREE = 0.005
"""Two counts of one tier agree within 0.5% on a loaded machine. Measured: the spreads in the end-to-end test, and
0.30% (7,386,945 against 7,409,070) between two one-row counts in a fresh clone's CI run beside two busy loops,
a 20-minute explore of a 135M model and a second test suite (load average 9): onnxruntime's timer-driven
threads run inside the counted region, more often the busier the machine."""
ALL_AGREE = 0.005
"""Three counts of one tier lie within 0.5% of each other, whatever else the machine is doing."""

NEEDS_VALGRIND = pytest.mark.skipif(
    (shutil.which("valgrind") is None or importlib.util.find_spec(HOOKS.split(".")[0]) is None)
    and not os.environ.get("MEASURE_REQUIRE_VALGRIND"),
    reason="needs valgrind and pytest-codspeed (pip install 'measure[instructions]'); CI (.ci/run) installs both "
    "and sets MEASURE_REQUIRE_VALGRIND, so there they run or fail, never skip",
)


@NEEDS_VALGRIND
@pytest.mark.bounds
def test_one_row_of_the_small_tier_is_counted_in_the_decode_region_only():
    # fp32: valgrind emulates a CPU without the native SIMD paths, so a quantized tier's kernels there are not
    # this machine's and may decode otherwise; an fp32 decode is the same row under both
    found = count(bundled.SMALL_FP32, bundled.GOLDEN, 1)
    text = load_golden(bundled.GOLDEN).rows[0].input
    assert found.rows == 1 and found.tokens == len(load_tier(bundled.SMALL_FP32).greedy(text).tokens)
    # Python and onnxruntime start-up alone run hundreds of millions of instructions; one row of the
    # small tier runs tens of millions at most, so a count this size is the decode region and nothing else.
    assert 1e6 < found.instructions < 1e8, found.instructions


@NEEDS_VALGRIND
@pytest.mark.bounds
def test_the_count_does_not_depend_on_the_callers_folder_or_shell(tmp_path, monkeypatch):
    """The child runs ``python -P`` in / with an environment of its own: a module in the folder the run started in
    is never imported, and what the caller's shell holds besides is not copied in (each byte of it moved every
    allocation after it: 5,000 bytes moved a one-row count by 0.15%; the folder it ran in, by up to 0.5%)."""
    found = count(bundled.SMALL_FP32, bundled.GOLDEN, 1)
    (tmp_path / "tokenizers.py").write_text("raise ImportError('a module of the caller folder was imported')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEASURE_TEST_PADDING", "x" * 5000)
    moved = count(bundled.SMALL_FP32, bundled.GOLDEN, 1)
    assert moved.tokens == found.tokens
    assert abs(moved.instructions - found.instructions) / found.instructions <= AGREE, (found, moved)


@NEEDS_VALGRIND
@pytest.mark.bounds
def test_one_row_of_a_decoder_only_tier_is_counted_with_the_configs_prompt():
    lm, prompt = bundled.DEMO_DIR / "lm-small-fp32", "{input} ="  # fp32, as above
    found = count(lm, bundled.GOLDEN, 1, prompt=prompt)
    text = load_golden(bundled.GOLDEN).rows[0].input
    assert found.rows == 1 and found.tokens == len(load_tier(lm, prompt=prompt).greedy(text).tokens)
    assert 1e6 < found.instructions < 1e8, found.instructions


# ------------------------------------------------------------------ stored, compared, calibrated, charted


def _doc(i: int = 0, commit: str = "a", scale: dict[str, float] | None = None, counts: dict | None = None) -> dict:
    """record-v2.json as run i of a build, carrying the real counts (a tier's scaled by ``scale``)."""
    d = load_record(DATA / "record-v2.json")
    d["started_at"] = f"2026-12-{10 + i:02d}T10:00:00Z"
    d["run_id"] = f"202612{10 + i:02d}T100000Z-00000{i}"
    d["environment"]["git"] = {"commit": commit * 40, "dirty": False}
    d["instructions"] = copy.deepcopy(counts or COUNTS)
    for name, factor in (scale or {}).items():
        tier = d["instructions"]["tiers"][name]
        tier["instructions"] = [round(x * factor) for x in tier["instructions"]]
    return d


def _write(results: Path, *docs: dict) -> list[Path]:
    paths = []
    for d in docs:
        paths.append(results / d["machine_id"] / f"{d['run_id']}.json")
        write_atomic(paths[-1], d)
    return paths


def test_the_section_is_stored_and_read_typed_with_read_only_samples(tmp_path):
    (path,) = _write(tmp_path, _doc())
    r = load(path)
    ins = r.instructions
    assert (ins.tool, ins.valgrind, ins.rows, ins.runs) == ("callgrind", "valgrind-3.19.0", 2, 3)
    assert set(ins.tiers) == set(r.tiers)
    t = ins.tiers["small-int4"]
    assert t.runs == 3 and t.tokens == 20 and t.instructions == (22693824, 22700170, 22693800)
    assert t.per_token.tolist() == [x / 20 for x in t.instructions]
    assert not t.per_token.flags.writeable
    assert load(DATA / "record-v2.json").instructions is None  # records without the section read as before


def test_show_prints_each_tiers_count_and_no_ratio_between_tiers(tmp_path, capsys):
    from measure.cli import main

    (path,) = _write(tmp_path, _doc())
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "instructions per token (callgrind, valgrind-3.19.0, first 2 rows; one tier over time only)" in out
    assert "small-int4       1,134,691   0.0281%     3" in out


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s["tiers"].update(ghost=s["tiers"]["base-int8"]), "instructions/tiers/ghost"),
        (lambda s: s["tiers"]["base-int8"]["instructions"].pop(), "a complete record has 3 runs, got 2"),
        (lambda s: s.update(rows=13), "field instructions/rows: expected at most the golden rows"),
        (lambda s: s.update(tool="cachegrind"), "instructions"),
        (lambda s: s["tiers"]["base-int8"].update(tokens=0), "instructions"),
    ],
)
def test_a_bad_section_is_a_one_line_error_naming_the_field(tmp_path, change, expected):
    d = _doc()
    change(d["instructions"])
    (path,) = _write(tmp_path, d)
    with pytest.raises(MeasureError, match=expected):
        load(path)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("runs = 1", "instructions.runs: expected >= 2"),
        ("rows = 0", "instructions.rows: expected >= 1"),
        ('enabled = "yes"', "instructions.enabled: expected bool"),
        ("repeats = 3", "unknown key instructions.repeats"),
        ("valgrind = 3", "instructions.valgrind"),
    ],
)
def test_config_errors_name_the_key(mini_config, table, expected):
    from measure.suites.config import load_config

    path = mini_config()
    path.write_text(path.read_text(encoding="utf-8") + f"\n[instructions]\n{table}\n", encoding="utf-8")
    with pytest.raises(MeasureError, match=expected):
        load_config(path)


def test_the_config_is_off_by_default_and_stored_in_the_record(mini_config):
    from measure.suites.config import load_config

    path = mini_config()
    assert load_config(path).instructions.enabled is False and load_config().instructions.enabled is False
    path.write_text(path.read_text(encoding="utf-8") + "\n[instructions]\nenabled = true\nrows = 4\n")
    cfg = load_config(path)
    assert cfg.to_dict()["instructions"] == {"enabled": True, "rows": 4, "runs": 3, "valgrind": "valgrind"}


def test_compare_judges_the_count_in_its_own_band(tmp_path):
    from measure.analysis.comparison import compare_records

    base, same, slower, small = (
        load(p)
        for p in _write(
            tmp_path,
            _doc(0),
            _doc(1),
            _doc(2, "b", {"small-int4": 1.03}),
            _doc(3, "c", {"small-int4": 1.01}),
        )
    )
    aa = compare_records(base, same, metric="instructions")
    assert {c.case: c.outcome for c in aa} == {"base-fp32": "same", "base-int8": "same", "small-int4": "same"}
    assert all(c.tolerance == 0.02 for c in aa)  # the policy's instructions_tolerance, not compare_tolerance
    found = {c.case: c for c in compare_records(base, slower, metric="instructions")}
    assert found["small-int4"].outcome == "slower" and found["small-int4"].ratio.value == pytest.approx(1.03, abs=1e-4)
    assert {found["base-fp32"].outcome, found["base-int8"].outcome} == {"same"}
    # 1% more instructions is inside the 2% band and the runs agree to 0.05%: same, not slower.
    assert {c.case: c.outcome for c in compare_records(base, small, metric="instructions")}["small-int4"] == "same"
    # Wall time has no samples here to change: the wall metric still reads the wall-clock cases.
    assert {c.outcome for c in compare_records(base, slower)} <= {"same", "inconclusive"}


def test_counts_of_another_valgrind_or_other_rows_are_never_compared(tmp_path, capsys):
    from measure.cli import main

    other = copy.deepcopy(COUNTS) | {"valgrind": "valgrind-3.22.0"}
    base, new = _write(tmp_path, _doc(0), _doc(1, counts=other))
    assert main(["compare", str(base), str(new), "--metric", "instructions"]) == 2
    assert "no tier with instruction counts (two runs, the same valgrind version and rows)" in capsys.readouterr().err


def test_the_compare_verb_prints_the_instruction_metric_and_gates_on_it(tmp_path, capsys):
    from measure.cli import main

    base, new = _write(tmp_path, _doc(0), _doc(1, "b", {"base-int8": 1.05}))
    md = tmp_path / "gate.md"
    code = main(
        ["compare", str(base), str(new), "--metric", "instructions", "--fail-on", "slower", "--markdown", str(md)]
    )
    out = capsys.readouterr().out
    assert code == 1 and "within +/-2.0%" in out
    assert [line.split()[0] for line in out.splitlines() if line.endswith("slower")] == ["base-int8"]
    assert "measure compare (instructions)" in md.read_text(encoding="utf-8")


def test_calibrate_pools_the_counts_drift_from_same_build_pairs(tmp_path, capsys):
    from measure.analysis.calibration import calibrate
    from measure.cli import main
    from measure.results.cache import SummaryCache
    from measure.results.calibration_file import load_calibration, write
    from measure.results.reader import load_results

    results = tmp_path / "results"
    other = copy.deepcopy(COUNTS) | {"valgrind": "valgrind-3.22.0"}
    _write(results, _doc(0), _doc(1), _doc(2), _doc(3, counts=other), _doc(4, "b", {"small-int4": 1.03}))
    summaries = load_results(results, SummaryCache(None)).summaries
    machine = summaries[0].machine_id
    cal = calibrate(summaries, machine)
    # Three A/A pairs of wall time; the counts of another valgrind version never pair with the ones before.
    assert len(cal.pairs) == 3 and cal.instructions_pairs == 2
    drift = cal.drift_of("instructions")
    # Identical counts in every A/A pair: no drift beyond the runs' own spread (0.05% at most).
    assert drift is not None and drift.df == 2 and drift.sd < 5e-4
    assert cal.drift_of("cpu") == cal.drift_of("cpu")  # untouched
    write(results, cal)
    assert load_calibration(results, machine) == cal
    assert main(["calibrate", str(results)]) == 0
    assert "instructions drift 0.000% from 2 pair(s)" in capsys.readouterr().out


def test_history_draws_the_count_per_tier_and_says_which_metric_called_each_change(tmp_path):
    from measure.analysis.calibration import calibrate
    from measure.analysis.history import machine_history
    from measure.record.tree import by_machine
    from measure.results.cache import SummaryCache
    from measure.results.calibration_file import write
    from measure.results.reader import load_results

    results = tmp_path / "results"
    slowed = _doc(2, "b", {"small-int4": 1.03})
    wall = slowed["wallclock"]["cases"]["base-fp32"]
    wall["wall_s"] = [[w * 1.5 for w in rep] for rep in wall["wall_s"]]
    _write(results, _doc(0), _doc(1), slowed)
    loaded = load_results(results, SummaryCache(None))
    machine = loaded.summaries[0].machine_id
    write(results, calibrate(loaded.summaries, machine))
    from measure.results.calibration_file import load_calibration

    ((_, runs),) = by_machine(loaded.summaries).items()
    h = machine_history(machine, runs, load_calibration(results, machine), SummaryCache(None))
    assert set(h.instruction_series) == {"base-fp32", "base-int8", "small-int4"}
    assert all(len(points) == 3 for points in h.instruction_series.values())
    assert h.instructions_compared == 2 and h.band.instructions_tolerance == 0.02
    called = {(c.metric, c.comparison.case, c.comparison.outcome) for c in h.changes}
    assert ("instructions", "small-int4", "slower") in called
    assert ("wall", "base-fp32", "slower") in called
    assert not any(m == "instructions" and case != "small-int4" for m, case, _ in called)


def test_the_history_and_methods_pages_render_the_count(tmp_path):
    from tests_support import build, html, site_project

    results = tmp_path / "results"
    _write(results, _doc(0), _doc(1), _doc(2, "b", {"small-int4": 1.03}))
    project = site_project(tmp_path / "project")
    done = build(project, results)
    assert done.returncode == 0, done.stderr[-3000:]
    machine = load_record(DATA / "record-v2.json")["machine_id"].lower().replace("_", "-")
    page = html(project, f"results/history/{machine}")
    assert "Instructions per token over time" in page and 'id="instructions-' in page
    assert "never for comparing tiers" in page
    assert "<td>instructions</td>" in page and "<strong>slower</strong>" in page
    assert "1,168,732" in page  # small-int4's newest median per token (22,693,824 x 1.03, rounded, / 20)
    methods = html(project, "results/methods")
    assert "never for comparing tiers" in methods and "instructions_tolerance" in methods
    assert "callgrind &#40;valgrind-3.19.0&#41;, first 2 rows, 3 runs" in methods  # md() escapes brackets


def test_a_run_without_valgrind_stops_before_anything_is_timed(mini_config, tmp_path):
    from measure.suites.config import load_config
    from measure.suites.runner import run

    path = mini_config(rows=2, repeats=2)
    path.write_text(path.read_text() + '\n[instructions]\nenabled = true\nvalgrind = "no-such-valgrind"\n')
    with pytest.raises(MeasureError, match=r"valgrind not found \(no-such-valgrind on PATH\): install it"):
        run(load_config(path), ["wallclock"], tmp_path / "results", argv=["test"])
    assert not (tmp_path / "results").exists()


def test_a_run_without_the_extra_names_it(mini_config, tmp_path, monkeypatch):
    import measure.suites.callgrind as instructions
    from measure.suites.config import load_config
    from measure.suites.runner import run

    monkeypatch.setattr(instructions, "HOOKS", "measure_no_such_module.hooks")
    path = mini_config(rows=2, repeats=2)
    path.write_text(path.read_text() + '\n[instructions]\nenabled = true\nvalgrind = "true"\n')
    with pytest.raises(MeasureError, match=r"pip install 'measure\[instructions\]'"):
        run(load_config(path), ["wallclock"], tmp_path / "results", argv=["test"])


TWO_TIERS = """
golden = "{golden}"

[[tiers]]
name = "base-int8"
path = "{demo}/base-int8"
role = "plain"

[[tiers]]
name = "small-int4"
path = "{demo}/small-int4"
role = "lite"

[instructions]
enabled = true
rows = 1
runs = 3
"""


@NEEDS_VALGRIND
@pytest.mark.bounds
def test_a_run_counts_each_tier_twice_the_runs_agree_and_the_heavier_tier_counts_more(tmp_path):
    """The real thing, end to end (about 35 s idle): three separate callgrind runs per tier, saved in a valid record.

    The count is not exact: onnxruntime's session.run keeps telemetry on a wall-clock timer (every few seconds,
    whatever ORT_DISABLE_TELEMETRY says) and its small allocation, when it fires inside the region, moves the
    allocator's later paths: a few hundred to 8,000 instructions a time, and a loaded machine stretches the region over
    more of them. One row, base-int8 and small-int4, on 2 cores shared with other jobs:
    no loop of ours (other jobs, load 7 to 11), 11 runs each: within 0.065% and 0.005% of each other (the
    closest two of any three within 0.006%);
    beside two busy loops, 12 runs each, within 0.013% and 0.005%; with one loop at load 8 to 12, 5 runs
    each, within 0.081% and 0.011%, the closest two of three up to 0.038% (a full test run once saw 0.25%);
    with the child in / as now, 6 runs each at load 3: within 0.011% and 0.006%.
    So, with room for a busier machine: two runs of three within :data:`AGREE`, all three within
    :data:`ALL_AGREE`, far inside the 2% band compare judges counts in."""
    from measure.analysis.comparison import compare_records
    from measure.suites.config import load_config
    from measure.suites.runner import run

    config = tmp_path / "suite.toml"
    config.write_text(TWO_TIERS.format(golden=bundled.GOLDEN, demo=bundled.LITE.parent), encoding="utf-8")
    r = load(run(load_config(config), [], tmp_path / "results", argv=["test"]))
    assert r.complete and r.instructions is not None and r.instructions.rows == 1
    tiers = r.instructions.tiers
    for t in tiers.values():
        assert t.runs == 3
        a, b, c = sorted(t.instructions)
        assert min(b - a, c - b) / b <= AGREE and (c - a) / a <= ALL_AGREE, t.instructions
    # base-int8 has twice small-int4's layers: its decode runs more instructions per token. (A sanity check of
    # the count, not a comparison of tiers: that is what the metric must never be used for.)
    assert tiers["base-int8"].per_token.min() > 1.2 * tiers["small-int4"].per_token.max()
    assert {c.outcome for c in compare_records(r, r, metric="instructions")} <= {"same", "inconclusive"}


def test_run_instructions_turns_the_count_on_and_a_missing_valgrind_is_one_line(
    mini_config, tmp_path, monkeypatch, capsys
):
    from measure.cli import main

    path = mini_config(rows=2, repeats=2)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no valgrind anywhere on PATH
    results = tmp_path / "results"
    args = ["run", "--config", str(path), "--suite", "wallclock", "--results", str(results)]
    assert main([*args, "--instructions"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    want = f"measure run: error: {path.resolve()}: instructions.valgrind = 'valgrind': valgrind not found"
    assert line.startswith(want), line
    assert not results.exists()  # refused before anything was timed
