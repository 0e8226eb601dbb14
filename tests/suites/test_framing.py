"""Framing facts from logits and caches that disagree where we say, and the live output-preservation detector.

A real run of the demo agrees everywhere in fp32, so these facts are fed arrays that
disagree at a known step, and a pair whose speculative output is made to differ.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import numpy as np
import pytest
from tests_support import DATA_DIR

from measure import bundled
from measure.analysis.record_analysis import analyse
from measure.analysis.rules import failed_gates, verdicts
from measure.engine.load import load_tier
from measure.engine.speculative import Pair, Round
from measure.record.io import SCHEMA_VERSION, load_record
from measure.record.model import from_document
from measure.site.metrics import metrics
from measure.suites.config import FramingConfig
from measure.suites.framing import pair_acceptance
from measure.suites.golden import GoldenRows, head, load_golden
from measure.suites.legs.python import _Diff, tier_parity

DATA = DATA_DIR


def _step(logits: list[list[float]], kv: list[np.ndarray]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    return np.asarray(logits, dtype=np.float32), tuple(kv)


def test_argmax_that_disagrees_at_a_known_step_is_counted_and_located():
    # 2 layers x (key, value), each filled with its own value so a swapped index shows
    kv = [np.full((1, 2, 3, 4), i + 1.0, dtype=np.float32) for i in range(4)]
    moved = [k.copy() for k in kv]
    moved[1][0, 0, 0, 0] += 0.5  # layer 0's value
    moved[2] -= 0.25  # layer 1's key, everywhere
    diff = _Diff(layers=2)
    single = [[0, 1, 0], [2, 0, 0], [0, 0, 3], [1, 0, 0]]
    batched = [[0, 1, 0], [2, 0, 0], [0, 4, 3], [1, 0, 0]]  # step 2's argmax moves from 2 to 1
    diff.add(_step(single, kv), _step(batched, moved))
    diff.add(_step(single, kv), _step(single, kv))
    f = diff.facts(4)
    assert (f["block"], f["argmax_agree"], f["argmax_total"]) == (4, 7, 8)
    assert f["first_divergent_step"] == [2, None]
    assert f["logits_max_abs_diff"] == pytest.approx(4.0)
    assert f["present_max_abs_diff"] == pytest.approx(0.5)
    layer0, layer1 = f["layers"]
    assert layer0["layer"] == 0 and layer1["layer"] == 1
    assert layer0["key_max_abs_diff"] == 0.0 and layer0["value_max_abs_diff"] == pytest.approx(0.5)
    assert layer0["key_mean_abs_diff"] == 0.0
    assert layer0["value_mean_abs_diff"] == pytest.approx(0.5 / 48)  # one element of 24, over two steps
    assert layer1["key_mean_abs_diff"] == pytest.approx(0.25 / 2) and layer1["key_max_abs_diff"] == pytest.approx(0.25)
    assert layer1["value_mean_abs_diff"] == 0.0 and layer1["value_max_abs_diff"] == 0.0
    assert (layer0["key_mean_abs"], layer0["value_mean_abs"]) == pytest.approx((1.0, 2.0))
    assert (layer1["key_mean_abs"], layer1["value_mean_abs"]) == pytest.approx((3.0, 4.0))


def test_small_logit_differences_are_reported_as_they_are():
    kv = [np.zeros((1, 1, 2, 2), dtype=np.float32) for _ in range(2)]
    diff = _Diff(layers=1)
    diff.add(_step([[0.0, 1.0], [1.0, 0.0]], kv), _step([[0.0, 1.25], [1.0, 0.0]], kv))
    f = diff.facts("whole")
    assert f["block"] == "whole" and f["logits_max_abs_diff"] == pytest.approx(0.25)
    assert (f["argmax_agree"], f["argmax_total"], f["first_divergent_step"]) == (2, 2, [None])
    assert f["present_max_abs_diff"] == 0.0


def test_a_record_whose_argmax_disagrees_fails_framing_parity_and_metrics_say_so():
    doc = copy.deepcopy(load_record(DATA / f"record-v{SCHEMA_VERSION}.json"))
    tier = next(t for t in doc["framing"]["legs"][0]["tiers"] if t["tier"] == "base-fp32")
    block = tier["blocks"][0]
    block["argmax_agree"] -= 3
    block["first_divergent_step"][1] = 4
    r = from_document(doc, "disagrees")
    fp32 = next(t for t in r.python_tiers if t.tier == "base-fp32")
    assert fp32.argmax_agree == fp32.argmax_total - 3
    (v,) = [v for v in verdicts(r) if v.topic == "framing-parity" and v.subject == "base-fp32"]
    assert v.outcome == "failure" and v.gate
    n = len(fp32.blocks)
    assert (
        v.answer
        == f"no: 3 of {fp32.argmax_total} argmax decisions change ({fp32.argmax_total // n} positions × {n} framings)"
    )
    assert "framing-parity" in {g.topic for g in failed_gates(verdicts(r))}
    shown = metrics({r.machine_id: analyse(r)})["machines"][r.machine_id]["framing"]["base-fp32"]
    assert (shown["argmax_agree"], shown["argmax_total"]) == (fp32.argmax_agree, fp32.argmax_total)
    assert shown["argmax_agree"] < shown["argmax_total"]


class _Diverging(Pair):
    """A pair whose batched decode of one row commits a wrong last token: what a cache bug looks like."""

    def __init__(self, pair: Pair, bad_input: str) -> None:
        super().__init__(pair.drafter, pair.verifier)
        self.bad_input = bad_input

    def decode(self, text, k, **kwargs):
        out = super().decode(text, k, **kwargs)
        if text == self.bad_input and kwargs.get("verify", "batched") == "batched":
            wrong = out.tokens[-1] + 1
            return replace(
                out, tokens=(*out.tokens[:-1], wrong), text=self.verifier.tokenizer.decode([*out.tokens[:-1], wrong])
            )
        return out


class _Fewer(Pair):
    """A pair whose first round accepts fewer drafts: one fewer when probed single-step, none when batched."""

    def __init__(self, pair: Pair) -> None:
        super().__init__(pair.drafter, pair.verifier)

    def decode(self, text, k, **kwargs):
        out = super().decode(text, k, **kwargs)
        first = out.rounds[0]
        accepted = first.accepted - 1 if kwargs.get("verify") == "single" else 0
        return replace(out, rounds=(Round(first.proposed, accepted, False), *out.rounds[1:]))


def test_speculative_output_that_differs_from_greedy_is_caught_live(small_fp32, base_fp32, golden):
    rows = GoldenRows(golden.path, golden.sha256, golden.rows[:3])
    pair = Pair(small_fp32, base_fp32)
    good = pair_acceptance(pair, rows, 2, is_self=False)
    assert (good["rows"], good["preserved"], good["differing"]) == (3, 3, [])
    assert good["probe"] == good["runtime"] == {"accepted": 24, "proposed": 24}  # the demo's models agree
    fewer = _Fewer(pair)
    counted = pair_acceptance(fewer, rows, 2, is_self=False)
    probe = [fewer.decode(r.input, 2, verify="single") for r in rows.rows]
    runtime = [fewer.decode(r.input, 2) for r in rows.rows]
    assert counted["probe"] == {"accepted": sum(d.accepted for d in probe), "proposed": sum(d.proposed for d in probe)}
    assert counted["runtime"] == {
        "accepted": sum(d.accepted for d in runtime),
        "proposed": sum(d.proposed for d in runtime),
    }
    assert sum(d.verifier_calls for d in probe) > sum(d.verifier_calls for d in runtime)  # probe: one per token
    assert counted["probe"] == {"accepted": 21, "proposed": 24} and counted["runtime"]["accepted"] < 21
    assert (good["drafter"], good["verifier"], good["self"], good["k"]) == (small_fp32.name, base_fp32.name, False, 2)
    bad_row = rows.rows[1]
    bad = pair_acceptance(_Diverging(pair, bad_row.input), rows, 2, is_self=True)
    assert (bad["rows"], bad["preserved"], bad["self"]) == (3, 2, True)
    (diff,) = bad["differing"]
    assert (diff["line"], diff["input"]) == (bad_row.line, bad_row.input)
    assert diff["speculative"] != diff["greedy"]
    assert bad["probe"] == good["probe"] and bad["runtime"] == good["runtime"]


def test_every_layer_of_a_deeper_model_is_read_at_its_own_index():
    kv = [np.full((1, 1, 2, 2), i + 1.0, dtype=np.float32) for i in range(6)]  # 3 layers x (key, value)
    diff = _Diff(layers=3)
    diff.add(_step([[1.0, 0.0]], kv), _step([[1.0, 0.0]], kv))
    f = diff.facts(2)
    assert [(x["key_mean_abs"], x["value_mean_abs"]) for x in f["layers"]] == [(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)]


def test_a_budget_that_cuts_the_prompt_framings_to_none_records_none():
    tier = load_tier(bundled.DEMO_DIR / "lm-base-fp32")
    rows = head(load_golden(bundled.GOLDEN), 2)
    config = FramingConfig(k=(2,), whole_prefix=False)
    assert "prefill" not in tier_parity(tier, rows, config, prefill_rows=0)
    framed = tier_parity(tier, rows, config, prefill_rows=1)["prefill"]
    assert [b["block"] for b in framed] == [2]
