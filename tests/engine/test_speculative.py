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


# --- The speculative loop's call counts are exactly the O(T) counts, for every k ---


ROWS = 4


def _exact_drafter_calls(rounds) -> int:
    calls, bonus_before = 0, False
    for r in rounds:
        if r.proposed:
            calls += r.proposed + bonus_before
        bonus_before = r.bonus
    return calls


@pytest.mark.parametrize("k", range(1, 9))
def test_call_counts_equal_the_linear_count_for_every_k(small_fp32, base_fp32, golden, k):
    pair = Pair(small_fp32, base_fp32)
    for row in golden.rows[:ROWS]:
        spec = pair.decode(row.input, k)
        rounds = spec.rounds
        assert spec.drafter_calls == _exact_drafter_calls(rounds), row.input
        assert spec.verifier_calls == len(rounds)
        assert spec.calls == spec.drafter_calls + spec.verifier_calls + 2  # and one encoder call each
        assert all(0 <= r.accepted <= r.proposed <= k for r in rounds)
        assert all(r.bonus == (r.proposed > 0 and r.accepted == r.proposed) for r in rounds)
        # every round commits its accepted drafts and one token of the verifier's own
        assert sum(r.accepted + 1 for r in rounds) >= len(spec.tokens)
        single = pair.decode(row.input, k, verify="single")
        assert single.tokens == spec.tokens
        assert single.verifier_calls == sum(r.proposed + 1 for r in single.rounds)
        assert single.drafter_calls == _exact_drafter_calls(single.rounds)


@pytest.mark.parametrize("k", [1, 3])
def test_output_stop_reason_cap_and_timings_are_greedys(small_fp32, base_fp32, golden, k):
    pair = Pair(small_fp32, base_fp32)
    for row in golden.rows[:3]:
        plain = base_fp32.greedy(row.input)
        spec = pair.decode(row.input, k)
        assert (spec.tokens, spec.text, spec.stopped) == (plain.tokens, plain.text, "eos")
        assert spec.wall_s >= spec.run_s > 0 and spec.drafter_run_s > 0 and spec.verifier_run_s > 0
        assert spec.drafter_run_s + spec.verifier_run_s <= spec.run_s + 1e-9
        for limit in sorted({1, 2, len(plain.tokens) - 1}):
            capped = pair.decode(row.input, k, max_new_tokens=limit)
            assert capped.tokens == plain.tokens[:limit] and capped.stopped == "max_new_tokens", limit
            assert capped.text == base_fp32.tokenizer.decode(list(plain.tokens[:limit]))


def test_an_unknown_verification_framing_is_refused(small_fp32, base_fp32):
    with pytest.raises(ValueError, match=r"^verify must be 'batched' or 'single', not 'tree'$"):
        Pair(small_fp32, base_fp32).decode("слово", 2, verify="tree")


@pytest.mark.bounds  # a capped decode's wall time
@pytest.mark.parametrize("k", [1, 2, 4])
def test_under_a_cap_no_round_drafts_past_it_and_the_counts_stay_exact(small_fp32, base_fp32, golden, k):
    pair = Pair(small_fp32, base_fp32)
    for row in golden.rows[:3]:
        full = pair.decode(row.input, k)
        for limit in range(1, len(full.tokens)):
            capped = pair.decode(row.input, k, max_new_tokens=limit)
            assert capped.stopped == "max_new_tokens" and len(capped.tokens) == limit
            # every round commits its accepted drafts plus one, and the last lands exactly on the cap
            assert sum(r.accepted + 1 for r in capped.rounds) == limit, limit
            assert capped.drafter_calls == _exact_drafter_calls(capped.rounds), limit
            assert 0 < capped.wall_s < 60
            committed = 0  # each round drafts as many tokens as k and the room left before the cap allow
            for r in capped.rounds:
                assert r.proposed == min(k, limit - committed - 1), (limit, committed)
                committed += r.accepted + 1
