"""A results tree's change points: one list over every machine, runs of a commit pooled, archived months read."""

from __future__ import annotations

import hashlib
import json

from tests_support import history_tree, run_cli

from measure.analysis.commit_series import commits_of, machine_series
from measure.analysis.history_changes import confirmed, find_changes, recent, starts, without_commit
from measure.record.io import load_record, write_record
from measure.record.tree import by_machine, record_paths
from measure.results.cache import SummaryCache
from measure.results.reader import load_results


def sha(c: int) -> str:
    return hashlib.sha1(str(c).encode()).hexdigest()


def _tree(tmp_path):
    """Two machines, two runs a commit; machine a's base-int8 25% slower from commit 8; machine b never measured
    commit 5; one record of machine a has no commit (a dirty checkout's: a commit of its own)."""
    results = tmp_path / "results"
    docs = history_tree(results, steps={("base-int8", 8): 1.25})
    for path in record_paths(results):
        d = load_record(path)
        if d["machine_id"].endswith("-b") and d["environment"]["git"]["commit"] == sha(5):
            path.unlink()
        elif d["run_id"] == docs[7]["run_id"]:  # machine a, commit 3, second run
            d["environment"]["git"] = {"commit": sha(3), "dirty": True}
            write_record(path, d)
    return results


def test_two_machines_pooled_runs_a_missing_commit_and_an_archived_month_give_one_list(tmp_path, capsys):
    results = _tree(tmp_path)
    summaries = load_results(results, SummaryCache(None)).summaries
    runs = by_machine(summaries)
    machine_a, machine_b = sorted(runs)
    commits = commits_of(runs[machine_a])
    assert len(commits) == 16 and commits[3].commit == sha(3) and len(commits[3].runs) == 1  # pooled, less the dirty
    assert commits[4].commit is None and len(commits[4].runs) == 1  # the dirty run: a commit of its own
    assert len(commits_of(runs[machine_b])) == 14  # commit 5 was never measured there

    found = find_changes(summaries, {})
    keys = {(c.key.machine, c.key.metric, c.key.case) for c in found.changes}
    assert keys == {(machine_a, "wall", "base-int8"), (machine_a, "row_p90_ms", "base-int8")}
    for c in found.changes:
        assert (c.last_good.commit, c.first_bad.commit, c.at.commit) == (sha(7), sha(8), sha(8))
        assert c.ratio.lo < 1.25 < c.ratio.hi and abs(c.ratio.value - 1.25) < 0.02 and c.direction == "slower"
    series_b = [s for s in found.searched if s.series.key.machine == machine_b]
    assert series_b and all(not s.changes for s in series_b)
    assert found.expected_false_alarms >= 0 and found.of(machine_b).changes == ()

    code, before, _ = run_cli(capsys, "changes", str(results), "--json")
    assert code == 0
    code, said, _ = run_cli(capsys, "archive", str(results))
    assert code == 0 and any(p.name.endswith(".archive.json.gz") for p in results.rglob("*")), said
    code, after, _ = run_cli(capsys, "changes", str(results), "--json")
    assert code == 0 and json.loads(after) == json.loads(before)  # the archived month reads as it did


def test_what_a_merge_confirmed_and_what_a_pull_request_would_start(tmp_path):
    results = tmp_path / "results"
    history_tree(results, commits=11, machines=("a",), steps={("small-int4", 9): 1.3})
    summaries = load_results(results, SummaryCache(None)).summaries
    now = find_changes(summaries, {})
    (change,) = [c for c in now.changes if c.key.metric == "wall"]
    assert change.key.case == "small-int4" and (change.last_good.commit, change.first_bad.commit) == (sha(8), sha(9))
    # commit 10 is the second at the new level: its records confirmed the change; commit 9 alone had not
    merged = confirmed(find_changes(without_commit(summaries, sha(10)), {}), now)
    assert {(c.key.case, c.key.metric, c.first_bad.commit) for c in merged} >= {("small-int4", "wall", sha(9))}
    assert confirmed(now, now) == ()
    # a pull request's records, 30% slower on small-int4, against the history before the step
    base = find_changes([s for s in summaries if s.commit not in (sha(9), sha(10))], {})
    started = starts(base, [s for s in summaries if s.commit == sha(9)])
    assert {(s.key.case, s.key.metric) for s in started} == {("small-int4", "wall"), ("small-int4", "row_p90_ms")}
    assert all(abs(s.ratio - 1.3) < 0.03 and s.runs == 2 for s in started)
    assert starts(base, [s for s in summaries if s.commit == sha(2)]) == ()  # one like the rest starts nothing


def test_a_history_of_too_few_commits_says_so_and_recent_keeps_the_newest_commits(tmp_path):
    results = tmp_path / "results"
    history_tree(results, commits=3, machines=("a",))
    summaries = load_results(results, SummaryCache(None)).summaries
    found = find_changes(summaries, {})
    assert found.searched == () and found.compared and found.short > 0
    one = find_changes(summaries[:1], {})
    assert not one.compared and one.changes == ()
    ((machine, runs),) = by_machine(summaries).items()
    assert {s.key.machine for s in machine_series(machine, runs, None)} == {machine}
    long = tmp_path / "long"
    history_tree(long, commits=30, machines=("a",), steps={("base-int8", 5): 1.3, ("base-fp32", 25): 1.3})
    summaries = load_results(long, SummaryCache(None)).summaries
    found = find_changes(summaries, {})
    named = recent(found, summaries)
    assert {c.key.case for c in named} == {"base-fp32"}  # commit 25 is among the newest 20; commit 5 is not
    assert {c.key.case for c in found.since(summaries[40].started_at).changes} == {"base-fp32"}


def test_samples_of_zero_or_less_are_left_out_and_a_run_of_none_is_dropped():
    """A tier's memory is its worker's peak less the baseline's: it can be zero or below, which has no log."""
    import math

    from measure.analysis.commit_series import runs_of

    points = [(0, (100.0, 110.0)), (1, (0.0, 121.0)), (1, (-5.0, 0.0)), (3, (100.0, float("nan"), 100.0))]
    runs, used, drift, calibrated = runs_of(points, 0.01)
    assert used == [0, 1, 3] and runs.commits == 3 and list(runs.commit) == [0, 1, 2]
    assert runs.mean[1] == math.log(121.0) and runs.mean[2] == math.log(100.0)
    assert drift >= 0.01 and calibrated == (drift == 0.01) and runs.var.min() > 0
