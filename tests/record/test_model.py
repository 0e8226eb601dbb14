"""The typed record model reads every field the readers use, identically to the stored document."""

from __future__ import annotations

import numpy as np
import pytest
from tests_support import DATA_DIR

from measure.record.io import load, load_record
from measure.record.model import Record
from measure.record.model.wallclock import (
    CasePass,
    SpeculativeCounts,
    Wallclock,
    append_pass,
    case_entry,
    greedy_facts,
    speculative_facts,
    wallclock_header,
)

DATA = DATA_DIR


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


def _pass(tokens: list[int], speculative: bool) -> CasePass:
    seconds = [0.01 * (i + 1) for i in range(len(tokens))]
    spec = seconds if speculative else None
    return CasePass(
        tokens=tokens,
        calls=[t + 1 for t in tokens],
        wall_s=seconds,
        run_s=seconds,
        cpu_s=seconds,
        tokenize_s=seconds,
        drafter_run_s=spec,
        verifier_run_s=spec,
        first_token_s=None if speculative else seconds,
    )


def test_a_case_written_through_the_model_has_the_records_key_order_and_reads_back():
    """The writers spell the keys the reader takes apart, in the order records have always had them."""
    counts = SpeculativeCounts([4, 4], [3, 2], [2, 2], [1, 0], [4, 4], [2, 2], [2, 2], [2, 1])
    greedy = case_entry(greedy_facts("base-int8"), _pass([5, 6], False), None)
    spec = case_entry(speculative_facts("a->b", "a", "b", 2), _pass([5, 6], True), counts)
    for entry, kind in ((greedy, False), (spec, True)):
        append_pass(entry, _pass([5, 6], kind))
        append_pass(entry, _pass([5, 7], kind))
    samples = ["wall_s", "run_s", "cpu_s", "tokenize_s"]
    assert list(greedy) == ["kind", "tier", "tokens", "calls", "outputs_stable", *samples, "first_token_s"]
    assert list(spec) == [
        *("kind", "pair", "drafter", "verifier", "k", "tokens", "calls", "outputs_stable", "proposed", "accepted"),
        *("rounds", "bonus", "drafter_calls", "verifier_calls", "proposed_by_position", "accepted_by_position"),
        *samples,
        *("drafter_run_s", "verifier_run_s"),
    ]
    assert greedy["outputs_stable"] is False and greedy["tokens"] == [5, 6]
    part = wallclock_header(1, 0.0, 2, "ids", True, 1e-6) | {"repeats_done": 2}
    part["cases"] = {"base-int8": greedy, "a->b@k2": spec}
    read = Wallclock.from_dict(part)
    assert read is not None and read.timed == "ids"
    assert read.cases["base-int8"].wall_s.shape == (2, 2) and read.cases["base-int8"].first_token_s is not None
    assert read.cases["a->b@k2"].accepted_by_position == (2, 1) and read.cases["a->b@k2"].drafter_run_s is not None
