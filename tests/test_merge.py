"""Merging records from many CI artifact folders: each record once, conflicts kept and reported, nothing lost."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from measure.cli import main
from measure.record.io import load_record
from measure.record.merge import merge
from measure.record.tree import record_paths

DATA = Path(__file__).resolve().parent / "data" / "record-v1.json"


def _artifact(folder: Path, doc: dict, pretty: bool = False) -> Path:
    """A downloaded artifact: some nesting, then the record under its machine folder."""
    path = folder / "results" / doc["machine_id"] / f"{doc['run_id']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2 if pretty else None, sort_keys=pretty), encoding="utf-8")
    return path


def test_many_artifacts_merge_into_one_tree_without_double_counting(tmp_path):
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    other = json.loads(DATA.read_text(encoding="utf-8"))
    other["run_id"] = "20261202T000000Z-abcdef"
    other["machine_id"] = "darwin-arm64-8c-0123456789"
    _artifact(tmp_path / "a", doc)
    _artifact(tmp_path / "b", doc, pretty=True)  # same record, other formatting: one record
    _artifact(tmp_path / "b", other)
    into = tmp_path / "site-results"
    report = merge([tmp_path / "a", tmp_path / "b"], into)
    assert len(report.added) == 2 and len(report.duplicates) == 1 and not report.conflicts
    paths = record_paths(into)
    assert sorted(p.parent.name for p in paths) == sorted([doc["machine_id"], other["machine_id"]])
    assert load_record(into / doc["machine_id"] / f"{doc['run_id']}.json") == load_record(DATA)
    again = merge([tmp_path / "a", tmp_path / "b"], into)  # a re-run of the publish job adds nothing
    assert not again.added and len(again.duplicates) == 3


def test_a_conflicting_record_is_kept_beside_never_over(tmp_path):
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    into = tmp_path / "results"
    merge([_artifact(tmp_path / "a", doc)], into)
    before = (into / doc["machine_id"] / f"{doc['run_id']}.json").read_bytes()
    doc["environment"]["python"] = "3.99.0"  # same ids, other content
    report = merge([_artifact(tmp_path / "b", doc)], into)
    assert len(report.conflicts) == 1 and not report.added
    _, kept = report.conflicts[0]
    assert (into / doc["machine_id"] / f"{doc['run_id']}.json").read_bytes() == before
    assert kept.exists() and ".conflict-" in kept.name and load_record(kept)["environment"]["python"] == "3.99.0"
    assert len(record_paths(into)) == 1  # the conflict copy is kept, not counted


def test_the_verb_reports_invalid_files_by_name_and_merges_the_rest(tmp_path, capsys):
    good = tmp_path / "a" / "x" / "good.json"
    good.parent.mkdir(parents=True)
    shutil.copyfile(DATA, good)
    bad = tmp_path / "a" / "bad.json"
    bad.write_text('{"schema_version": 1, "run_id": 3}', encoding="utf-8")
    code = main(["merge", str(tmp_path / "a"), "--into", str(tmp_path / "results")])
    out = capsys.readouterr().out
    assert code == 1
    assert f"invalid {bad}: field" in out
    assert "1 added, 0 duplicate(s), 0 conflict(s), 1 invalid" in out
    assert len(record_paths(tmp_path / "results")) == 1
    assert main(["merge", str(tmp_path / "missing"), "--into", str(tmp_path / "results")]) == 2
