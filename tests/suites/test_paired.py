"""``measure ab``: two artifact sets in one job, repeats paired; ``compare`` pairs its two records by repeat."""

from __future__ import annotations

import copy
import hashlib
import json
import uuid
from pathlib import Path

import numpy as np
import pytest
from tests_support import ROOT, write_config

from measure.analysis.comparison import ONE_JOB, SAME_RUN, compare_records, pairing_of, samples_of
from measure.cli import main
from measure.errors import MeasureError
from measure.record.io import load, load_record
from measure.record.model import from_document
from measure.suites.config import load_config
from measure.suites.golden import head, load_golden
from measure.suites.paired import run_paired
from measure.suites.wallclock import base_first

DATA = ROOT / "tests" / "data"
PAIRED = (DATA / "paired-aa-base.json", DATA / "paired-aa-new.json")
"""A real paired A/A job: the demo config against itself, 32 rows, 7 repeats (see benchmarks/bench_compare.py)."""


def _ab(capsys, *argv: str) -> tuple[int, list[str], str]:
    code = main(["ab", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_ab_writes_two_complete_records_paired_by_repeat(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CI", "1")
    config = write_config(tmp_path, rows=2, repeats=3)
    code, lines, err = _ab(capsys, str(config), str(config), "--out", str(tmp_path / "ab"))
    assert code == 0, err
    base_path, new_path = (Path(line) for line in lines)
    assert base_path.parent.parent == new_path.parent.parent == tmp_path / "ab"
    docs = [load_record(p) for p in (base_path, new_path)]  # schema-valid, placed by their ids
    base, new = (load(p) for p in (base_path, new_path))
    assert base.complete and new.complete and base.run_id != new.run_id
    assert base.pairing.id == new.pairing.id and str(uuid.UUID(base.pairing.id)) == base.pairing.id
    assert (base.pairing.side, new.pairing.side) == ("base", "new")
    assert base.pairing.partner_run_id == new.run_id and new.pairing.partner_run_id == base.run_id
    assert base.suites == new.suites == ("wallclock",) and base.framing is None
    assert base.wallclock.profile is None and docs[0]["config"]["wallclock"]["profile"] is False  # off by default
    assert list(base.wallclock.cases) == list(new.wallclock.cases)
    assert len(base.wallclock.cases) == 3 + 2  # three tiers, one pair at k 2 and 4
    for doc in docs:
        assert doc["wallclock"]["repeats_done"] == 3
        for i, (name, case) in enumerate(doc["wallclock"]["cases"].items()):
            assert len(case["wall_s"]) == 3 and len(case["wall_s"][0]) == 2
            assert doc["pairing"]["base_first"][name] == [base_first(r, i, 0) for r in range(3)]
    assert docs[0]["pairing"]["base_first"] == docs[1]["pairing"]["base_first"]
    assert base.pairing.base_first == {n: tuple(f) for n, f in docs[0]["pairing"]["base_first"].items()}
    assert pairing_of(base, new) == pairing_of(new, base) == ONE_JOB
    assert pairing_of(base, new, "first_token_ms") is None  # the cost profile's metrics are not paired
    compared = main(["compare", str(base_path), str(new_path)])
    out = capsys.readouterr().out
    assert compared == 0 and out.startswith(f"{ONE_JOB}\n") and "A/A drift" not in out


def test_the_order_alternates_between_rows_cases_and_repeats():
    assert [base_first(0, 0, k) for k in range(4)] == [True, False, True, False]
    assert [base_first(r, 0) for r in range(4)] == [True, False, True, False]
    assert [base_first(0, i) for i in range(4)] == [True, False, True, False]
    for r in range(3):  # in every pass of every case BASE goes first on half the rows (of an even count)
        for i in range(15):
            assert sum(base_first(r, i, k) for k in range(64)) == 32


def test_an_interrupted_job_leaves_both_records_with_every_pass_measured(tmp_path, monkeypatch):
    config = load_config(write_config(tmp_path, rows=2, repeats=3))
    seen = []

    def progress(what: str, done: int, total: int) -> None:
        seen.append(what)
        if sum("repeat" in w for w in seen) == 2:  # the second paired pass (both sides of it) is measured
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_paired(config, config, tmp_path / "ab", progress=progress)
    paths = sorted((tmp_path / "ab").glob("*/*.json"))
    assert len(paths) == 2
    records = [load(p) for p in paths]
    assert all(not r.complete and r.error == "interrupted" for r in records)
    timed = sorted(sum(len(c.wall_s) for c in r.wallclock.cases.values()) for r in records)
    assert timed == [2, 2]


def test_mismatched_tier_or_pair_names_are_one_error_naming_the_config_and_the_name(tmp_path):
    base_path = write_config(tmp_path, rows=2, repeats=2)
    text = base_path.read_text(encoding="utf-8")
    renamed = tmp_path / "renamed.toml"
    renamed.write_text(text.replace('"base-fp32"', '"base-fp32-new"'), encoding="utf-8")
    base, new = load_config(base_path), load_config(renamed)
    with pytest.raises(MeasureError, match=r"renamed\.toml: tier 'base-fp32-new' is not in BASE config .*suite\.toml"):
        run_paired(base, new, tmp_path / "ab")
    with pytest.raises(MeasureError, match=r"suite\.toml: tier 'base-fp32' is not in BASE config .*renamed\.toml"):
        run_paired(new, base, tmp_path / "ab")
    no_pair = tmp_path / "no-pair.toml"
    no_pair.write_text(text.split("[[pairs]]")[0] + "[wallclock]" + text.split("[wallclock]")[1], encoding="utf-8")
    with pytest.raises(MeasureError, match=r"pair 'small-int4->base-int8' is not in NEW config .*no-pair\.toml"):
        run_paired(base, load_config(no_pair), tmp_path / "ab")
    assert not (tmp_path / "ab").exists()  # refused before anything is measured or written


def test_a_golden_subset_is_hashed_as_a_file_of_its_lines(tmp_path):
    golden = load_golden(write_config(tmp_path, rows=5).parent / "rows.jsonl")
    lines = (tmp_path / "rows.jsonl").read_bytes().splitlines(keepends=True)
    two = head(golden, 2)
    assert len(two) == 2 and two.rows == golden.rows[:2]
    assert two.sha256 == hashlib.sha256(b"".join(lines[:2])).hexdigest() != golden.sha256
    assert head(golden, 5) == head(golden, 50) == golden


@pytest.mark.parametrize(
    "path",
    [
        *sorted(p for p in DATA.glob("*.json") if not p.name.endswith("-section.json")),
        *sorted((ROOT / "results").glob("*/*.json")),
    ],
    ids=lambda p: p.name,
)
@pytest.mark.parametrize("metric", ["wall", "cpu"])
def test_a_record_compared_with_itself_is_same_in_every_case(path, metric, capsys):
    if metric == "cpu" and not samples_of(load(path), "cpu"):
        pytest.skip("recorded before CPU time was")
    code = main(["compare", str(path), str(path), "--metric", metric, "--fail-on", "inconclusive"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.startswith(f"{SAME_RUN}\n")
    calls = [line.split()[-1] for line in out.splitlines()[2:-1]]
    assert calls and set(calls) == {"same"}


def test_the_real_paired_aa_job_is_paired_and_never_a_false_call():
    base, new = (load(p) for p in PAIRED)
    assert pairing_of(base, new) == ONE_JOB
    for metric in ("wall", "cpu"):
        found = compare_records(base, new, metric=metric)
        assert len(found) == 15 and not {c.outcome for c in found} & {"slower", "faster"}


def _job(doc: dict, side: str, job: str, partner: str) -> dict:
    d = copy.deepcopy(doc)
    d["pairing"] = {"id": job, "side": side, "partner_run_id": partner, "order": "alternating"}
    return d


def test_pairing_is_what_finds_a_slowdown_that_host_noise_hides_from_two_runs():
    """Repeats swing 1.6x with the host; NEW is 10% slower in every repeat. Only the pairing sees it."""
    doc = json.loads((DATA / "record-v2.json").read_text(encoding="utf-8"))
    swing = [1.0, 1.6, 1.1, 1.5, 1.2, 1.4, 1.3]
    base, new = copy.deepcopy(doc), copy.deepcopy(doc)
    for d, factor in ((base, 1.0), (new, 1.1)):
        for case in d["wallclock"]["cases"].values():
            row = case["wall_s"][0]
            case["wall_s"] = [[w * s * factor * (1 + 0.002 * i) for w in row] for i, s in enumerate(swing)]
            for key in ("run_s", "cpu_s", "first_token_s", "drafter_run_s", "verifier_run_s"):
                case.pop(key, None)
            case["run_s"] = case["wall_s"]
        d["wallclock"]["repeats"] = d["wallclock"]["repeats_done"] = len(swing)
        d["config"]["wallclock"]["repeats"] = len(swing)
    job, other = str(uuid.uuid4()), "20261203T000000Z-abcdef"
    base_rec = from_document(_job(base, "base", job, other), "base")
    new_rec = from_document(_job(new | {"run_id": other}, "new", job, base["run_id"]), "new")
    assert pairing_of(base_rec, new_rec) == ONE_JOB
    paired = compare_records(base_rec, new_rec)
    welch = compare_records(base_rec, new_rec, paired=False)
    assert {c.outcome for c in paired} == {"slower"}
    assert all(c.ratio.value == pytest.approx(1.1) and c.ratio.lo > 1.05 for c in paired)
    assert "slower" not in {c.outcome for c in welch}
    # The same two records without the pairing block are two runs, compared by Welch.
    plain = compare_records(from_document(base, "base"), from_document(new | {"run_id": other}, "new"))
    assert [c.outcome for c in plain] == [c.outcome for c in welch]


def test_the_sides_of_one_job_need_as_many_repeats_of_every_case(tmp_path):
    base_doc, new_doc = (json.loads(p.read_text(encoding="utf-8")) for p in PAIRED)
    case = new_doc["wallclock"]["cases"]["base-int8"]
    for key in ("wall_s", "run_s", "cpu_s", "first_token_s"):
        case[key] = case[key][:-1]
    new_doc["complete"] = False
    with pytest.raises(MeasureError, match=r"new: case base-int8: 6 repeats .* base has 7"):
        compare_records(from_document(base_doc, "base"), from_document(new_doc, "new"))


def test_the_paired_fixtures_are_small_real_and_valid():
    assert sum(p.stat().st_size for p in PAIRED) < 500_000
    docs = [load_record(p) for p in PAIRED]
    assert docs[0]["pairing"]["id"] == docs[1]["pairing"]["id"]
    assert all(np.all(np.asarray(c["wall_s"]) > 0) for d in docs for c in d["wallclock"]["cases"].values())


def test_the_two_sides_of_a_job_are_never_an_aa_pair_of_the_calibration():
    from measure.analysis.calibration import build_key

    docs = [json.loads(p.read_text(encoding="utf-8")) for p in PAIRED]
    for d in docs:
        d["environment"]["git"] = {"commit": "a" * 40, "dirty": False}  # a pinned build, as in CI
    base, new = (from_document(d, "r") for d in docs)
    assert build_key(base) is not None and build_key(base) != build_key(new)
    plain = [from_document({k: v for k, v in d.items() if k != "pairing"}, "r") for d in docs]
    assert build_key(plain[0]) == build_key(plain[1])  # without the block the same build measured twice
