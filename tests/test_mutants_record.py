"""Record loading and migration at their edges: the version checks need no schema file to refuse.

A newer record is refused by :func:`migrate` itself, before any schema is looked up, so the
refusal cannot be mistaken for a missing file; a current one passes through untouched.
"""

from __future__ import annotations

import copy
import json
import stat
from pathlib import Path

import pytest

from measure.errors import MeasureError
from measure.record import SCHEMA_VERSION, RecordWriter, load, load_record, migrate, validate, write_atomic

DATA = Path(__file__).resolve().parent / "data"


def _never(doc):
    raise AssertionError("no migration may run")


def test_a_newer_version_is_refused_by_migrate_itself():
    with pytest.raises(MeasureError, match=rf"x\.json: schema_version {SCHEMA_VERSION + 1} was written by a newer"):
        migrate({"schema_version": SCHEMA_VERSION + 1}, "x.json")
    with pytest.raises(MeasureError, match="reads versions up to 3: upgrade measure"):
        migrate({"schema_version": 4}, "x.json", migrations={1: _never, 2: _never})
    doc = {"schema_version": SCHEMA_VERSION, "a": 1}
    assert migrate(doc, "x.json") == {"schema_version": SCHEMA_VERSION, "a": 1}
    assert migrate({"schema_version": 3}, "x.json", migrations={1: _never, 2: _never}) == {"schema_version": 3}


@pytest.mark.parametrize("version", [None, "2", 2.0])
def test_a_document_without_an_integer_version_is_not_a_record(version):
    with pytest.raises(MeasureError, match=r"x\.json: not a measure run record \(no integer schema_version\)"):
        migrate({"schema_version": version} if version is not None else {}, "x.json")
    with pytest.raises(MeasureError, match="no integer schema_version"):
        validate({"schema_version": version} if version is not None else {}, "x.json")


def test_migrating_version_1_moves_framing_and_keeps_everything_else():
    old = json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))
    doc = migrate(copy.deepcopy(old), "v1.json")
    assert doc["schema_version"] == 2
    assert {k: v for k, v in doc.items() if k not in ("framing", "schema_version")} == {
        k: v for k, v in old.items() if k not in ("framing", "schema_version")
    }
    leg = doc["framing"]["legs"][0]
    assert leg["tiers"] == [{**t, "status": "measured"} for t in old["framing"]["tiers"]]
    assert (leg["language"], leg["version"]) == ("python", old["environment"]["onnxruntime"])
    bare = migrate({"schema_version": 1, "framing": None}, "f.json")
    assert bare == {"schema_version": 2, "framing": None}


def test_per_row_counts_must_match_the_rows():
    doc = load_record(DATA / f"record-v{SCHEMA_VERSION}.json")
    bad = copy.deepcopy(doc)
    bad["wallclock"]["cases"]["small-int4->base-int8@k2"]["accepted"].pop()
    with pytest.raises(
        MeasureError, match=r"r\.json: field wallclock/cases/small-int4->base-int8@k2/accepted: expected 12 counts"
    ):
        validate(bad, "r.json")
    bad = copy.deepcopy(doc)
    bad["wallclock"]["cases"]["small-int4->base-int8@k4"]["drafter_run_s"][2].append(0.1)
    with pytest.raises(MeasureError, match=r"drafter_run_s: expected one list of 12 seconds per repeat"):
        validate(bad, "r.json")
    validate(doc, "r.json")


def test_a_file_that_is_not_an_object_or_cannot_be_read_says_so(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(MeasureError, match=r"list\.json: not a measure run record \(expected a JSON object\)"):
        load_record(path)
    with pytest.raises(MeasureError, match=r"missing\.json: cannot read record"):
        load_record(tmp_path / "missing.json")
    data = (DATA / "record-v1.json").read_bytes()
    assert load(tmp_path / "not-read.json", data).schema_version == SCHEMA_VERSION  # bytes given: no read
    assert load(DATA / "record-v1.json").source == str(DATA / "record-v1.json")


def test_written_records_are_readable_by_all_and_end_with_a_newline(tmp_path):
    path = tmp_path / "m" / "r.json"
    write_atomic(path, {"ä": 1})
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.read_text(encoding="utf-8") == '{"ä":1}\n'


def test_the_writer_marks_an_interrupted_run_incomplete_with_its_error(tmp_path):
    doc = load_record(DATA / f"record-v{SCHEMA_VERSION}.json")
    writer = RecordWriter(tmp_path, doc)
    assert writer.path == tmp_path / doc["machine_id"] / f"{doc['run_id']}.json"
    path = writer.finish("KeyboardInterrupt")
    saved = load_record(path)
    assert saved["complete"] is False and saved["error"] == "KeyboardInterrupt" and saved["finished_at"]
    ok = RecordWriter(tmp_path / "ok", load_record(DATA / f"record-v{SCHEMA_VERSION}.json")).finish()
    assert load_record(ok)["complete"] is True and "error" not in load_record(ok)
