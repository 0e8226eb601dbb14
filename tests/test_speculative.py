"""Speculative greedy decoding: output preservation, round accounting, O(T) calls, shared vocabulary."""

from __future__ import annotations

import json

import pytest

from measure import bundled
from measure.engine.load import load_tier
from measure.engine.speculative import Pair
from measure.errors import MeasureError


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_fp32_speculative_output_equals_verifier_greedy(small_fp32, base_fp32, golden, k):
    pair = Pair(small_fp32, base_fp32)
    for row in golden.rows:
        spec = pair.decode(row.input, k)
        plain = base_fp32.greedy(row.input)
        assert spec.tokens == plain.tokens, f"k={k} line {row.line}: {row.input!r}"
        assert spec.text == plain.text


@pytest.mark.parametrize("k", [2, 4])
def test_the_ids_path_decodes_what_the_text_path_decodes_bit_for_bit(small_int4, base_int8, golden, k):
    pair = Pair(small_int4, base_int8)
    for row in golden.rows:
        by_text = pair.decode(row.input, k)
        by_ids = pair.decode_ids(pair.source_ids(row.input), k)
        assert (by_ids.tokens, by_ids.text, by_ids.rounds, by_ids.calls) == (
            by_text.tokens,
            by_text.text,
            by_text.rounds,
            by_text.calls,
        ), row.line
        assert pair.source_ids(row.input) == base_int8.source_ids(row.input)  # the verifier tokenizes
        assert by_ids.detokenize_s > 0 and by_ids.run_s <= by_ids.wall_s


@pytest.mark.parametrize(
    "pair_of", [("small_int4", "base_int8"), ("small_fp32", "base_fp32")], ids=["int4-int8", "fp32"]
)
def test_round_accounting(pair_of, golden, request):
    """The accounting holds for any pair; how much a quantized pair accepts depends on the CPU's kernels, so only
    the fp32 pair's acceptance (the two trained models agreeing) is held to a bound."""
    k = 4
    pair = Pair(*(request.getfixturevalue(name) for name in pair_of))
    proposed = accepted = 0
    for row in golden.rows:
        spec = pair.decode(row.input, k)
        for r in spec.rounds:
            assert 0 <= r.accepted <= r.proposed <= k
            assert r.bonus == (r.proposed > 0 and r.accepted == r.proposed)
        committed = sum(r.accepted + 1 for r in spec.rounds)
        if spec.stopped == "eos":
            # eos is committed then dropped; a bonus token after an accepted eos draft is dropped too
            assert len(spec.tokens) + 1 <= committed <= len(spec.tokens) + 2
        assert spec.verifier_calls == len(spec.rounds)
        proposed += spec.proposed
        accepted += spec.accepted
    assert proposed > 0 and 0 <= accepted <= proposed
    if pair_of[1] == "base_fp32":
        assert accepted / proposed > 0.5


def test_self_pair_in_fp32_accepts_everything(golden):
    drafter = load_tier(bundled.REFERENCE, label="drafter")
    verifier = load_tier(bundled.REFERENCE, label="verifier")
    pair = Pair(drafter, verifier)
    for row in golden.rows[::3]:
        spec = pair.decode(row.input, 4)
        assert spec.acceptance == 1.0


@pytest.mark.parametrize("k", [2, 8])
def test_speculative_calls_grow_linearly(small_fp32, base_fp32, golden, k):
    pair = Pair(small_fp32, base_fp32)
    for row in golden.rows:
        spec = pair.decode(row.input, k)
        t = len(spec.tokens) + 1
        # per round: one catch-up call (two after a bonus round), then proposed - 1 draft calls
        bonus = sum(r.bonus for r in spec.rounds)
        assert spec.drafter_calls <= spec.proposed + bonus + len(spec.rounds)
        assert spec.proposed <= k * len(spec.rounds)
        assert spec.verifier_calls == len(spec.rounds) <= t  # every round commits at least one token
        assert spec.calls == spec.drafter_calls + spec.verifier_calls + 2  # two encoder calls
        assert spec.drafter_run_s > 0 and spec.verifier_run_s > 0


def test_pair_with_different_vocabulary_is_refused(tier_copy, base_fp32):
    folder = tier_copy(bundled.SMALL_FP32)
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = doc["model"]["vocab"]
    a, b = "a", "b"
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (folder / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(MeasureError, match="do not share one vocabulary: token 'a' is id"):
        Pair(load_tier(folder, label="drafter"), base_fp32)


def test_k_must_be_positive(small_fp32, base_fp32):
    with pytest.raises(MeasureError, match="at least 1 draft token"):
        Pair(small_fp32, base_fp32).decode("слово", 0)


def test_the_clock_stops_when_the_last_round_is_decided(small_int4, base_int8, golden):
    """As greedy: wall time ends at the stamp after the last call, before either lane's caches are let go."""
    from measure.engine.session import Trace

    pair = Pair(small_int4, base_int8)
    for row in golden.rows[:8]:
        trace = Trace()
        result = pair.decode_ids(pair.source_ids(row.input), 4, trace=trace)
        assert trace.ended is not None and trace.log[-1][2] <= trace.ended
        assert result.wall_s == pytest.approx(trace.ended - trace.started, abs=1e-12)
