"""Verdicts are pure functions of facts plus policy: re-judging needs no re-run; gates catch bugs."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
from tests_support import DATA_DIR

from measure.analysis.framing_rules import framing_verdicts
from measure.analysis.rules import failed_gates, wallclock_verdicts
from measure.analysis.rules import verdicts as judge
from measure.analysis.stats import Estimate
from measure.analysis.timings import PairTiming, TierTiming
from measure.analysis.verdict import Verdict, from_table, to_table
from measure.policy import Policy, policy_from
from measure.record.io import load_record
from measure.record.model import from_document

DATA = DATA_DIR


def _doc():
    return load_record(DATA / "record-v3.json")


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


# --- Each verdict's rule at and around its threshold, its answer text, and which failures are gates ---


POLICY = Policy(exponent_max=1.15, overhead_max=0.1, framing_tolerance=1e-4, speedup_min=1.0)


def _doc() -> dict:
    return copy.deepcopy(load_record(DATA / "record-v3.json"))


def _record(doc: dict | None = None):
    return from_document(doc or _doc(), "test")


def _tier(name: str, lo: float, hi: float, overhead: float = 0.05, exponent: bool = True) -> TierTiming:
    e = Estimate(1.0, 1.0, 1.0)
    return TierTiming(
        name, "plain", "int8", 10, e, e, e, None, Estimate((lo + hi) / 2, lo, hi) if exponent else None, overhead
    )


def _pair(
    pair: str, k: int, value: float, lo: float, hi: float, family: tuple[float, float] | None = None
) -> PairTiming:
    """``family``: the Bonferroni interval over the pair's k (default: the per-k interval itself)."""
    e = Estimate(1.0, 1.0, 1.0)
    flo, fhi = family or (lo, hi)
    return PairTiming(
        f"{pair}@k{k}",
        pair,
        "d",
        "v",
        k,
        e,
        1.0,
        2.0,
        (1.0,),
        0.1,
        1.5,
        Estimate(value, lo, hi),
        1.0,
        0.05,
        Estimate(value, flo, fhi),
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
    assert above.rule == "exponent's 95% interval ≤ 1.15"
    assert above.measured == "exponent 1.23 [1.16, 1.30]"
    assert above.question == "Is decoding O(T)?" and above.key == "above"


def test_harness_overhead_at_its_threshold():
    tiers = [_tier("low", 0.9, 1.0, 0.05), _tier("at", 0.9, 1.0, 0.1), _tier("high", 0.9, 1.0, 0.11)]
    found = _by(wallclock_verdicts(_record(), POLICY, tiers, []), "harness-overhead")
    assert {n: (v.outcome, v.answer, v.value) for n, v in found.items()} == {
        "low": ("success", "yes", 0.05),
        "at": ("success", "yes", 0.1),
        "high": ("warning", "no", 0.11),
    }
    assert not any(v.gate for v in found.values())
    assert found["low"].rule == "wall time outside session.run ≤ 10%"
    assert found["high"].measured == "11.0% of wall time" and found["high"].key == "high"


def test_speculative_speedup_per_k_and_over_every_k_against_the_minimum():
    pairs = [
        _pair("a", 8, 1.4, 1.3, 1.5, (1.0, 1.6)),  # family lo == min: not wholly above
        _pair("a", 2, 1.3, 1.1, 1.5, (0.95, 1.7)),
        _pair("a", 4, 1.6, 1.2, 2.0, (1.05, 2.4)),  # the only k whose Bonferroni interval clears the bar
        _pair("b", 2, 1.0, 0.9, 1.1),
        _pair("c", 2, 0.8, 0.7, 0.9, (0.6, 0.95)),
        _pair("c", 4, 0.7, 0.6, 0.8, (0.5, 0.9)),
        _pair("d", 2, 1.1, 1.0, 1.2),  # lo == min: not wholly above
        _pair("e", 2, 0.9, 0.8, 1.0),  # hi == min: not wholly below
        _pair("f", 2, 0.8, 0.7, 0.9, (0.6, 1.0)),  # per k slower, but its family hi == min
        _pair("f", 4, 0.7, 0.6, 0.8, (0.5, 0.9)),
        _pair("g", 4, 1.5, 1.3, 1.7, (1.2, 1.6)),
        _pair("g", 2, 1.4, 1.2, 1.6, (1.1, 1.5)),
    ]
    found = wallclock_verdicts(_record(), POLICY, [], pairs)
    per_k = _by(found, "speculative-speedup-k")
    assert {n: (v.outcome, v.answer, v.key) for n, v in per_k.items()} == {
        "a at k=2": ("success", "yes", "a@k2"),
        "a at k=4": ("success", "yes", "a@k4"),
        "a at k=8": ("success", "yes", "a@k8"),
        "b at k=2": ("inconclusive", "inconclusive", "b@k2"),
        "c at k=2": ("failure", "no", "c@k2"),
        "c at k=4": ("failure", "no", "c@k4"),
        "d at k=2": ("inconclusive", "inconclusive", "d@k2"),
        "e at k=2": ("inconclusive", "inconclusive", "e@k2"),
        "f at k=2": ("failure", "no", "f@k2"),
        "f at k=4": ("failure", "no", "f@k4"),
        "g at k=2": ("success", "yes", "g@k2"),
        "g at k=4": ("success", "yes", "g@k4"),
    }
    k4 = per_k["a at k=4"]
    assert (k4.value, k4.lo, k4.hi) == (1.6, 1.2, 2.0)  # the per-k verdict quotes its own 95% interval
    assert k4.rule == "speedup's 95% interval above 1×" and k4.measured == "1.60× [1.20, 2.00]"
    assert k4.question == "Is speculative decoding faster than the verifier's greedy decode at this k?"
    pair = _by(found, "speculative-speedup")
    assert {n: (v.outcome, v.answer, v.key) for n, v in pair.items()} == {
        "a": ("success", "yes, at k=4", "a"),
        "b": ("inconclusive", "inconclusive at every k", "b"),
        "c": ("failure", "no: slower at every k", "c"),
        "d": ("inconclusive", "inconclusive at every k", "d"),
        "e": ("inconclusive", "inconclusive at every k", "e"),
        "f": ("inconclusive", "inconclusive at every k", "f"),
        "g": ("success", "yes, at k=2, 4", "g"),
    }
    a = pair["a"]
    assert (a.value, a.lo, a.hi, a.gate) == (1.6, 1.05, 2.4, False)  # the Bonferroni interval, not the 95% one
    assert a.rule == "some k's 98.3% interval (Bonferroni over 3 k) above 1×"
    assert a.measured == "k=2 1.30× [0.95, 1.70]; k=4 1.60× [1.05, 2.40]; k=8 1.40× [1.00, 1.60]"
    assert pair["c"].rule == "some k's 97.5% interval (Bonferroni over 2 k) above 1×"
    assert pair["b"].rule == "some k's 95.0% interval (Bonferroni over 1 k) above 1×"
    assert not failed_gates(found)
    # the bar is the policy's: raising it turns a's k=4 away
    higher = _by(wallclock_verdicts(_record(), replace(POLICY, speedup_min=1.1), [], pairs), "speculative-speedup")
    assert (higher["a"].outcome, higher["a"].answer) == ("inconclusive", "inconclusive at every k")
    assert higher["g"].answer == "yes, at k=4"


def _python_tier(doc: dict, name: str) -> dict:
    return next(t for t in doc["framing"]["legs"][0]["tiers"] if t["tier"] == name)


def test_framing_parity_success_warning_failure_and_its_gate():
    doc = _doc()
    for b in _python_tier(doc, "base-fp32")["blocks"]:  # values move exactly to the tolerance: still success
        b["present_max_abs_diff"] = 1e-4
    for b in _python_tier(doc, "small-int4")["blocks"]:
        b["present_max_abs_diff"] = 2e-4
    found = _by(framing_verdicts(_record(doc), POLICY), "framing-parity")
    assert (found["base-fp32"].outcome, found["base-fp32"].answer) == ("success", "yes: 384/384 argmax hold")
    assert found["base-fp32"].value == 1e-4 and not found["base-fp32"].gate
    assert found["small-int4"].outcome == "warning" and not found["small-int4"].gate  # int4: not a gate
    assert found["small-int4"].answer == "yes, 384/384 argmax hold, but presents move by up to 0.0002"
    assert found["small-int4"].measured == "384/384 argmax agree; presents differ by up to 0.0002"
    assert found["base-fp32"].rule == "every argmax equal single-step and batched; presents within 0.0001"
    assert found["base-fp32"].question == "Are decodes of this artifact unchanged by batched framing?"
    for b in _python_tier(doc, "base-fp32")["blocks"]:
        b["present_max_abs_diff"] = 2e-4
    fp32 = _by(framing_verdicts(_record(doc), POLICY), "framing-parity")["base-fp32"]
    assert fp32.outcome == "warning" and fp32.gate  # an fp32 warning is a gate too
    _python_tier(doc, "small-int4")["blocks"][0]["argmax_agree"] -= 1
    int4 = _by(framing_verdicts(_record(doc), POLICY), "framing-parity")["small-int4"]
    assert (int4.outcome, int4.answer, int4.gate) == (
        "failure",
        "no: 1 of 384 argmax decisions change (128 positions × 3 framings)",
        False,
    )
    _python_tier(doc, "base-fp32")["blocks"][0]["argmax_agree"] -= 2
    fp32 = _by(framing_verdicts(_record(doc), POLICY), "framing-parity")["base-fp32"]
    assert (fp32.outcome, fp32.answer, fp32.gate) == (
        "failure",
        "no: 2 of 384 argmax decisions change (128 positions × 3 framings)",
        True,
    )


def _acceptance(doc: dict, verifier: str, self_pair: bool) -> dict:
    return next(a for a in doc["framing"]["acceptance"] if a["verifier"] == verifier and a["self"] == self_pair)


def test_output_preservation_and_self_acceptance():
    doc = _doc()
    found = framing_verdicts(_record(doc), POLICY)
    assert not failed_gates(found)
    kept = _by(found, "output-preservation")["small-int4->base-int8"]
    assert (kept.outcome, kept.answer, kept.value) == ("success", "yes: 12/12 rows identical", 1.0)
    a = _acceptance(doc, "base-int8", False)
    a["preserved"] = 9
    a["runtime"]["accepted"] = 100
    s = _acceptance(doc, "small-int4", True)
    s["runtime"]["accepted"] = 108
    found = framing_verdicts(_record(doc), POLICY)
    lost = _by(found, "output-preservation")["small-int4->base-int8"]
    assert (lost.outcome, lost.answer, lost.value, lost.gate) == ("failure", "no: 9/12 rows identical", 0.75, False)
    own = _by(found, "self-acceptance")["small-int4->small-int4"]
    assert (own.outcome, own.answer, own.gate) == ("warning", "no: 108/109 drafts accepted", False)
    assert own.value == pytest.approx(108 / 109) and own.measured == "acceptance 0.9908"
    info = _by(found, "acceptance")["small-int4->base-int8"]
    assert (info.outcome, info.answer, info.measured) == ("info", "no", "probe 1.0000, runtime 0.9174")
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
    node["blocks"][0]["argmax_agree"] -= 1
    node["output_ids"][0] = [*node["output_ids"][0][:-1], 99]
    int4 = _node_tier(doc, "small-int4")
    int4["output_ids"][1] = [7]
    int4["output_ids"][2] = [7]
    found = framing_verdicts(_record(doc), POLICY)
    frame = _by(found, "runtime-framing-parity")
    fp32 = frame["base-fp32 under onnxruntime-node"]
    assert (fp32.outcome, fp32.answer, fp32.gate) == (
        "failure",
        "no: 1 of 384 argmax decisions change (128 positions × 3 framings)",
        False,
    )
    assert fp32.question == "Are decodes unchanged by batched framing under another runtime?"
    assert frame["base-int8 under onnxruntime-node"].outcome == "warning"
    assert frame["small-int4 under onnxruntime-node"].answer == "yes: 384/384 argmax hold"
    same = _by(found, "runtime-parity")
    assert (same["base-fp32 under onnxruntime-node"].outcome, same["base-fp32 under onnxruntime-node"].answer) == (
        "failure",
        "no: 11/12 greedy decodes identical",
    )
    assert same["base-fp32 under onnxruntime-node"].key == "base-fp32"
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
    assert (v.outcome, v.answer, v.measured) == ("info", "not measured: failed", "IR version 11 unknown")
    assert (v.key, v.gate) == ("onnxruntime-node", False)
    leg = doc["framing"]["legs"][1]
    leg.update(status="skipped", reason="node not found", tiers=[])
    (only,) = [v for v in framing_verdicts(_record(doc), POLICY) if v.topic.startswith("runtime")]
    assert (only.subject, only.outcome, only.answer, only.measured) == (
        "onnxruntime-node",
        "info",
        "not measured: skipped",
        "node not found",
    )


def test_the_record_policy_is_the_default_and_verdicts_round_trip():
    r = _record()
    stated = r.config.policy
    assert judge(r) == judge(r, stated)
    assert judge(r) != judge(r, replace(stated, overhead_max=0.0))
    assert from_table(to_table(judge(r))) == tuple(judge(r))  # as the summary cache stores them
    with pytest.raises(KeyError):
        from_table(to_table(judge(r)) | {"extra": 1})
    found = [_tier("x", 2, 3)]
    v = wallclock_verdicts(r, POLICY, found, [])
    assert failed_gates(v) == [v[0]] and failed_gates([]) == []


QUESTIONS = {
    "decode-linear": "Is decoding O(T)?",
    "harness-overhead": "Is the harness overhead small?",
    "speculative-speedup-k": "Is speculative decoding faster than the verifier's greedy decode at this k?",
    "speculative-speedup": "Is speculative decoding faster than plain greedy on this machine?",
    "lite-smaller": "Is the lite tier smaller on disk than plain?",
    "framing-parity": "Are decodes of this artifact unchanged by batched framing?",
    "runtime-framing-parity": "Are decodes unchanged by batched framing under another runtime?",
    "runtime-parity": "Does another runtime decode these artifacts like Python onnxruntime?",
    "output-preservation": "Is speculative output identical to plain greedy?",
    "self-acceptance": "Does the artifact accept its own drafts under batched framing?",
    "acceptance": "Does the probe's acceptance hold at runtime?",
    # a record with framing and no fidelity pass says its quantized tiers were not judged (never silent, never ✓)
    "fidelity": "Is the tier faithful to its full-precision reference?",
}


def test_every_topic_asks_its_one_question():
    found = judge(_record())
    assert {v.topic for v in found} == set(QUESTIONS)
    assert all(v.question == QUESTIONS[v.topic] for v in found)


def test_a_tie_in_the_pairs_interval_keeps_the_smallest_k():
    # the pair's value/interval is the k whose Bonferroni interval reaches highest; on a tie, the smallest k
    pairs = [_pair("a", 4, 1.4, 1.3, 1.5, (1.2, 1.9)), _pair("a", 2, 1.5, 1.3, 1.6, (1.2, 1.8))]
    (v,) = _by(wallclock_verdicts(_record(), POLICY, [], pairs), "speculative-speedup").values()
    assert (v.subject, v.value, v.lo, v.hi) == ("a", 1.5, 1.2, 1.8)
    assert v.answer == "yes, at k=2, 4"


def test_a_cached_verdict_with_other_fields_is_refused():
    table = to_table(judge(_record()))
    table["rows"][0] = table["rows"][0][:-1]  # no gate
    with pytest.raises(ValueError):
        from_table(table)


RULES = {
    "decode-linear": "exponent's 95% interval ≤ 1.15",
    "harness-overhead": "wall time outside session.run ≤ 10%",
    "speculative-speedup-k": "speedup's 95% interval above 1×",
    "speculative-speedup": "some k's 97.5% interval (Bonferroni over 2 k) above 1×",
    "lite-smaller": "bytes on disk / the plain tier's below 1×",
    "framing-parity": "every argmax equal single-step and batched; presents within 0.0001",
    "runtime-framing-parity": "every argmax equal single-step and batched; presents within 0.0001",
    "runtime-parity": "the runtime's greedy decode of every golden row equals Python onnxruntime's, token by token",
    "output-preservation": "every row of the speculative decode equals the verifier's greedy decode",
    "self-acceptance": "drafter == verifier: anything below 1.0 is framing, not model disagreement",
    "acceptance": "probe: the verifier checks drafts single-step; runtime: in one batched call",
    "fidelity": (
        'a quantized tier is judged against its full-precision reference: `reference = "TIER"` on its [[tiers]]'
    ),
}
NOT_MEASURED = "the leg runs where its runtime is installed; a missing runtime or tier is recorded, not assumed"


def test_every_verdict_states_its_rule():
    found = judge(_record(), POLICY)
    assert {v.topic for v in found} == set(RULES)
    assert all(v.rule == RULES[v.topic] for v in found)
    doc = _doc()
    doc["framing"]["legs"][1].update(status="skipped", reason="no node", tiers=[])
    doc["framing"]["legs"][1]["tiers"] = []
    (leg,) = [v for v in framing_verdicts(_record(doc), POLICY) if v.topic == "runtime-parity"]
    assert leg.rule == NOT_MEASURED
    assert leg.question == QUESTIONS["runtime-parity"]
    doc = _doc()
    _node_tier(doc, "base-int8").update(status="failed", reason="bad IR")
    tier = [v for v in framing_verdicts(_record(doc), POLICY) if v.subject == "base-int8 under onnxruntime-node"]
    assert [(v.question, v.rule) for v in tier] == [(QUESTIONS["runtime-parity"], NOT_MEASURED)]


def test_acceptance_values_and_what_is_missing():
    doc = _doc()
    a = _acceptance(doc, "base-int8", False)
    a["probe"] = {"accepted": 0, "proposed": 0}
    a["runtime"] = {"accepted": 50, "proposed": 100}
    info = _by(framing_verdicts(_record(doc), POLICY), "acceptance")["small-int4->base-int8"]
    assert (info.answer, info.value, info.measured) == ("nothing proposed", 0.5, "-")
    a["rows"] = a["preserved"] = 0
    kept = _by(framing_verdicts(_record(doc), POLICY), "output-preservation")["small-int4->base-int8"]
    assert kept.value is None and kept.answer == "yes: 0/0 rows identical"
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
    assert (at.outcome, at.answer, at.value) == ("success", "yes: 384/384 argmax hold", 1e-4)
    above = frame["base-int8 under onnxruntime-node"]
    assert (above.outcome, above.answer) == ("warning", "yes, 384/384 argmax hold, but presents move by up to 0.12")
    assert above.value == pytest.approx(0.1224, abs=1e-4)


def test_decodes_of_unequal_length_compare_row_by_row():
    doc = _doc()
    node = _node_tier(doc, "small-int4")
    node["output_ids"] = node["output_ids"][:-1]  # one row missing: the rows present still compare
    same = _by(framing_verdicts(_record(doc), POLICY), "runtime-parity")["small-int4 under onnxruntime-node"]
    assert same.answer == "no: 11/12 greedy decodes identical" and same.outcome == "warning"


def test_a_stale_cached_verdict_raises_the_key_error_the_cache_expects():
    table = to_table(judge(_record()))
    with pytest.raises(KeyError, match=r"^'verdict table fields'$"):
        from_table(table | {"extra": 1})


def test_no_rows_to_compare_gives_no_share():
    doc = _doc()
    _python_tier(doc, "small-int4")["output_ids"] = []
    _node_tier(doc, "small-int4")["output_ids"] = []
    same = _by(framing_verdicts(_record(doc), POLICY), "runtime-parity")["small-int4 under onnxruntime-node"]
    assert (same.answer, same.value) == ("yes: 0/0 greedy decodes identical", None)


@pytest.mark.parametrize("record", ["record-v3.json", "record-v4.json", "record-v3-lm.json"])
def test_what_the_overview_lists_as_gated_is_what_the_rules_gate(record):
    """``gateable`` (the Overview's list of what ``measure check`` gates) agrees with the rules: every gating
    verdict is listed, and every listed one that fails gates; under a policy strict enough that most checks fail."""
    from measure.analysis.rules import gateable

    doc = load_record(DATA / record)
    r = from_document(doc, record)
    strict = replace(policy_from(doc["config"]["policy"]), exponent_max=0.5, framing_tolerance=0.0, overhead_max=0.0)
    found = judge(r, strict)
    assert any(v.gate for v in found)
    for v in found:
        if v.gate:
            assert gateable(r, v), (v.topic, v.subject)
        if gateable(r, v) and v.outcome == "failure":
            assert v.gate, (v.topic, v.subject)
    assert not any(gateable(r, v) for v in found if v.topic in ("harness-overhead", "fidelity", "speculative-speedup"))
