"""The run record as a file format: golden files load, newer versions are refused, migration steps."""

from __future__ import annotations

import copy
import json
import re
import stat

import pytest
from tests_support import DATA_DIR, ROOT

from measure.errors import MeasureError
from measure.record.io import (
    RUN_ID,
    SCHEMA_VERSION,
    load,
    load_record,
    migrate,
    new_run_id,
    now_iso,
    validate,
    write_atomic,
)
from measure.record.tree import record_paths
from measure.record.writer import RecordWriter

DATA = DATA_DIR


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

    doc = migrate({"schema_version": 1}, "x.json", migrations={1: step(1), 2: step(2), 3: step(3), 4: step(4)})
    assert calls == [1, 2, 3, 4]
    assert doc["schema_version"] == 5 and all(doc[f"from_v{n}"] for n in (1, 2, 3, 4))
    with pytest.raises(MeasureError, match="older than any this measure can migrate"):
        migrate({"schema_version": 0}, "x.json", migrations={1: step(1)})


def test_a_version_3_record_reads_with_no_fidelity_pass_and_a_version_4_one_with_it():
    v3 = load(DATA / "record-v3.json")
    assert v3.schema_version == SCHEMA_VERSION and v3.fidelity is None  # migrated: no pass was run
    v4 = load(DATA / "record-v4.json")
    assert [t.tier for t in v4.fidelity.tiers] == ["base-int8", "small-int4"]
    refs = v4.fidelity.references
    assert refs["base-fp32"].in_run and not refs["small-fp32"].in_run  # small-fp32 loaded for the pass only
    rows = v4.golden.rows
    assert all(len(t.greedy.kld) == len(t.golden_nll) == rows for t in v4.fidelity.tiers)
    assert [(p.drafter, p.verifier) for p in v4.fidelity.pairs] == [("small-int4", "base-int8")]


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

    root = ROOT / "measure" / "record"
    long = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 400:
            long.append(f"{path.name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= 60:
                long.append(f"{path.name}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines")
    assert long == []


# --- Record loading and migration at their edges: the version checks need no schema file to refuse ---


def _never(doc):
    raise AssertionError("no migration may run")


def test_a_newer_version_is_refused_by_migrate_itself():
    with pytest.raises(MeasureError, match=rf"x\.json: schema_version {SCHEMA_VERSION + 1} was written by a newer"):
        migrate({"schema_version": SCHEMA_VERSION + 1}, "x.json")
    with pytest.raises(MeasureError, match=f"reads versions up to {SCHEMA_VERSION}: upgrade measure"):
        migrate({"schema_version": SCHEMA_VERSION + 1}, "x.json", migrations={1: _never, 2: _never, 3: _never})
    doc = {"schema_version": SCHEMA_VERSION, "a": 1}
    assert migrate(doc, "x.json") == {"schema_version": SCHEMA_VERSION, "a": 1}
    never = {1: _never, 2: _never, 3: _never, 4: _never}
    assert migrate({"schema_version": 5}, "x.json", migrations=never) == {"schema_version": 5}


@pytest.mark.parametrize("version", [None, "2", 2.0])
def test_a_document_without_an_integer_version_is_not_a_record(version):
    with pytest.raises(MeasureError, match=r"x\.json: not a measure run record \(no integer schema_version\)"):
        migrate({"schema_version": version} if version is not None else {}, "x.json")
    with pytest.raises(MeasureError, match="no integer schema_version"):
        validate({"schema_version": version} if version is not None else {}, "x.json")


def test_migrating_version_1_moves_framing_and_keeps_everything_else():
    old = json.loads((DATA / "record-v1.json").read_text(encoding="utf-8"))
    doc = migrate(copy.deepcopy(old), "v1.json")
    assert doc["schema_version"] == SCHEMA_VERSION
    assert {k: v for k, v in doc.items() if k not in ("framing", "schema_version", "tiers")} == {
        k: v for k, v in old.items() if k not in ("framing", "schema_version", "tiers")
    }
    assert doc["tiers"] == {name: {**t, "kind": "seq2seq"} for name, t in old["tiers"].items()}
    leg = doc["framing"]["legs"][0]
    assert leg["tiers"] == [{**t, "status": "measured"} for t in old["framing"]["tiers"]]
    assert (leg["language"], leg["version"]) == ("python", old["environment"]["onnxruntime"])
    bare = migrate({"schema_version": 1, "framing": None}, "f.json")
    assert bare == {"schema_version": SCHEMA_VERSION, "framing": None}


def test_migrating_version_2_states_every_tier_encoder_decoder_and_changes_nothing_else():
    old = json.loads((DATA / "record-v2.json").read_text(encoding="utf-8"))
    doc = migrate(copy.deepcopy(old), "v2.json")
    assert doc["schema_version"] == SCHEMA_VERSION and all(t["kind"] == "seq2seq" for t in doc["tiers"].values())
    assert {k: v for k, v in doc.items() if k not in ("schema_version", "tiers")} == {
        k: v for k, v in old.items() if k not in ("schema_version", "tiers")
    }
    assert {n: {k: v for k, v in t.items() if k != "kind"} for n, t in doc["tiers"].items()} == old["tiers"]
    validate(doc, "v2.json")
    assert load(DATA / "record-v2.json").tiers == load(DATA / "record-v3.json").tiers


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


@pytest.mark.parametrize(
    ("case", "key", "change"),
    [
        ("base-fp32", "wall_s", lambda v: v[0].pop()),
        ("base-fp32", "run_s", lambda v: v[2].append(0.1)),
        ("small-int4->base-int8@k2", "verifier_run_s", lambda v: v[1].pop()),
        ("base-int8", "calls", lambda v: v.pop()),
        ("small-int4->base-int8@k2", "proposed", lambda v: v.append(1)),
        ("small-int4->base-int8@k2", "rounds", lambda v: v.pop()),
        ("small-int4->base-int8@k4", "bonus", lambda v: v.pop()),
        ("small-int4->base-int8@k4", "drafter_calls", lambda v: v.pop()),
        ("small-int4->base-int8@k4", "verifier_calls", lambda v: v.pop()),
    ],
)
def test_every_per_row_array_is_checked(case, key, change):
    doc = load_record(DATA / f"record-v{SCHEMA_VERSION}.json")
    change(doc["wallclock"]["cases"][case][key])
    with pytest.raises(MeasureError, match=re.escape(f"r.json: field wallclock/cases/{case}/{key}: expected")):
        validate(doc, "r.json")


def test_errors_name_the_file_they_come_from(tmp_path):
    doc = load_record(DATA / f"record-v{SCHEMA_VERSION}.json")
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(doc | {"schema_version": SCHEMA_VERSION + 1}), encoding="utf-8")
    with pytest.raises(MeasureError, match=re.escape(f"{newer}: schema_version {SCHEMA_VERSION + 1}")):
        load_record(newer)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({k: v for k, v in doc.items() if k != "finished_at"}), encoding="utf-8")
    with pytest.raises(MeasureError, match=re.escape(f"{bad}: field (top level): 'finished_at' is a required")):
        load_record(bad)
    with pytest.raises(MeasureError, match=r"^x\.json: not a measure run record"):
        validate([], "x.json")


def test_the_writer_validates_every_save_and_finishes_on_the_last_valid_record(tmp_path):
    doc = load_record(DATA / f"record-v{SCHEMA_VERSION}.json")
    broken = {k: v for k, v in doc.items() if k != "finished_at"}
    with pytest.raises(MeasureError, match="'finished_at' is a required property"):
        RecordWriter(tmp_path, broken)
    assert not list(tmp_path.rglob("*.json"))
    writer = RecordWriter(tmp_path, doc)
    sha = doc["golden"]["sha256"]
    writer.doc["golden"]["sha256"] = "not-a-hash"
    with pytest.raises(MeasureError, match=re.escape(f"{writer.path}: field golden/sha256")):
        writer.save()  # not written: the file keeps the last valid record
    finished = load_record(writer.finish())
    assert finished["complete"] is False and "field golden/sha256" in finished["error"]
    assert finished["golden"]["sha256"] == sha != "not-a-hash"


def test_a_version_1_framing_without_tiers_becomes_an_empty_leg():
    doc = migrate({"schema_version": 1, "environment": {"onnxruntime": "1.2.3"}, "framing": {"blocks": [2]}}, "x")
    assert doc["framing"]["legs"] == [
        {"runtime": "onnxruntime", "language": "python", "version": "1.2.3", "status": "measured", "tiers": []}
    ]


def test_run_ids_are_sortable_unique_and_match_the_schema():
    ids = {new_run_id() for _ in range(5)}
    assert len(ids) == 5 and all(RUN_ID.fullmatch(i) for i in ids)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now_iso())
    assert new_run_id()[:8] == now_iso()[:10].replace("-", "")
