"""Greedy decoding on the real demo graphs: cached == uncached, batched == single-step, O(T) calls."""

from __future__ import annotations

from time import perf_counter

import numpy as np
import pytest

from measure.engine.session import Trace


def framings(tier, text, tokens):
    """Logits of [start] + tokens fed in one batched call, and fed one token per call."""
    ids, prefix = tier.source_ids(text), [tier.special.decoder_start, *tokens]
    return tier.feed_prefix(ids, prefix, len(prefix))[0], tier.feed_prefix(ids, prefix, 1)[0]


def test_cached_greedy_equals_uncached_reference_on_every_row(base_fp32, golden):
    for row in golden.rows:
        cached = base_fp32.greedy(row.input)
        reference = base_fp32.greedy_uncached(row.input)
        assert cached.tokens == reference.tokens, f"line {row.line}: {row.input!r}"
        assert cached.text == reference.text


def test_base_fp32_is_genuinely_trained(base_fp32, golden):
    held_out = [r for r in golden.rows if " " not in r.input][:48]
    hits = sum(base_fp32.greedy(r.input).text == r.output for r in held_out)
    assert hits / len(held_out) >= 0.9


def test_fp32_batched_framing_matches_single_step(base_fp32, golden):
    worst = 0.0
    for row in golden.rows[::4]:
        tokens = list(base_fp32.greedy(row.input).tokens)
        batched, single = framings(base_fp32, row.input, tokens)
        assert batched.shape == single.shape == (len(tokens) + 1, base_fp32.shape.vocab_size)
        worst = max(worst, float(np.abs(batched - single).max()))
    assert worst < 5e-5


def test_int8_batched_framing_differs_more_than_fp32(base_fp32, base_int8, golden):
    """Dynamic int8 computes activation scales per fed tensor, so framing moves its logits."""
    diffs = {}
    for name, tier in (("fp32", base_fp32), ("int8", base_int8)):
        worst = 0.0
        for row in golden.rows[::4]:
            tokens = list(tier.greedy(row.input).tokens)
            batched, single = framings(tier, row.input, tokens)
            worst = max(worst, float(np.abs(batched - single).max()))
        diffs[name] = worst
    assert diffs["int8"] > 10 * diffs["fp32"]


def test_greedy_makes_one_decoder_call_per_token(base_fp32, golden):
    for row in golden.rows:
        trace = Trace()
        result = base_fp32.greedy(row.input, trace=trace)
        decoder_calls = trace.calls(base_fp32.label + ".decoder")
        expected = len(result.tokens) + (1 if result.stopped == "eos" else 0)
        assert decoder_calls == expected
        assert trace.calls(base_fp32.label + ".encoder") == 1
        assert result.calls == decoder_calls + 1


def test_calls_grow_linearly_not_quadratically(base_fp32, golden):
    lengths, calls = [], []
    for row in golden.rows:
        result = base_fp32.greedy(row.input)
        lengths.append(len(result.tokens))
        calls.append(result.calls)
    slope, intercept = np.polyfit(lengths, calls, 1)
    assert slope == pytest.approx(1.0, abs=1e-9)
    assert intercept == pytest.approx(2.0, abs=1e-9)


def test_max_new_tokens_caps_a_row(base_fp32):
    result = base_fp32.greedy("здравствуйте", max_new_tokens=3)
    assert len(result.tokens) == 3
    assert result.stopped == "max_new_tokens"


@pytest.mark.parametrize("tier_name", ["base_fp32", "small_int4"])
def test_the_ids_path_decodes_what_the_text_path_decodes_bit_for_bit(tier_name, golden, request):
    tier = request.getfixturevalue(tier_name)
    for row in golden.rows:
        by_text = tier.greedy(row.input)
        by_ids = tier.greedy_ids(tier.source_ids(row.input))
        assert (by_ids.tokens, by_ids.text, by_ids.stopped, by_ids.calls) == (
            by_text.tokens,
            by_text.text,
            by_text.stopped,
            by_text.calls,
        ), row.line
        assert by_ids.first_token_s is not None and 0 < by_ids.first_token_s <= by_ids.wall_s
        assert by_ids.detokenize_s > 0  # the output text is decoded, and timed, after the clock stops


def test_the_ids_path_times_from_the_traces_start(base_fp32):
    """Wall time runs from ``trace.started``: a caller that made its trace before tokenizing times that too."""
    ids = base_fp32.source_ids("объём")
    result = base_fp32.greedy_ids(ids, trace=Trace(started=perf_counter() - 1.0))
    assert result.wall_s >= 1.0 and result.first_token_s >= 1.0
    assert result.tokens == base_fp32.greedy_ids(ids).tokens


def test_instrumentation_accounts_for_wall_time(base_fp32):
    result = base_fp32.greedy("объём")
    assert 0 < result.run_s <= result.wall_s


def _feed_loop(tier, text):
    """Greedy by repeated ``feed``: the plain framing the lean loop must reproduce call for call."""
    trace = Trace()
    ids = tier.source_ids(text)
    cache, token, out = tier.start(ids, trace), tier.special.decoder_start, []
    while len(out) < tier.default_max_new_tokens(len(ids)):
        logits, cache = tier.feed(cache, [token], trace)
        token = int(logits[-1].argmax())
        if token == tier.special.eos:
            break
        out.append(token)
    return tuple(out), trace.calls()


@pytest.mark.parametrize("name", ["small-fp32", "small-fp32-optimum", "small-fp32-merged", "base-int8"])
def test_the_lean_greedy_loop_equals_repeated_feeds_on_every_row_and_layout(name, golden):
    from measure import bundled
    from measure.engine.load import load_tier

    tier = load_tier(bundled.GOLDEN.parent / name)
    for row in golden.rows:
        decoded = tier.greedy(row.input)
        assert (decoded.tokens, decoded.calls) == _feed_loop(tier, row.input), row.line


@pytest.mark.parametrize("name", ["small-int4", "small-fp32-optimum", "small-fp32-merged"])
def test_a_draft_equals_repeated_feeds_with_the_same_cache(name, golden):
    from measure import bundled
    from measure.engine.load import load_tier

    tier = load_tier(bundled.GOLDEN.parent / name)
    eos = tier.special.eos
    for row in golden.rows[:8]:
        ids = tier.source_ids(row.input)
        start = tier.start(ids, Trace())
        _, grown = tier.feed(start, [tier.special.decoder_start, 5], Trace())
        for cache, tokens in ((start, [tier.special.decoder_start]), (grown, [7, 9])):
            trace = Trace()
            drafts, after = tier.decoder.draft(cache, tokens, 4, eos, trace)
            ref, logits = cache, None
            for t in tokens:
                logits, ref = tier.feed(ref, [t], Trace())
            expected = []
            while True:
                expected.append(int(logits[-1].argmax()))
                if expected[-1] == eos or len(expected) == 4:
                    break
                logits, ref = tier.feed(ref, [expected[-1]], Trace())
            assert drafts == expected and trace.calls() == len(tokens) + len(drafts) - 1
            assert after.length == ref.length
            assert all(np.array_equal(a, b) for a, b in zip(after.self_kv, ref.self_kv, strict=True))


@pytest.mark.parametrize("name", ["small-int4", "small-fp32-optimum", "small-fp32-merged"])
def test_a_lane_feeds_and_trims_as_feeds_and_cache_trims_do(name, golden):
    """The speculative loop's kept feeds give the same logits and trimmed caches, bit for bit, as KVCache objects."""
    from measure import bundled
    from measure.engine.load import load_tier
    from measure.engine.seq2seq.decoder import Lane

    tier = load_tier(bundled.GOLDEN.parent / name)
    for row in golden.rows[:6]:
        start = tier.start(tier.source_ids(row.input), Trace())
        lane, cache = Lane(tier.decoder, start), start
        for tokens, keep in (([tier.special.decoder_start, 5, 7], 2), ([9, 11, 13, 4], 4), ([6], 5)):
            logits = lane.feed(tokens, Trace())
            expected, cache = tier.feed(cache, tokens, Trace())
            assert np.array_equal(logits, expected)
            lane.trim(keep)
            cache = cache.trim(keep)
            got = lane.cache()
            assert got.length == cache.length == lane.length == keep
            assert all(np.array_equal(a, b) for a, b in zip(got.self_kv, cache.self_kv, strict=True))
            assert all(a.flags.c_contiguous for a in got.self_kv)
        with pytest.raises(ValueError, match="cannot trim"):
            lane.trim(lane.length + 1)


@pytest.mark.parametrize("name", ["small-fp32", "small-fp32-optimum", "small-fp32-merged", "base-int8"])
def test_a_lane_begun_from_the_encoder_equals_one_made_from_the_empty_cache(name, golden):
    """``Tier.begin`` builds the start lane from feeds made once per decoder: the same calls, bit for bit."""
    from measure import bundled
    from measure.engine.load import load_tier
    from measure.engine.seq2seq.decoder import Lane

    tier = load_tier(bundled.GOLDEN.parent / name)
    for row in golden.rows[:6]:
        ids = tier.source_ids(row.input)
        begun, made = tier.begin(ids, Trace()), Lane(tier.decoder, tier.start(ids, Trace()))
        for tokens in ([tier.special.decoder_start], [5, 7], [9]):
            assert np.array_equal(begun.feed(tokens, Trace()), made.feed(tokens, Trace()))
        a, b = begun.cache(), made.cache()
        assert a.length == b.length == 4
        assert all(np.array_equal(x, y) for x, y in zip(a.self_kv, b.self_kv, strict=True))
        cross = (a.cross.values(), b.cross.values()) if isinstance(a.cross, dict) else (a.cross, b.cross)
        assert all(np.array_equal(x, y) for x, y in zip(*cross, strict=True))
    # a second decode starts from the same ready feeds, untouched by the first
    again = tier.begin(tier.source_ids(golden.rows[0].input), Trace())
    first = Lane(tier.decoder, tier.start(tier.source_ids(golden.rows[0].input), Trace()))
    assert np.array_equal(again.feed([tier.special.decoder_start], Trace()), first.feed([0], Trace()))


def test_the_clock_stops_when_the_last_token_is_decided(base_int8, golden):
    """Wall time ends at the loop's stamp after the last call, before the decode's caches are let go."""
    for row in golden.rows[:8]:
        trace = Trace()
        result = base_int8.greedy_ids(base_int8.source_ids(row.input), trace=trace)
        assert trace.ended is not None and trace.log[-1][2] <= trace.ended
        assert result.wall_s == pytest.approx(trace.ended - trace.started, abs=1e-12)
        assert result.run_s <= result.wall_s
    capped = Trace()
    assert base_int8.greedy_ids(base_int8.source_ids("объём"), max_new_tokens=0, trace=capped).tokens == ()
    assert capped.ended is not None
