"""Verdicts are pure functions of facts plus policy: re-judging needs no re-run; gates catch bugs."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

from measure.analysis.rules import failed_gates
from measure.analysis.rules import verdicts as judge
from measure.policy import policy_from
from measure.record.io import SCHEMA_VERSION, load_record
from measure.record.model import from_document

DATA = Path(__file__).resolve().parent / "data"


def _doc():
    return load_record(DATA / f"record-v{SCHEMA_VERSION}.json")


def verdicts(doc: dict, policy=None):
    return judge(from_document(doc, "test"), policy)


def test_the_recorded_fixture_gets_the_verdicts_its_numbers_call_for():
    found = {(v.topic, v.subject): v.outcome for v in verdicts(_doc())}
    assert found[("decode-linear", "base-int8")] == "success"
    assert found[("harness-overhead", "small-int4")] == "warning"  # 10.2% outside session.run
    assert found[("framing-parity", "base-int8")] == "warning"  # presents move 0.12, argmax does not
    assert found[("output-preservation", "small-int4->base-int8")] == "success"
    assert found[("self-acceptance", "base-int8->base-int8")] == "success"
    assert not failed_gates(verdicts(_doc()))


def test_a_policy_change_rejudges_without_a_rerun():
    doc = _doc()
    strict = replace(policy_from(doc["config"]["policy"]), overhead_max=0.0)
    loose = replace(strict, overhead_max=1.0)
    overhead = lambda vs: {v.subject: v.outcome for v in vs if v.topic == "harness-overhead"}  # noqa: E731
    assert set(overhead(verdicts(doc, strict)).values()) == {"warning"}
    assert set(overhead(verdicts(doc, loose)).values()) == {"success"}


def test_framing_verdicts_follow_the_measured_facts():
    found = {(v.topic, v.subject): v for v in verdicts(_doc())}
    fp32 = found[("framing-parity", "base-fp32")]
    assert fp32.outcome == "success" and fp32.value < 1e-4
    int8 = found[("framing-parity", "base-int8")]
    assert int8.outcome in ("warning", "failure") and int8.value > 1e-2


def test_fp32_output_preservation_failure_is_a_gate():
    doc = _doc()
    assert not [v for v in failed_gates(verdicts(doc)) if v.outcome == "failure"]
    broken = copy.deepcopy(doc)
    broken["tiers"]["base-int8"]["fingerprint"]["precision"] = "fp32"  # pretend the verifier is fp32
    acc = next(a for a in broken["framing"]["acceptance"] if a["verifier"] == "base-int8" and not a["self"])
    acc["preserved"] -= 1
    acc["differing"].append({"line": 1, "input": "x", "speculative": "a", "greedy": "b"})
    gates = [v for v in failed_gates(verdicts(broken)) if v.outcome == "failure"]
    assert [v.topic for v in gates] == ["output-preservation"]
