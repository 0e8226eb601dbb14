"""Records as a results branch stores them: packed, gzipped, and the same record to every verb.

The pages are compared byte for byte (``measure render`` into two folders), so
"every statistic unchanged to the last printed digit" is checked, not sampled.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from tests_support import DATA_DIR, later, run_cli

from measure.cli import main
from measure.errors import MeasureError
from measure.record.io import SCHEMA_VERSION, load, load_record, migrate, read_bytes, write_record
from measure.record.pack import FIRST_LEG, compress, pack, unpack

DATA = DATA_DIR


def _pages(results: Path, out: Path, cache: Path | None = None) -> Path:
    argv = ["render", "--results", str(results), "--out", str(out)]
    assert main([*argv, *(["--cache", str(cache)] if cache else [])]) == 0
    return out


def _same_tree(a: Path, b: Path) -> None:
    """Every page of two folders byte for byte; a run's record download (the record file as stored, packed or
    not, gzipped or not) as the same document, and the render manifest, which hashes those downloads, left out.

    A run page names its record's file as the results tree stores it, ``.json`` or ``.json.gz``: in a run page,
    and nowhere else, the two names count as the same."""

    def downloads(root: Path) -> dict[str, str]:
        found = (str(p.relative_to(root)) for p in root.glob("runs/*.json*"))
        return {n.removesuffix(".gz"): n for n in found}

    def pages(root: Path) -> list[str]:
        names = (str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        return sorted(n for n in names if not (n.startswith("runs/") and ".json" in n))

    assert pages(a) == pages(b)
    assert downloads(a).keys() == downloads(b).keys()
    for name in pages(a):
        if name == ".measure-manifest.json":
            continue
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        if x != y and name.startswith("runs/") and "--" in name:
            x, y = x.replace(b".json.gz", b".json"), y.replace(b".json.gz", b".json")
        assert x == y, name
    for name in downloads(a):
        assert load_record(a / downloads(a)[name]) == load_record(b / downloads(b)[name])


def _place(results: Path, doc: dict[str, Any], data: bytes, gz: bool = False) -> Path:
    path = results / doc["machine_id"] / f"{doc['run_id']}.json{'.gz' if gz else ''}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(compress(data) if gz else data)
    return path


def test_packing_keeps_every_sample_and_stores_them_once(both_suites):
    doc, path = both_suites
    assert doc["wallclock"]["resolution_s"] == 1e-6  # the suites record to the microsecond, and say so
    stored = orjson.loads(read_bytes(path))  # what the run wrote: packed
    case = next(iter(stored["wallclock"]["cases"].values()))
    plain = next(iter(doc["wallclock"]["cases"].values()))
    rows = len(plain["wall_s"][0])
    for key in ("wall_s", "run_s", "cpu_s"):
        assert case[key]["unit"] == "us" and case[key]["shape"] == [len(plain[key]), rows]  # every repeat and row
        assert len(case[key]["diffs"].split(" ")) == len(plain[key]) * rows
    assert "offset" not in case["wall_s"] and case["run_s"]["offset"] == case["cpu_s"]["offset"] == {"wall_s": 1}
    stored_ints = [int(x) for x in case["wall_s"]["diffs"].split(" ")]
    first = [round(x * 1e6) for x in plain["wall_s"][0]]
    assert stored_ints[:rows] == first  # the first repeat as it is, in whole microseconds
    assert stored_ints[rows : 2 * rows] == [round(x * 1e6) - y for x, y in zip(plain["wall_s"][1], first, strict=True)]
    tiers = stored["framing"]["legs"][0]["tiers"]
    assert set(tiers) == {"~rows", "~columns"} and tiers["~columns"]["status"] == {"~same": "measured"}
    assert orjson.dumps(unpack(stored, "x")) == orjson.dumps(doc)  # nothing lost, to the bit


def test_the_differences_gzip_smaller_than_the_samples_themselves(both_suites):
    """On samples built as the demo's are (7 repeats of 64 rows, each row its own cost of 1-5 ms, a repeat within
    about 4% of the first, as the demo's median is on a shared host): never on what this machine's load made of
    the run's own few samples."""
    doc = json.loads(json.dumps(both_suites[0]))
    rng = np.random.default_rng(44)
    for case in doc["wallclock"]["cases"].values():
        base = rng.uniform(1e-3, 5e-3, 64)
        for key, share in (("wall_s", 1.0), ("run_s", 0.9), ("cpu_s", 0.95)):
            case[key] = [[round(float(x), 6) for x in base * share * rng.normal(1, 0.04, 64)] for _ in range(7)]
    size = [len(gzip.compress(orjson.dumps(x["wallclock"]["cases"]))) for x in (doc, pack(doc))]
    assert size[1] < 0.8 * size[0], size


def _seconds(doc: dict[str, Any], scale: float, digits: int) -> dict[str, Any]:
    """``doc`` with every wall-clock case's samples scaled and rounded to ``digits`` (9: an older record's ns)."""
    doc = json.loads(json.dumps(doc))
    for case in doc["wallclock"]["cases"].values():
        for key, value in case.items():
            if key.endswith("_s"):
                case[key] = [[round(x * scale, digits) for x in row] for row in value]
    return doc


def test_seconds_that_are_not_whole_microseconds_are_stored_in_nanoseconds_or_as_they_are(both_suites):
    doc = _seconds(both_suites[0], 1.0000003, 9)  # to the nanosecond, as records before 2026-12
    case = next(iter(doc["wallclock"]["cases"].values()))
    case["cpu_s"][0][0] += 1e-12  # finer than any unit: packing it would lose it
    packed = pack(doc)
    packed_case = next(iter(packed["wallclock"]["cases"].values()))
    assert packed_case["wall_s"]["unit"] == packed_case["run_s"]["unit"] == "ns"
    assert isinstance(packed_case["cpu_s"], list)
    assert orjson.dumps(unpack(orjson.loads(orjson.dumps(packed)), "x")) == orjson.dumps(doc)


def test_the_first_packed_form_still_reads(both_suites):
    doc = _seconds(both_suites[0], 1.0000003, 9)
    first = pack(doc)  # then each *_s field as {"ns": <integers>}, as records packed before 2026-12-04
    for name, case in first["wallclock"]["cases"].items():
        for key in [k for k in case if k.endswith("_s")]:
            case[key] = {"ns": [[round(x * 1e9) for x in row] for row in doc["wallclock"]["cases"][name][key]]}
    assert orjson.dumps(unpack(orjson.loads(orjson.dumps(first)), "x")) == orjson.dumps(doc)


def test_a_speculative_case_stores_its_verifier_time_against_run_less_drafter(both_suites):
    doc = both_suites[0]
    name, plain = next((n, c) for n, c in doc["wallclock"]["cases"].items() if c["kind"] == "speculative")
    case = pack(doc)["wallclock"]["cases"][name]
    assert case["verifier_run_s"]["offset"] == {"run_s": 1, "drafter_run_s": -1}
    spread = max(abs(int(x)) for x in case["verifier_run_s"]["diffs"].split(" "))
    assert spread <= 2 * len(plain["wall_s"])  # rounding each to the microsecond, accumulated over the repeats
    assert orjson.dumps(unpack(orjson.loads(orjson.dumps(pack(doc))), "x")) == orjson.dumps(doc)


def test_a_packed_record_gives_the_same_pages_as_its_plain_twin(both_suites, tmp_path):
    doc, _ = both_suites
    plain = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"  # as measure wrote before packing
    _place(tmp_path / "plain", doc, plain.encode("utf-8"))
    write_record(tmp_path / "packed" / doc["machine_id"] / f"{doc['run_id']}.json.gz", doc)
    a, b = _pages(tmp_path / "plain", tmp_path / "a"), _pages(tmp_path / "packed", tmp_path / "b")
    _same_tree(a, b)
    assert "| sample resolution | 1 µs, every sample rounded to it |" in (a / "methods.md").read_text("utf-8")


def test_a_v2_record_and_its_migration_show_and_render_the_same(tmp_path, capsys):
    v2 = json.loads((DATA / "record-v2.json").read_text(encoding="utf-8"))
    migrated = migrate(json.loads(json.dumps(v2)), "v2")
    assert migrated["schema_version"] == SCHEMA_VERSION and v2["schema_version"] == 2
    old = _place(tmp_path / "old", v2, json.dumps(v2).encode("utf-8"))
    new = write_record(tmp_path / "new" / v2["machine_id"] / f"{v2['run_id']}.json", migrated)
    shown = [run_cli(capsys, "show", str(p)) for p in (old, new)]
    assert shown[0][0] == 0 and shown[0][1] == shown[1][1]
    assert run_cli(capsys, "validate", str(old))[0] == 0
    _same_tree(_pages(tmp_path / "old", tmp_path / "a"), _pages(tmp_path / "new", tmp_path / "b"))
    assert "| sample resolution | 1 ns, every sample rounded to it |" in (tmp_path / "a" / "methods.md").read_text(
        "utf-8"
    )


def test_a_gzipped_record_and_its_plain_twin_are_the_same_record_to_every_verb(both_suites, tmp_path, capsys):
    doc, path = both_suites
    data = read_bytes(path)
    plain = _place(tmp_path / "plain", doc, data)
    gz = _place(tmp_path / "gz", doc, data, gz=True)
    assert load_record(gz) == load_record(plain)
    base = tmp_path / "base.json"
    base.write_bytes(data)
    for argv in (["show"], ["validate"], ["compare", str(base)]):
        got = [run_cli(capsys, *argv, str(p)) for p in (plain, gz)]
        assert got[0][0] == got[1][0] == 0, got
        assert got[0][1].replace(str(plain), "FILE") == got[1][1].replace(str(gz), "FILE")
    _same_tree(_pages(tmp_path / "plain", tmp_path / "a"), _pages(tmp_path / "gz", tmp_path / "b"))
    slug = f"{doc['machine_id']}--{doc['run_id']}"
    assert (tmp_path / "b" / "runs" / f"{slug}.json.gz").read_bytes() == gz.read_bytes()  # published as stored
    assert (tmp_path / "a" / "runs" / f"{slug}.json").read_bytes() == plain.read_bytes()
    assert f"[{doc['run_id']}.json.gz]({slug}.json.gz)" in (tmp_path / "b" / "runs" / f"{slug}.md").read_text("utf-8")
    # merged together they are one record; merged --gzip a plain record lands gzipped, its JSON bytes unchanged
    code, out, _ = run_cli(
        capsys, "merge", str(tmp_path / "plain"), str(tmp_path / "gz"), "--into", str(tmp_path / "m")
    )
    assert code == 0 and "1 added, 1 duplicate(s)" in out
    code, out, _ = run_cli(capsys, "merge", str(plain), "--into", str(tmp_path / "z"), "--gzip")
    landed = tmp_path / "z" / doc["machine_id"] / f"{doc['run_id']}.json.gz"
    assert code == 0 and gzip.decompress(landed.read_bytes()) == data


def test_a_truncated_gzip_record_is_one_line_naming_the_file(both_suites, tmp_path):
    doc, path = both_suites
    gz = _place(tmp_path / "results", doc, read_bytes(path), gz=True)
    gz.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    for argv in (
        ["validate", str(gz)],
        ["render", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "o")],
    ):
        done = subprocess.run([sys.executable, "-m", "measure", *argv], capture_output=True, text=True, timeout=120)
        lines = done.stderr.splitlines()
        assert done.returncode == 2 and len(lines) == 1 and str(gz) in lines[0], done.stderr
        assert "Traceback" not in done.stderr


def _tree_of_two(both_suites, results: Path) -> list[Path]:
    doc = both_suites[0]
    second = later(doc, days=1)
    return [
        write_record(results / doc["machine_id"] / f"{doc['run_id']}.json.gz", doc),
        write_record(results / doc["machine_id"] / f"{second['run_id']}.json.gz", second),
    ]


def test_a_committed_summary_index_that_is_corrupt_is_rebuilt_from_the_records(both_suites, tmp_path):
    results = tmp_path / "results"
    _tree_of_two(both_suites, results)
    index = results / ".measure-cache"  # committed beside the records, as the publish job does
    cold = _pages(results, tmp_path / "cold", index)
    entries = [p for p in index.rglob("*.json") if p.is_file()]
    assert entries and not any(".measure-cache" in str(p) for p in results.glob("*/*.json*"))
    for p in entries:
        p.write_bytes(b'{"sha256": "0", "not": "a summary"' if "summaries" in str(p) else b"\x00garbage")
    _same_tree(cold, _pages(results, tmp_path / "again", index))


def test_a_committed_summary_index_older_than_a_record_is_rebuilt_from_the_records(both_suites, tmp_path):
    results = tmp_path / "results"
    second = _tree_of_two(both_suites, results)[1]
    index = results / ".measure-cache"
    stale = _pages(results, tmp_path / "stale", index)
    changed = load_record(second)
    for case in changed["wallclock"]["cases"].values():
        case["wall_s"] = [[round(x * 1.5, 9) for x in row] for row in case["wall_s"]]
    write_record(second, changed)  # the record changed under the index
    warm = _pages(results, tmp_path / "warm", index)
    fresh = tmp_path / "fresh-results"
    shutil.copytree(results, fresh, ignore=shutil.ignore_patterns(".measure-cache"))
    _same_tree(warm, _pages(fresh, tmp_path / "fresh"))  # what the records say, not what the index held
    assert (warm / "wallclock.md").read_bytes() != (stale / "wallclock.md").read_bytes()


@pytest.mark.parametrize(
    "bad",
    [
        {"ns": [[0.5, 1.5]]},
        {"ns": "many"},
        {"unit": "ms", "shape": [1, 2], "diffs": "1 2"},
        {"unit": "us", "shape": [1, 2], "diffs": "1 2", "values": "1 2"},
        {"unit": "us", "shape": [1, 2], "diffs": "1 2.5"},
        {"unit": "us", "shape": [1, 2], "diffs": "1 x"},
        {"unit": "us", "shape": [2, 2], "diffs": "1 2 3"},
        {"unit": "us", "shape": "2x2", "diffs": "1 2 3 4"},
        {"unit": "us", "diffs": "1 2"},
        {"unit": "us", "shape": [1, 2], "diffs": [[1, 2]]},
        {"unit": "us", "shape": [1, 2], "diffs": "1 99999999999999999999"},
        {"unit": "us", "shape": [1, 2], "values": "1 2", "offset": {"no_such_s": 1}},
        {"unit": "us", "shape": [1, 2], "values": "1 2", "offset": {"wall_s": 1}},
    ],
)
def test_badly_packed_seconds_are_one_error_naming_the_file(both_suites, tmp_path, bad, capsys):
    doc = json.loads(json.dumps(both_suites[0]))
    stored = pack(doc)
    case = next(iter(stored["wallclock"]["cases"].values()))
    case["wall_s"] = bad
    if "offset" in bad and "wall_s" in bad["offset"]:  # stored against itself: a circle
        case["run_s"] = {"unit": "us", "shape": [1, 2], "values": "1 2", "offset": {"cpu_s": 1}}
        case["cpu_s"] = {"unit": "us", "shape": [1, 2], "values": "1 2", "offset": {"run_s": 1}}
        case["wall_s"] = {"unit": "us", "shape": [1, 2], "values": "1 2", "offset": {"run_s": 1}}
    path = _place(tmp_path, doc, json.dumps(stored).encode("utf-8"))
    code, _, err = run_cli(capsys, "validate", str(path))
    assert code == 2 and len(err.splitlines()) == 1 and str(path) in err and "field" in err, err


@pytest.mark.parametrize("first", [0, -5, 86_400_000_001])
def test_a_packed_sample_out_of_range_is_refused_at_its_place(both_suites, tmp_path, first, capsys):
    """The schema reads a packed field as its least and greatest value: one sample past a bound is still caught,
    and the error names that sample's place in the plain document."""
    doc = json.loads(json.dumps(both_suites[0]))
    stored = pack(doc)
    name, case = next(iter(stored["wallclock"]["cases"].items()))
    repeats, width = case["tokenize_s"]["shape"]  # a field no other is stored against
    ints = [int(x) for x in case["tokenize_s"]["diffs"].split(" ")]
    last = repeats - 1
    ints[last * width + 2] += first - sum(ints[r * width + 2] for r in range(repeats))  # becomes `first` us
    case["tokenize_s"]["diffs"] = " ".join(map(str, ints))
    path = _place(tmp_path, doc, json.dumps(stored).encode("utf-8"))
    code, _, err = run_cli(capsys, "validate", str(path))
    where = f"field wallclock/cases/{name}/tokenize_s/{last}/2:"
    assert code == 2 and where in err and len(err.splitlines()) == 1, err


def test_a_fact_stored_once_unpacks_into_rows_that_change_apart():
    tiers = [{"tier": name, "output_ids": [[1, 2], [3]]} for name in ("a", "b")]
    stored = pack({"framing": {"legs": [{"tiers": tiers}]}})
    assert stored["framing"]["legs"][0]["tiers"]["~columns"]["output_ids"] == {"~same": [[1, 2], [3]]}
    back = unpack(orjson.loads(orjson.dumps(stored)), "x")["framing"]["legs"][0]["tiers"]
    back[1]["output_ids"][0][1] += 1  # one tier decodes a row differently: the other must not
    assert back[0]["output_ids"] == [[1, 2], [3]] and back[1]["output_ids"] == [[1, 3], [3]]


def test_a_gzip_record_that_unpacks_past_the_limit_is_refused_before_it_fills_memory(
    both_suites, tmp_path, monkeypatch
):
    import measure.record.pack as pack_module

    doc, path = both_suites
    gz = _place(tmp_path / "results", doc, read_bytes(path), gz=True)
    monkeypatch.setattr(pack_module, "MAX_JSON_BYTES", 4096)  # a bomb, scaled down: the real limit is 512 MiB
    with pytest.raises(MeasureError, match=r"\.json\.gz: gzip record unpacks to over 4,096 bytes"):
        load_record(gz)


def test_a_packed_record_that_is_invalid_elsewhere_names_that_field_to_every_reader(both_suites, tmp_path):
    """The site reads packed samples as arrays: a fault elsewhere in the record is still the one named."""
    doc = json.loads(json.dumps(both_suites[0]))
    doc["golden"]["rows"] = "many"
    path = _place(tmp_path, doc, json.dumps(pack(doc)).encode("utf-8"))
    for read in (load_record, load):
        with pytest.raises(MeasureError, match=r"field golden/rows: 'many' is not of type 'integer'"):
            read(path)


# ------------------------------------------------------------------ later legs share the first leg's facts


def _marked(packed: dict[str, Any]) -> int:
    """Facts stored as the first leg's (counted with the columns unpacked: a column of markers is one ``~same``)."""
    from measure.record.pack import _unpack_columns

    return orjson.dumps(_unpack_columns(packed["framing"])).count(FIRST_LEG.encode())


def test_later_legs_store_the_python_legs_facts_once_and_unpack_bit_for_bit():
    """The node and browser legs decode as Python does: their output ids, outputs and (node's int8 and int4 tiers
    here) framing blocks are the Python leg's, stored as a marker each (record version 5), and unpack as copies
    of their own."""
    doc = load_record(DATA_DIR / "record-v4.json")  # migrated: version 5
    packed = pack(doc)
    assert _marked(packed) == 14  # every later tier's output_ids and outputs, and two of node's blocks
    back = unpack(orjson.loads(orjson.dumps(packed)), "x")
    assert orjson.dumps(back) == orjson.dumps(doc)
    legs = back["framing"]["legs"]
    node, python = legs[1]["tiers"][0], legs[0]["tiers"][0]
    assert node["output_ids"] == python["output_ids"] and node["output_ids"] is not python["output_ids"]
    node["output_ids"][0].append(7)  # each its own copy: changing one leg's never changes another's
    assert node["output_ids"] != python["output_ids"]
    shared, plain = (len(orjson.dumps(p)) for p in (packed, pack(doc | {"schema_version": 4})))
    assert shared < plain - 4_000, (shared, plain)  # 4.4 kB of 36 here


def test_a_reader_that_makes_the_record_at_once_shares_a_fact_stored_once_and_reads_the_same_record():
    """``arrays=True`` (the record model's reader, which never changes the document) lets one fact stand for every
    place it fills, the first leg's and a column's repeated values alike, instead of copying it: the same
    document, the same record."""
    from measure.record.model import from_document

    doc = load_record(DATA_DIR / "record-v4.json")
    packed = orjson.loads(orjson.dumps(pack(doc)))
    shared = unpack(orjson.loads(orjson.dumps(packed)), "x", arrays=True)
    legs = shared["framing"]["legs"]
    assert legs[1]["tiers"][0]["output_ids"] is legs[0]["tiers"][0]["output_ids"]
    copied = unpack(orjson.loads(orjson.dumps(packed)), "x")
    assert orjson.dumps(shared["framing"]) == orjson.dumps(copied["framing"]) == orjson.dumps(doc["framing"])
    assert from_document(shared, "x").framing == from_document(copied, "x").framing


def test_a_leg_that_decodes_otherwise_keeps_its_own_facts_and_version_4_is_stored_as_it_was():
    doc = load_record(DATA_DIR / "record-v4.json")
    node = doc["framing"]["legs"][1]["tiers"][0]
    node["output_ids"][0] = [*node["output_ids"][0][:-1], 3]  # the last token of the first row differs
    packed = pack(doc)
    assert _marked(packed) == 13 and orjson.dumps(unpack(packed, "x")) == orjson.dumps(doc)
    assert _marked(pack(doc | {"schema_version": 4})) == 0  # a version-4 reader could not unpack a marker


def test_a_marker_with_nothing_to_copy_names_the_field():
    doc = load_record(DATA_DIR / "record-v4.json")
    packed = orjson.loads(orjson.dumps(pack(doc)))
    doc_legs = doc["framing"]["legs"]
    packed["framing"]["legs"][0] = orjson.loads(orjson.dumps(doc_legs[0] | {"tiers": doc_legs[0]["tiers"][1:]}))
    with pytest.raises(MeasureError, match=r"x: field framing: .*is stored as the first leg's, which has none"):
        unpack(packed, "x")
