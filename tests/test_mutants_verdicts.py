"""Each verdict's rule at and around its threshold, its answer text, and which failures are gates.

Timings are handed in as :class:`TierTiming`/:class:`PairTiming` values, so every interval is
exactly where the test puts it; framing facts are edited in the recorded fixture.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest

from measure.analysis import PairTiming, TierTiming
from measure.model import from_document
from measure.policy import Policy
from measure.record import SCHEMA_VERSION, load_record
from measure.stats import Estimate
from measure.verdicts import Verdict, failed_gates, framing_verdicts, verdicts, wallclock_verdicts

DATA = Path(__file__).resolve().parent / "data"
POLICY = Policy(exponent_max=1.15, overhead_max=0.1, framing_tolerance=1e-4, speedup_min=1.0)


def _doc() -> dict:
    return copy.deepcopy(load_record(DATA / f"record-v{SCHEMA_VERSION}.json"))


def _record(doc: dict | None = None):
    return from_document(doc or _doc(), "test")


def _tier(name: str, lo: float, hi: float, overhead: float = 0.05, exponent: bool = True) -> TierTiming:
    e = Estimate(1.0, 1.0, 1.0)
    return TierTiming(
        name, "plain", "int8", 10, e, e, e, None, Estimate((lo + hi) / 2, lo, hi) if exponent else None, overhead
    )


def _pair(pair: str, k: int, value: float, lo: float, hi: float) -> PairTiming:
    e = Estimate(1.0, 1.0, 1.0)
    return PairTiming(
        f"{pair}@k{k}", pair, "d", "v", k, e, 1.0, 2.0, (1.0,), 0.1, 1.5, Estimate(value, lo, hi), 1.0, 0.05
    )


def _by(found: list[Verdict], topic: str) -> dict[str, Verdict]:
    return {v.subject: v for v in found if v.topic == topic}


def test_the_linear_gate_at_its_threshold():
    tiers = [
        _tier("below", 0.9, 1.1),
        _tier("touching", 1.0, 1.15),  # hi == max: still O(T)
        _tier("straddling", 1.1, 1.2),
        _tier("at-lo", 1.15, 1.3),  # lo == max: not wholly above it
        _tier("above", 1.16, 1.3),
        _tier("no-fit", 0, 0, exponent=False),
    ]
    found = _by(wallclock_verdicts(_record(), POLICY, tiers, []), "decode-linear")
    assert {n: (v.outcome, v.answer, v.gate) for n, v in found.items()} == {
        "below": ("success", "yes", False),
        "touching": ("success", "yes", False),
        "straddling": ("inconclusive", "inconclusive", False),
        "at-lo": ("inconclusive", "inconclusive", False),
        "above": ("failure", "no", True),
    }
    above = found["above"]
    assert (above.value, above.lo, above.hi) == pytest.approx((1.23, 1.16, 1.3))
    assert above.rule == "fitted exponent's 95% interval at most 1.15"
    assert above.question == "Is decoding O(T)?"


def test_harness_overhead_at_its_threshold():
    tiers = [_tier("low", 0.9, 1.0, 0.05), _tier("at", 0.9, 1.0, 0.1), _tier("high", 0.9, 1.0, 0.11)]
    found = _by(wallclock_verdicts(_record(), POLICY, tiers, []), "harness-overhead")
    assert {n: (v.outcome, v.answer, v.value) for n, v in found.items()} == {
        "low": ("success", "yes", 0.05),
        "at": ("success", "yes", 0.1),
        "high": ("warning", "no", 0.11),
    }
    assert not any(v.gate for v in found.values())
    assert found["low"].rule == "wall time outside session.run at most 10%"


def test_speculative_speedup_judges_the_best_k_against_the_minimum():
    pairs = [
        _pair("a", 2, 1.3, 1.1, 1.5),
        _pair("a", 4, 1.6, 1.2, 2.0),  # best observed value for a
        _pair("a", 8, 1.4, 1.3, 1.5),
        _pair("b", 2, 1.0, 0.9, 1.1),
        _pair("c", 2, 0.8, 0.7, 0.9),
        _pair("d", 2, 1.1, 1.0, 1.2),  # lo == min: not wholly above
        _pair("e", 2, 0.9, 0.8, 1.0),  # hi == min: not wholly below
    ]
    found = {v.subject: v for v in wallclock_verdicts(_record(), POLICY, [], pairs)}
    assert {n: (v.outcome, v.answer) for n, v in found.items()} == {
        "a (best k=4)": ("success", "yes"),
        "b (best k=2)": ("inconclusive", "inconclusive"),
        "c (best k=2)": ("failure", "no"),
        "d (best k=2)": ("inconclusive", "inconclusive"),
        "e (best k=2)": ("inconclusive", "inconclusive"),
    }
    a = found["a (best k=4)"]
    assert (a.value, a.lo, a.hi, a.gate, a.topic) == (1.6, 1.2, 2.0, False, "speculative-speedup")
    assert a.rule == "speedup over the verifier's greedy decode, 95% interval above 1.0"


def _python_tier(doc: dict, name: str) -> dict:
    return next(t for t in doc["framing"]["legs"][0]["tiers"] if t["tier"] == name)


def test_framing_parity_success_warning_failure_and_its_gate():
    doc = _doc()
    for b in _python_tier(doc, "base-fp32")["blocks"]:  # values move exactly to the tolerance: still success
        b["present_max_abs_diff"] = 1e-4
    for b in _python_tier(doc, "small-int4")["blocks"]:
        b["present_max_abs_diff"] = 2e-4
    found = _by(framing_verdicts(_record(doc), POLICY), "framing-parity")
    assert (found["base-fp32"].outcome, found["base-fp32"].answer) == ("success", "no: 384/384")
    assert found["base-fp32"].value == 1e-4 and not found["base-fp32"].gate
    assert found["small-int4"].outcome == "warning" and not found["small-int4"].gate  # int4: not a gate
    assert found["small-int4"].answer == "values move (max 0.0002), decisions do not: 384/384"
    assert found["base-fp32"].rule == "single-step == batched argmax everywhere and presents within 0.0001"
    for b in _python_tier(doc, "base-fp32")["blocks"]:
        b["present_max_abs_diff"] = 2e-4
    fp32 = _by(framing_verdicts(_record(doc), POLICY), "framing-parity")["base-fp32"]
    assert fp32.outcome == "warning" and fp32.gate  # an fp32 warning is a gate too
    _python_tier(doc, "small-int4")["blocks"][0]["argmax_agree"] -= 1
    int4 = _by(framing_verdicts(_record(doc), POLICY), "framing-parity")["small-int4"]
    assert (int4.outcome, int4.answer, int4.gate) == ("failure", "yes: 383/384 argmax agree", False)


def _acceptance(doc: dict, verifier: str, self_pair: bool) -> dict:
    return next(a for a in doc["framing"]["acceptance"] if a["verifier"] == verifier and a["self"] == self_pair)


def test_output_preservation_and_self_acceptance():
    doc = _doc()
    found = framing_verdicts(_record(doc), POLICY)
    assert not failed_gates(found)
    kept = _by(found, "output-preservation")["small-int4->base-int8"]
    assert (kept.outcome, kept.answer, kept.value) == ("success", "12/12 rows identical", 1.0)
    a = _acceptance(doc, "base-int8", False)
    a["preserved"] = 9
    a["runtime"]["accepted"] = 100
    s = _acceptance(doc, "small-int4", True)
    s["runtime"]["accepted"] = 108
    found = framing_verdicts(_record(doc), POLICY)
    lost = _by(found, "output-preservation")["small-int4->base-int8"]
    assert (lost.outcome, lost.answer, lost.value, lost.gate) == ("failure", "9/12 rows identical", 0.75, False)
    own = _by(found, "self-acceptance")["small-int4->small-int4"]
    assert (own.outcome, own.answer, own.gate) == ("warning", "108/109", False)
    assert own.value == pytest.approx(108 / 109)
    info = _by(found, "acceptance")["small-int4->base-int8"]
    assert (info.outcome, info.answer) == ("info", "probe 1.0000, runtime 0.9174")
    # the same losses with an fp32 verifier are gates
    doc["tiers"]["base-int8"]["fingerprint"]["precision"] = "fp32"
    doc["tiers"]["small-int4"]["fingerprint"]["precision"] = "fp32"
    gates = {(v.topic, v.subject) for v in failed_gates(framing_verdicts(_record(doc), POLICY))}
    assert ("output-preservation", "small-int4->base-int8") in gates
    assert ("self-acceptance", "small-int4->small-int4") in gates
    assert ("self-acceptance", "base-int8->base-int8") not in gates


def test_acceptance_with_nothing_proposed_says_so():
    doc = _doc()
    a = _acceptance(doc, "base-int8", False)
    a["probe"] = a["runtime"] = {"accepted": 0, "proposed": 0}
    info = _by(framing_verdicts(_record(doc), POLICY), "acceptance")["small-int4->base-int8"]
    assert info.answer == "nothing proposed" and info.value is None


def _node_tier(doc: dict, name: str) -> dict:
    return next(t for t in doc["framing"]["legs"][1]["tiers"] if t["tier"] == name)


def test_another_runtime_is_informative_never_a_gate():
    doc = _doc()
    node = _node_tier(doc, "base-fp32")
    node["blocks"][0]["first_divergent_step"][0] = 3
    node["output_ids"][0] = [*node["output_ids"][0][:-1], 99]
    int4 = _node_tier(doc, "small-int4")
    int4["output_ids"][1] = [7]
    int4["output_ids"][2] = [7]
    found = framing_verdicts(_record(doc), POLICY)
    frame = _by(found, "runtime-framing-parity")
    fp32 = frame["base-fp32 under onnxruntime-node"]
    assert (fp32.outcome, fp32.answer) == ("failure", "yes: 11/12 rows keep every argmax")
    assert frame["base-int8 under onnxruntime-node"].outcome == "warning"
    assert frame["small-int4 under onnxruntime-node"].answer == "no: 12/12 rows"
    same = _by(found, "runtime-parity")
    assert (same["base-fp32 under onnxruntime-node"].outcome, same["base-fp32 under onnxruntime-node"].answer) == (
        "failure",
        "11/12 greedy decodes identical",
    )
    assert same["small-int4 under onnxruntime-node"].outcome == "warning"  # not fp32: a warning
    assert same["small-int4 under onnxruntime-node"].value == pytest.approx(10 / 12)
    assert same["base-int8 under onnxruntime-node"].outcome == "success"
    assert not [v for v in failed_gates(found) if v.topic.startswith("runtime")]


def test_a_runtime_or_tier_that_did_not_run_is_recorded_with_its_reason():
    doc = _doc()
    t = _node_tier(doc, "base-int8")
    for key in ("blocks", "output_ids", "outputs"):
        t.pop(key, None)
    t.update(status="failed", reason="IR version 11 unknown")
    found = _by(framing_verdicts(_record(doc), POLICY), "runtime-parity")
    v = found["base-int8 under onnxruntime-node"]
    assert (v.outcome, v.answer) == ("info", "failed: IR version 11 unknown")
    leg = doc["framing"]["legs"][1]
    leg.update(status="skipped", reason="node not found", tiers=[])
    (only,) = [v for v in framing_verdicts(_record(doc), POLICY) if v.topic.startswith("runtime")]
    assert (only.subject, only.outcome, only.answer) == ("onnxruntime-node", "info", "skipped: node not found")


def test_the_record_policy_is_the_default_and_verdicts_round_trip():
    r = _record()
    stated = r.config.policy
    assert verdicts(r) == verdicts(r, stated)
    assert verdicts(r) != verdicts(r, replace(stated, overhead_max=0.0))
    for v in verdicts(r):
        assert Verdict.from_dict(v.to_dict()) == v
    with pytest.raises(KeyError):
        Verdict.from_dict(verdicts(r)[0].to_dict() | {"extra": 1})
    found = [_tier("x", 2, 3)]
    v = wallclock_verdicts(r, POLICY, found, [])
    assert failed_gates(v) == [v[0]] and failed_gates([]) == []


QUESTIONS = {
    "decode-linear": "Is decoding O(T)?",
    "harness-overhead": "Is the harness overhead small?",
    "speculative-speedup": "Is speculative decoding faster than plain greedy on this machine?",
    "framing-parity": "Does framing change decodes of this artifact?",
    "runtime-framing-parity": "Does framing change decodes under another runtime?",
    "runtime-parity": "Does another runtime decode these artifacts like Python onnxruntime?",
    "output-preservation": "Is speculative output identical to plain greedy?",
    "self-acceptance": "Does the artifact accept its own drafts under batched framing?",
    "acceptance": "Does the probe's acceptance hold at runtime?",
}


def test_every_topic_asks_its_one_question():
    found = verdicts(_record())
    assert {v.topic for v in found} == set(QUESTIONS)
    assert all(v.question == QUESTIONS[v.topic] for v in found)


def test_a_tie_in_speedup_keeps_the_first_k_listed():
    pairs = [_pair("a", 2, 1.5, 1.2, 1.8), _pair("a", 4, 1.5, 1.1, 1.9)]
    (v,) = wallclock_verdicts(_record(), POLICY, [], pairs)
    assert (v.subject, v.lo) == ("a (best k=2)", 1.2)


def test_a_cached_verdict_with_other_fields_is_refused():
    v = verdicts(_record())[0]
    with pytest.raises(KeyError, match="verdict fields"):
        Verdict.from_dict({k: x for k, x in v.to_dict().items() if k != "gate"})


RULES = {
    "decode-linear": "fitted exponent's 95% interval at most 1.15",
    "harness-overhead": "wall time outside session.run at most 10%",
    "speculative-speedup": "speedup over the verifier's greedy decode, 95% interval above 1.0",
    "framing-parity": "single-step == batched argmax everywhere and presents within 0.0001",
    "runtime-framing-parity": "single-step == batched argmax on every row and presents within 0.0001",
    "runtime-parity": "the runtime's own greedy decode of every golden row equals Python onnxruntime's, token by token",
    "output-preservation": "every row of the speculative decode equals the verifier's greedy decode",
    "self-acceptance": "drafter == verifier: anything below 1.0 is framing, not model disagreement",
    "acceptance": "probe: verifier checks drafts single-step; runtime: one batched call",
}


def test_every_verdict_states_its_rule():
    found = verdicts(_record(), POLICY)
    assert {v.topic for v in found} == set(RULES)
    assert all(v.rule == RULES[v.topic] for v in found)
    doc = _doc()
    doc["framing"]["legs"][1].update(status="skipped", reason="no node", tiers=[])
    doc["framing"]["legs"][1]["tiers"] = []
    (leg,) = [v for v in framing_verdicts(_record(doc), POLICY) if v.topic == "runtime-parity"]
    assert leg.rule == "the leg runs where its runtime is installed; a missing runtime is recorded, not assumed"
    assert leg.question == QUESTIONS["runtime-parity"]
    doc = _doc()
    _node_tier(doc, "base-int8").update(status="failed", reason="bad IR")
    tier = [v for v in framing_verdicts(_record(doc), POLICY) if v.subject == "base-int8 under onnxruntime-node"]
    assert [(v.question, v.rule) for v in tier] == [
        (QUESTIONS["runtime-parity"], "a tier the runtime cannot load or read is recorded with the reason")
    ]


def test_acceptance_values_and_what_is_missing():
    doc = _doc()
    a = _acceptance(doc, "base-int8", False)
    a["probe"] = {"accepted": 0, "proposed": 0}
    a["runtime"] = {"accepted": 50, "proposed": 100}
    info = _by(framing_verdicts(_record(doc), POLICY), "acceptance")["small-int4->base-int8"]
    assert (info.answer, info.value) == ("nothing proposed", 0.5)
    a["rows"] = a["preserved"] = 0
    kept = _by(framing_verdicts(_record(doc), POLICY), "output-preservation")["small-int4->base-int8"]
    assert kept.value is None and kept.answer == "0/0 rows identical"
    doc["framing"] = None
    assert framing_verdicts(_record(doc), POLICY) == []


def test_runtime_legs_and_tiers_that_cannot_be_compared_are_passed_over():
    doc = _doc()
    legs = doc["framing"]["legs"]
    measured = copy.deepcopy(legs[1])
    legs[1] = {**copy.deepcopy(measured), "status": "skipped", "reason": "no node", "tiers": []}
    legs.append(measured)  # a skipped leg, then a measured one: the second is still judged
    first = measured["tiers"][0]
    first.pop("output_ids")  # its greedy decodes were not recorded: no decode comparison for it
    _node_tier({"framing": {"legs": [None, measured]}}, "base-int8").update(status="failed", reason="bad IR")
    extra = {**copy.deepcopy(measured["tiers"][2]), "tier": "only-node"}
    measured["tiers"].append(extra)  # a tier the Python leg never decoded
    found = [(v.topic, v.subject) for v in framing_verdicts(_record(doc), POLICY) if v.topic.startswith("runtime")]
    assert found == [
        ("runtime-parity", "onnxruntime-node"),
        ("runtime-framing-parity", "base-fp32 under onnxruntime-node"),
        ("runtime-parity", "base-int8 under onnxruntime-node"),
        ("runtime-framing-parity", "small-int4 under onnxruntime-node"),
        ("runtime-parity", "small-int4 under onnxruntime-node"),
        ("runtime-framing-parity", "only-node under onnxruntime-node"),
    ]
    doc["framing"]["legs"] = []
    assert [v for v in framing_verdicts(_record(doc), POLICY) if v.topic.startswith("runtime")] == []


def test_another_runtimes_presents_at_the_tolerance_and_above():
    doc = _doc()
    for b in _node_tier(doc, "small-int4")["blocks"]:
        b["present_max_abs_diff"] = 1e-4
    frame = _by(framing_verdicts(_record(doc), POLICY), "runtime-framing-parity")
    at = frame["small-int4 under onnxruntime-node"]
    assert (at.outcome, at.answer, at.value) == ("success", "no: 12/12 rows", 1e-4)
    above = frame["base-int8 under onnxruntime-node"]
    assert (above.outcome, above.answer) == ("warning", "values move (max 0.12), decisions do not")
    assert above.value == pytest.approx(0.1224, abs=1e-4)


def test_decodes_of_unequal_length_compare_row_by_row():
    doc = _doc()
    node = _node_tier(doc, "small-int4")
    node["output_ids"] = node["output_ids"][:-1]  # one row missing: the rows present still compare
    same = _by(framing_verdicts(_record(doc), POLICY), "runtime-parity")["small-int4 under onnxruntime-node"]
    assert same.answer == "11/12 greedy decodes identical" and same.outcome == "warning"


def test_a_stale_cached_verdict_raises_the_key_error_the_cache_expects():
    v = verdicts(_record())[0].to_dict()
    with pytest.raises(KeyError, match=r"^'verdict fields'$"):
        Verdict.from_dict(v | {"extra": 1})


def test_no_rows_to_compare_gives_no_share():
    doc = _doc()
    _python_tier(doc, "small-int4")["output_ids"] = []
    _node_tier(doc, "small-int4")["output_ids"] = []
    same = _by(framing_verdicts(_record(doc), POLICY), "runtime-parity")["small-int4 under onnxruntime-node"]
    assert (same.answer, same.value) == ("0/0 greedy decodes identical", None)
