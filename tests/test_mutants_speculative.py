"""The speculative loop's call counts are exactly the O(T) counts, for every k.

With both caches carried, the drafter is fed each committed token once and each draft
but the last of a round once: per round that drafts, its m drafts plus one extra
catch-up call after a round whose drafts were all accepted (the bonus token it never
saw). A drafter cache rewound each round (the O(T²) trap) feeds far more.
"""

from __future__ import annotations

import pytest

from measure.engine.speculative import Pair

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
