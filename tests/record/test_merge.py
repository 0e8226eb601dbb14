"""Merging records from many CI artifact folders: each record once, conflicts kept and reported, nothing lost."""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from tests_support import DATA_DIR

from measure.cli import main
from measure.errors import MeasureError
from measure.record.io import load_record
from measure.record.merge import content_hash, merge
from measure.record.tree import record_paths

DATA = DATA_DIR / "record-v1.json"


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


# --- Merge at its edges: a tree merged into itself, files that are not records, the same conflict twice ---


def _doc() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def _write(path: Path, doc: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_content_hash_ignores_key_order_only():
    doc = _doc()
    reordered = dict(reversed(list(doc.items())))
    assert content_hash(reordered) == content_hash(doc) and len(content_hash(doc)) == 64
    assert content_hash(doc | {"run_id": "20261202T000000Z-abcdef"}) != content_hash(doc)


def test_a_single_file_merges_readable_by_all_and_a_tree_into_itself_adds_nothing(tmp_path):
    src = _write(tmp_path / "loose.json", _doc())
    into = tmp_path / "results"
    report = merge([src], into)
    (added,) = report.added
    assert added == into / _doc()["machine_id"] / f"{_doc()['run_id']}.json"
    assert stat.S_IMODE(added.stat().st_mode) == 0o644
    again = merge([into], into)
    assert (again.added, again.duplicates, again.conflicts, again.invalid) == ([], [], [], [])


def test_calibrations_and_kept_conflicts_in_a_source_are_not_records_to_merge(tmp_path):
    src = tmp_path / "artifact"
    (src / "m").mkdir(parents=True)
    (src / "m" / "calibration.json").write_text("{}", encoding="utf-8")
    (src / "m" / "20261202T000000Z-abcdef.conflict-0123456789ab.json").write_text("{}", encoding="utf-8")
    report = merge([src], tmp_path / "results")
    assert (report.added, report.invalid) == ([], [])


def test_the_same_conflict_twice_is_kept_once(tmp_path):
    doc = _doc()
    into = tmp_path / "results"
    merge([_write(tmp_path / "a" / "r.json", doc)], into)
    doc["environment"]["python"] = "3.99.0"
    first = merge([_write(tmp_path / "b" / "r.json", doc)], into)
    ((_, kept),) = first.conflicts
    assert stat.S_IMODE(kept.stat().st_mode) == 0o644
    digest = content_hash(load_record(tmp_path / "b" / "r.json"))  # of the record as loaded (migrated)
    assert kept.name == f"{doc['run_id']}.conflict-{digest[:12]}.json"
    second = merge([_write(tmp_path / "c" / "r.json", doc)], into)
    assert second.conflicts == [] and second.duplicates == [tmp_path / "c" / "r.json"]
    assert len(list((into / doc["machine_id"]).iterdir())) == 2


def test_a_missing_source_is_an_error_naming_it(tmp_path):
    with pytest.raises(MeasureError, match=r"nowhere: no such file or folder to merge"):
        merge([tmp_path / "nowhere"], tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_skipped_files_do_not_stop_the_merge_and_duplicates_are_named(tmp_path):
    doc = _doc()
    (tmp_path / "a" / "m").mkdir(parents=True)
    (tmp_path / "a" / "m" / "calibration.json").write_text("{}", encoding="utf-8")  # sorted first, skipped
    first = _write(tmp_path / "b" / "r1.json", doc)
    second = _write(tmp_path / "c" / "r2.json", doc | {"run_id": "20261202T000000Z-abcdef"})  # same machine
    into = tmp_path / "results"
    report = merge([tmp_path / "a", tmp_path / "b", tmp_path / "c"], into)
    assert len(report.added) == 2 and report.invalid == []
    # the tree itself comes first in sorted order; its own files are passed over, the copy after it is not
    again = merge([into, _write(tmp_path / "z" / "copy.json", doc)], into)
    assert again.duplicates == [tmp_path / "z" / "copy.json"] and again.added == []
    assert merge([second], into).duplicates == [second] and first.exists()
