"""Merge at its edges: a tree merged into itself, files that are not records, the same conflict twice."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from measure.errors import MeasureError
from measure.record.io import load_record
from measure.record.merge import content_hash, merge

DATA = Path(__file__).resolve().parent / "data" / "record-v1.json"


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
