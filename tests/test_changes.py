"""``measure changes``: the history's change points as lines or JSON; one line and exit 2 for a tree it cannot read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from tests_support import history_tree, run_cli


def sha(c: int) -> str:
    return hashlib.sha1(str(c).encode()).hexdigest()


def _files(results: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(results.rglob("*")) if p.is_file()}


@pytest.fixture
def stepped(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    history_tree(results, commits=12, steps={("base-int8", 6): 1.2})
    return results


def test_a_step_is_listed_with_its_commits_size_evidence_and_the_false_alarms_expected(stepped, capsys):
    code, out, err = run_cli(capsys, "changes", str(stepped))
    assert code == 0 and err == ""
    head, *lines = out.splitlines()
    assert head.startswith("2 change point(s), newest first (") and "expected false alarms in this history: " in head
    assert len(lines) == 2 and all(line.startswith("- linux-x86_64-2c-c36a590d6f-a: base-int8 ") for line in lines)
    assert f"between {sha(5)[:10]} (last good) and {sha(6)[:10]} (first bad)" in lines[0]
    assert "stepped slower x1.2" in out and "6 | 6 commits" in out

    code, out, _ = run_cli(capsys, "changes", str(stepped), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["series"] > 0 and doc["expected_false_alarms"] >= 0
    (wall,) = [c for c in doc["changes"] if c["metric"] == "wall"]
    assert (wall["last_good"]["commit"], wall["first_bad"]["commit"], wall["direction"]) == (sha(5), sha(6), "slower")
    assert wall["ratio_95"][0] < 1.2 < wall["ratio_95"][1] and not wall["creep"]

    code, out, _ = run_cli(capsys, "changes", str(stepped), "--since", sha(7)[:8])
    assert code == 0 and out.startswith("no change points (")  # the step came before commit 7
    code, out, _ = run_cli(capsys, "changes", str(stepped), "--machine", "linux-x86_64-2c-c36a590d6f-b")
    assert code == 0 and out.startswith("no change points (")


def test_what_a_merge_confirmed_and_what_new_records_would_start(stepped, tmp_path, capsys):
    code, out, _ = run_cli(capsys, "changes", str(stepped), "--confirmed-by", sha(11))
    assert code == 0 and out.startswith("no change points confirmed by")  # commit 11 confirmed nothing new
    early = tmp_path / "early"
    history_tree(early, commits=8, machines=("a",), steps={("base-int8", 6): 1.2})
    code, out, _ = run_cli(capsys, "changes", str(early), "--confirmed-by", sha(7))
    assert code == 0 and out.startswith(f"2 change point(s) confirmed by {sha(7)[:10]}")
    # a pull request measured after commit 5: its records are commit 6's
    pr = [p for p in sorted((stepped / "linux-x86_64-2c-c36a590d6f-a").iterdir()) if sha(6) in p.read_text()]
    code, out, _ = run_cli(capsys, "changes", str(stepped), "--new", *map(str, pr), "--base-commit", sha(5))
    assert code == 0 and out.startswith("2 series the new records would start a slower segment on")
    assert "base-int8 ms/token (wall) x1.2" in out and "a change if the next commit measures the same" in out
    code, out, _ = run_cli(capsys, "changes", str(stepped), "--new", str(pr[0]), "--base-commit", sha(5), "--json")
    assert {s["metric"] for s in json.loads(out)["starts"]} == {"wall", "row_p90_ms"}
    # against the whole history (the merge base was never measured), commit 6's level is the last segment's
    code, out, _ = run_cli(capsys, "changes", str(stepped), "--new", str(pr[0]), "--base-commit", "deadbeef")
    assert code == 0 and out.startswith("the new records start no slower segment on the ")
    assert "of the whole history, which has no record of deadbeef" in out
    code, out, _ = run_cli(capsys, "changes", str(stepped), "--confirmed-by", "deadbeef")
    assert code == 0 and out.startswith("no change points confirmed by deadbeef")  # a merge no runner measured


def test_an_empty_tree_or_one_that_is_not_there_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, out, err = run_cli(capsys, "changes", str(tmp_path / "empty"))
    assert (code, out) == (2, "") and err.count("\n") == 1 and "no run records" in err
    code, _, err = run_cli(capsys, "changes", str(tmp_path / "missing"))
    assert code == 2 and err.count("\n") == 1 and "not a results tree" in err


def test_one_record_says_nothing_could_be_compared_yet(tmp_path, capsys):
    results = tmp_path / "results"
    history_tree(results, commits=1, machines=("a",), runs=1)
    before = _files(results)
    code, out, _ = run_cli(capsys, "changes", str(results))
    assert code == 0 and out == "no change points: nothing could be compared yet (every series has one commit's runs)\n"
    history_tree(tmp_path / "three", commits=3, machines=("a",))
    code, out, _ = run_cli(capsys, "changes", str(tmp_path / "three"))
    assert code == 0 and out == "no change points: fewer than 4 commits in every series\n"
    assert _files(results) == before


def test_a_corrupt_record_is_one_line_naming_it_and_nothing_is_lost(stepped, capsys):
    bad = sorted(stepped.rglob("*.json"))[3]
    bad.write_bytes(bad.read_bytes()[:500])
    before = _files(stepped)
    code, out, err = run_cli(capsys, "changes", str(stepped))
    assert (code, out) == (2, "") and err.count("\n") == 1 and bad.name in err
    assert _files(stepped) == before
    code, _, err = run_cli(capsys, "changes", str(stepped), "--since", "nothere")
    assert code == 2


def test_an_unknown_machine_or_commit_is_one_line(stepped, capsys):
    code, _, err = run_cli(capsys, "changes", str(stepped), "--machine", "nope")
    assert code == 2 and "--machine nope: no records of it" in err
    code, _, err = run_cli(capsys, "changes", str(stepped), "--since", "deadbeef")
    assert code == 2 and "--since deadbeef: no record of that commit" in err
