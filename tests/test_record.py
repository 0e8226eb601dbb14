"""The run record as a file format: golden files load, newer versions are refused, migration steps."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from measure.errors import MeasureError
from measure.record.io import SCHEMA_VERSION, load_record, migrate, validate, write_atomic
from measure.record.tree import record_paths

DATA = Path(__file__).resolve().parent / "data"


def test_golden_record_of_every_schema_version_loads():
    files = sorted(DATA.glob("record-v*.json"))
    versions = {int(p.stem.split("-v")[1].split("-")[0]) for p in files}  # record-v3-lm.json: a v3 record too
    assert versions == set(range(1, SCHEMA_VERSION + 1)), "keep one golden record per schema version"
    for path in files:
        doc = load_record(path)
        assert doc["schema_version"] == SCHEMA_VERSION
        assert doc["complete"] is True


def test_newer_version_is_refused_with_its_message(tmp_path):
    doc = json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))
    doc["schema_version"] = SCHEMA_VERSION + 1
    path = tmp_path / "future.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(
        MeasureError,
        match=rf"schema_version {SCHEMA_VERSION + 1} was written by a newer measure; "
        rf"this one reads versions up to {SCHEMA_VERSION}",
    ):
        load_record(path)


def test_migrations_run_step_by_step():
    calls = []

    def step(n):
        def up(doc):
            calls.append(n)
            return doc | {f"from_v{n}": True}

        return up

    doc = migrate({"schema_version": 1}, "x.json", migrations={1: step(1), 2: step(2)})
    assert calls == [1, 2]
    assert doc["schema_version"] == 3 and doc["from_v1"] and doc["from_v2"]
    with pytest.raises(MeasureError, match="older than any this measure can migrate"):
        migrate({"schema_version": 0}, "x.json", migrations={1: step(1)})


def test_version_1_framing_becomes_the_python_onnxruntime_leg():
    old = json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))
    doc = load_record(DATA / "record-v1.json")
    (leg,) = doc["framing"]["legs"]
    assert (leg["runtime"], leg["language"], leg["status"]) == ("onnxruntime", "python", "measured")
    assert leg["version"] == old["environment"]["onnxruntime"]
    assert [t["tier"] for t in leg["tiers"]] == [t["tier"] for t in old["framing"]["tiers"]]
    assert all(t["status"] == "measured" for t in leg["tiers"])
    assert "tiers" not in doc["framing"]


def test_a_skipped_leg_must_say_why():
    doc = load_record(DATA / f"record-v{SCHEMA_VERSION}.json")
    doc["framing"]["legs"][1] |= {"status": "skipped", "tiers": []}
    doc["framing"]["legs"][1].pop("reason", None)
    with pytest.raises(MeasureError, match=r"field framing/legs/1: 'reason' is a required property"):
        validate(doc, "r.json")


def test_schema_error_names_the_field():
    doc = json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))
    bad = copy.deepcopy(doc)
    bad["golden"]["sha256"] = "not-a-hash"
    with pytest.raises(MeasureError, match=r"r\.json: field golden/sha256: 'not-a-hash' does not match"):
        validate(bad, "r.json")
    bad = copy.deepcopy(doc)
    bad["framing"]["acceptance"][0]["probe"]["accepted"] = -1
    with pytest.raises(MeasureError, match=r"field framing/acceptance/0/probe/accepted"):
        validate(bad, "r.json")


def test_measured_numbers_must_be_finite():
    """Measured numbers carry no float bound in the schema (jsonschema-rs checks one twenty times slower, which was
    two thirds of a record's validation): it refuses inf and NaN itself, and the error still names the field."""
    doc = load_record(DATA / f"record-v{SCHEMA_VERSION}.json")
    where = "framing/legs/0/tiers/0/blocks/0/layers/0/key_max_abs_diff"
    finite = "inf or NaN; expected a finite number"
    for value, message in ((float("inf"), finite), (float("nan"), finite), (-1.0, "less than the minimum")):
        bad = copy.deepcopy(doc)
        bad["framing"]["legs"][0]["tiers"][0]["blocks"][0]["layers"][0]["key_max_abs_diff"] = value
        with pytest.raises(MeasureError, match=f"r\\.json: field {where}: .*{message}"):
            validate(bad, "r.json")
    doc["framing"]["legs"][0]["tiers"][0]["blocks"][0]["layers"][0]["key_max_abs_diff"] = 1e300  # as before
    validate(doc, "r.json")


def test_malformed_json_names_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n "schema_version": 1,\n oops\n}', encoding="utf-8")
    with pytest.raises(MeasureError, match=r"broken\.json: line 3: not valid JSON"):
        load_record(path)


def test_atomic_write_replaces_whole_files(tmp_path):
    path = tmp_path / "m" / "20261202T000000Z-abcdef.json"
    write_atomic(path, {"a": 1})
    write_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    (path.parent / "calibration.json").write_text("{}", encoding="utf-8")
    (path.parent / f"{path.stem}.conflict-0123456789ab.json").write_text("{}", encoding="utf-8")
    assert record_paths(tmp_path) == [path]  # only files named by a run id are records


def test_raw_samples_are_checked_too():
    doc = json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))
    bad = copy.deepcopy(doc)
    bad["wallclock"]["cases"]["base-fp32"]["wall_s"][0][3] = -1.0
    with pytest.raises(MeasureError, match=r"field wallclock/cases/base-fp32/wall_s/0/3: -1\.0 is less than"):
        validate(bad, "r.json")
    short = copy.deepcopy(doc)
    short["wallclock"]["cases"]["base-fp32"]["run_s"][1].pop()
    with pytest.raises(MeasureError, match=r"wallclock/cases/base-fp32/run_s: expected one list of 8 seconds"):
        validate(short, "r.json")


def test_the_record_package_keeps_its_modules_and_functions_small():
    """No module over 400 lines and no function over 60 in measure/record: a reader takes in one at a sitting."""
    import ast

    root = Path(__file__).resolve().parent.parent / "measure" / "record"
    long = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 400:
            long.append(f"{path.name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"{path.name}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert long == []
