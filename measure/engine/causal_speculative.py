"""Speculative greedy decoding with a decoder-only drafter and verifier, both caches carried.

The causal twin of :mod:`measure.engine.speculative`, with the same rounds and the
same result type. The verifier prefills the prompt in one call, as its plain
greedy decode does, and its argmax there is the first committed token; the
drafter takes the prompt and that token in one call on its first turn. Each round the
drafter feeds the committed tokens it lacks in one call and drafts up to k
tokens single-step; the verifier checks ``[last committed, *drafts]`` in one
batched call; the longest agreeing prefix is kept plus the verifier's own next
token. Every committed token is a verifier argmax, so the output is the
verifier's greedy output. Both caches are trimmed to the accepted length and
carried on: O(T), nothing re-fed from zero.
"""

from __future__ import annotations

from time import perf_counter

from measure.engine.causal import CausalTier
from measure.engine.causal_lane import CausalLane
from measure.engine.session import Trace
from measure.engine.speculative import Pair, Round, SpeculativeDecoded


class CausalSpeculativePair(Pair):
    """Two decoder-only tiers: the drafter proposes, the verifier checks in one batched call."""

    kind = "causal"
    drafter: CausalTier
    verifier: CausalTier

    def decode_ids(
        self,
        ids: list[int],
        k: int,
        *,
        max_new_tokens: int | None = None,
        trace: Trace | None = None,
        verify: str = "batched",
    ) -> SpeculativeDecoded:
        """The timed region, prompt ids in -> ids out (from ``trace.started``; a new trace: now).

        ``verify="single"`` checks drafts one token per verifier call: the uniform framing a probe assumes.
        """
        self.check(k, verify)
        v = self.verifier
        limit = v.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
        trace = trace or Trace()  # made after the arguments are settled, as causal_greedy_ids makes its own
        seq, rounds, calls, first = list(ids), [], [0, 0], None
        stopped = "max_new_tokens"
        if limit >= 1:
            v_lane = v.begin()
            token = int(v_lane.feed(ids, trace)[-1].argmax())  # the verifier's prefill: its greedy first token
            calls[1] += 1
            first = perf_counter() - trace.started
            if token == v.special.eos:
                stopped = "eos"
            else:
                seq.append(token)
                stopped = self._rounds(seq, len(ids), limit, k, v_lane, verify == "batched", rounds, calls, trace)
        trace.ended = perf_counter()  # the lanes still hold their caches: freeing them is not timed
        return self._result(seq[len(ids) :], stopped, trace, rounds, calls, first)

    def _rounds(
        self,
        seq: list[int],
        prompt: int,
        limit: int,
        k: int,
        v_lane: CausalLane,
        batched: bool,
        rounds: list[tuple[int, int]],
        calls: list[int],
        trace: Trace,
    ) -> str:
        """Draft-and-verify rounds until eos or ``limit`` outputs; ``seq`` (prompt + outputs) grows in place."""
        eos = self.verifier.special.eos
        d_lane = self.drafter.begin()
        d_draft, v_feed = d_lane.draft, v_lane.feed  # bound once: the round loop is the hot path
        while len(seq) - prompt < limit:
            budget = min(k, limit - (len(seq) - prompt) - 1)  # room for drafts: the verifier adds one of its own
            drafts: list[int] = []
            if budget > 0:
                drafts = d_draft(seq[d_lane.length :], budget, eos, trace)  # catch-up in one call, then drafts
                calls[0] += len(drafts)
            base = v_lane.length  # == len(seq) - 1: the verifier always lacks only the last committed token
            if batched:
                best = v_feed([seq[-1], *drafts], trace).argmax(-1).tolist()
                calls[1] += 1
            else:
                best = [int(v_feed([token], trace)[-1].argmax()) for token in (seq[-1], *drafts)]
                calls[1] += len(drafts) + 1
            n = 0
            while n < len(drafts) and drafts[n] == best[n]:
                n += 1
            seq += drafts[:n]
            seq.append(best[n])
            rounds.append((len(drafts), n))
            if eos in seq[len(seq) - n - 1 :]:
                del seq[seq.index(eos, len(seq) - n - 1) :]
                return "eos"
            if len(seq) - prompt >= limit:  # the last round: its caches are never fed again, so not trimmed
                break
            v_lane.trim(base + 1 + n)
            if drafts:  # the drafter fed drafts[:-1]: keep what was accepted of them
                d_lane.trim(min(d_lane.length, base + 1 + min(n, len(drafts) - 1)))
        del seq[prompt + limit :]
        return "max_new_tokens"

    def _result(
        self,
        out: list[int],
        stopped: str,
        trace: Trace,
        rounds: list[tuple[int, int]],
        calls: list[int],
        first: float | None,
    ) -> SpeculativeDecoded:
        """The result, built after the clock stopped (``trace.ended``); the text decoded apart."""
        wall = max(0.0, (trace.ended or perf_counter()) - trace.started)
        detokenize = perf_counter()
        text = self.verifier.tokenizer.decode(out)
        detokenize = perf_counter() - detokenize
        return SpeculativeDecoded(
            text=text,
            tokens=tuple(out),
            stopped=stopped,
            wall_s=wall,
            calls=trace.calls(),
            run_s=trace.run_s(),
            first_token_s=first,
            detokenize_s=detokenize,
            rounds=tuple(Round(proposed=p, accepted=a, bonus=p > 0 and a == p) for p, a in rounds),
            drafter_calls=calls[0],
            verifier_calls=calls[1],
            drafter_run_s=trace.run_s(self.drafter.label + "."),
            verifier_run_s=trace.run_s(self.verifier.label + "."),
        )
