"""The typed record model reads every field the readers use, identically to the stored document."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from measure.record.io import load, load_record
from measure.record.model import Record

DATA = Path(__file__).resolve().parent / "data"


def _check(r: Record, doc: dict) -> None:
    assert (r.run_id, r.machine_id, r.started_at, r.complete) == (
        doc["run_id"],
        doc["machine_id"],
        doc["started_at"],
        doc["complete"],
    )
    assert r.schema_version == doc["schema_version"] and r.golden.sha256 == doc["golden"]["sha256"]
    assert r.commit == doc["environment"]["git"]["commit"]
    assert list(r.tiers) == list(doc["tiers"])
    for name, t in doc["tiers"].items():
        fp = r.tiers[name]
        assert (fp.role, fp.precision) == (t["role"], t["fingerprint"]["precision"])
        assert [f.sha256 for f in fp.files] == [f["sha256"] for f in t["fingerprint"]["files"]]
    assert r.config.wallclock.bootstrap == doc["config"]["wallclock"]["bootstrap"]
    assert r.config.policy.exponent_max == doc["config"]["policy"]["exponent_max"]
    assert r.wallclock.timed == doc["wallclock"].get("timed", "text")  # records before the field timed text in
    cases = doc["wallclock"]["cases"]
    assert list(r.wallclock.cases) == list(cases)
    for name, c in cases.items():
        case = r.wallclock.cases[name]
        assert case.kind == c["kind"] and list(case.tokens) == c["tokens"]
        np.testing.assert_array_equal(case.wall_s, np.asarray(c["wall_s"]))
        np.testing.assert_array_equal(case.run_s, np.asarray(c["run_s"]))
        assert not case.wall_s.flags.writeable  # read-only: no reader can change what it was handed
        if "tokenize_s" in c:
            np.testing.assert_array_equal(case.tokenize_s, np.asarray(c["tokenize_s"]))
        else:
            assert case.tokenize_s is None and case.tokenize_us_per_row is None
        if c["kind"] == "speculative":
            assert (case.k, list(case.accepted), list(case.proposed)) == (c["k"], c["accepted"], c["proposed"])
            np.testing.assert_array_equal(case.drafter_run_s, np.asarray(c["drafter_run_s"]))
    legs = doc["framing"]["legs"]
    assert [leg.runtime for leg in r.legs] == [leg["runtime"] for leg in legs]
    for leg, raw in zip(r.legs, legs, strict=True):
        for t, raw_t in zip(leg.tiers, raw["tiers"], strict=True):
            assert t.tier == raw_t["tier"] and t.status == raw_t["status"]
            assert t.argmax_agree == sum(b["argmax_agree"] for b in raw_t.get("blocks", []))
            assert t.argmax_total == sum(b["argmax_total"] for b in raw_t.get("blocks", []))
            assert list(t.outputs) == raw_t.get("outputs", [])
            if "quality" in raw_t:
                assert (t.quality.exact, t.quality.rows) == (raw_t["quality"]["exact"], raw_t["quality"]["rows"])
    for a, raw_a in zip(r.framing.acceptance, doc["framing"]["acceptance"], strict=True):
        assert (a.name, a.preserved, a.runtime.accepted) == (
            f"{raw_a['drafter']}->{raw_a['verifier']}",
            raw_a["preserved"],
            raw_a["runtime"]["accepted"],
        )


@pytest.mark.parametrize("name", ["record-v1.json", "record-v2.json"])
def test_every_recorded_fixture_reads_through_the_model(name):
    doc = load_record(DATA / name)  # v1 is migrated on the way in
    _check(load(DATA / name), doc)


def test_a_record_measure_run_writes_reads_through_the_model(both_suites):
    doc, path = both_suites
    _check(load(path), doc)


def test_a_run_times_ids_and_records_tokenizing_apart(both_suites):
    """The timed region is ids in -> ids out; each row's tokenizing is a sample of its own, shaped like wall_s."""
    doc, path = both_suites  # load_record validated it against the schema
    assert doc["wallclock"]["timed"] == "ids"
    r = load(path)
    assert r.wallclock.timed == "ids"
    for name, case in r.wallclock.cases.items():
        assert case.tokenize_s is not None and case.tokenize_s.shape == case.wall_s.shape == (3, 16), name
        assert (case.tokenize_s > 0).all() and case.tokenize_us_per_row > 0
        if case.kind == "greedy":
            assert case.first_token_s is not None and (case.first_token_s <= case.wall_s).all()


def test_an_old_record_reads_as_timed_from_text():
    r = load(DATA / "record-v2.json")
    assert r.wallclock.timed == "text"
    assert all(c.tokenize_s is None for c in r.wallclock.cases.values())


def test_rows_same_counts_rows_no_block_changes():
    r = load(DATA / "record-v2.json")
    for t in r.python_tiers:
        steps = list(zip(*(b.first_divergent_step for b in t.blocks), strict=True))
        assert t.rows_same == sum(all(s is None for s in row) for row in steps)
        assert t.rows == len(steps)
