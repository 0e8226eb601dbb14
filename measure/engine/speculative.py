"""Speculative greedy decoding with both caches carried (Leviathan et al. 2023, greedy case).

Each round the drafter proposes up to k tokens single-step; the verifier checks
them all in one batched call; the longest agreeing prefix is kept plus the
verifier's own next token (the *bonus* token when every draft was accepted).
Both caches are trimmed to the accepted length and carried on: nothing is ever
re-fed from zero, so the cost is O(T) (rebuilding per block is the O(T^2) trap).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Any

from measure.engine.artifacts import SpecialIds, Tier
from measure.engine.causal import CausalTier
from measure.engine.decode import Decoded
from measure.engine.decoder import Lane
from measure.engine.session import Trace
from measure.errors import MeasureError


@dataclass(frozen=True)
class Round:
    """One draft-and-verify round."""

    proposed: int
    accepted: int
    bonus: bool
    """Every draft was accepted and the verifier's next token came free."""


@dataclass(frozen=True)
class SpeculativeDecoded(Decoded):
    rounds: tuple[Round, ...] = ()
    drafter_calls: int = 0
    verifier_calls: int = 0
    drafter_run_s: float = 0.0
    verifier_run_s: float = 0.0

    @property
    def proposed(self) -> int:
        return sum(r.proposed for r in self.rounds)

    @property
    def accepted(self) -> int:
        return sum(r.accepted for r in self.rounds)

    @property
    def acceptance(self) -> float | None:
        """Accepted draft tokens / proposed draft tokens; None when nothing was proposed."""
        return self.accepted / self.proposed if self.proposed else None


def vocab_mismatch(drafter: Tier | CausalTier, verifier: Tier | CausalTier) -> str | None:
    """Why two tiers of one kind cannot share token ids (logits, special ids or a token's id differ), or None."""
    if drafter.shape.vocab_size != verifier.shape.vocab_size:
        return f"model vocabularies differ ({drafter.shape.vocab_size} vs {verifier.shape.vocab_size} logits)"
    if drafter.special != verifier.special:
        return f"special ids differ ({drafter.special} vs {verifier.special})"
    dv, vv = drafter.tokenizer.vocabulary(), verifier.tokenizer.vocabulary()
    if dv != vv:
        for token in sorted(set(dv) | set(vv)):
            if dv.get(token) != vv.get(token):
                return f"token {token!r} is id {dv.get(token)} in the drafter and {vv.get(token)} in the verifier"
    return None


KINDS = {"seq2seq": "seq2seq (encoder-decoder)", "causal": "decoder-only"}


def refuse_pair(drafter: Tier | CausalTier, verifier: Tier | CausalTier, kind: str) -> None:
    """A one-line error unless both tiers are of ``kind`` and share one vocabulary."""
    if drafter.kind != kind or verifier.kind != kind:
        why = (
            f"the drafter is {KINDS[drafter.kind]} and the verifier {KINDS[verifier.kind]}; "
            f"a pair needs two tiers of one model kind"
        )
    elif vocab := vocab_mismatch(drafter, verifier):
        why = f"they do not share one vocabulary: {vocab}"
    else:
        return
    raise MeasureError(f"speculative pair refused: drafter {drafter.path} and verifier {verifier.path}: {why}")


class Pair:
    """A drafter and a verifier of one model kind that share one vocabulary (checked here, once); each kind's
    pair writes its own timed rounds (``decode_ids``)."""

    kind = "seq2seq"

    def __init__(self, drafter: Any, verifier: Any) -> None:
        refuse_pair(drafter, verifier, self.kind)
        self.drafter = drafter
        self.verifier = verifier

    def source_ids(self, text: str) -> list[int]:
        """The source as both models take it: the verifier's tokenizer and, decoder-only, its prompt template."""
        return self.verifier.source_ids(text)

    def decode(
        self,
        text: str,
        k: int,
        *,
        max_new_tokens: int | None = None,
        trace: Trace | None = None,
        verify: str = "batched",
    ) -> SpeculativeDecoded:
        """Tokenize ``text`` as the verifier does, then :meth:`decode_ids`."""
        ids = self.source_ids(text)
        return self.decode_ids(ids, k, max_new_tokens=max_new_tokens, trace=trace, verify=verify)

    def decode_ids(
        self,
        ids: list[int],
        k: int,
        *,
        max_new_tokens: int | None = None,
        trace: Trace | None = None,
        verify: str = "batched",
    ) -> SpeculativeDecoded:
        raise NotImplementedError

    @staticmethod
    def check(k: int, verify: str) -> None:
        """The arguments both kinds' rounds take."""
        if verify not in ("batched", "single"):
            raise ValueError(f"verify must be 'batched' or 'single', not {verify!r}")
        if k < 1:
            raise MeasureError(f"speculative k: expected at least 1 draft token per round, got {k}")


class SpeculativePair(Pair):
    """Two encoder-decoder tiers: the drafter proposes, the verifier checks in one batched call."""

    def decode_ids(
        self,
        ids: list[int],
        k: int,
        *,
        max_new_tokens: int | None = None,
        trace: Trace | None = None,
        verify: str = "batched",
    ) -> SpeculativeDecoded:
        """The timed region, ids in -> ids out (from ``trace.started``; a new trace: now).

        ``verify="single"`` checks drafts one token per verifier call: the uniform framing a probe assumes.
        """
        self.check(k, verify)
        v = self.verifier
        limit = v.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
        trace = trace or Trace()  # made after the arguments are settled, as greedy_ids makes its own
        v_lane = v.begin(ids, trace)  # each model's feeds kept and refilled across rounds
        d_lane = self.drafter.begin(ids, trace)
        seq, rounds, d_calls, v_calls, stopped = _rounds(d_lane, v_lane, v.special, k, limit, verify, trace)
        return self._result(seq, rounds, d_calls, v_calls, stopped, trace)  # the lanes are freed after the clock

    def _result(
        self, seq: list[int], rounds: list[tuple[int, int]], d_calls: int, v_calls: int, stopped: str, trace: Trace
    ) -> SpeculativeDecoded:
        """What the decode made and cost, built after the clock stopped: the text is decoded here, timed apart."""
        d, v = self.drafter, self.verifier
        wall = trace.ended - trace.started
        detokenize = perf_counter()
        text = v.tokenizer.decode(seq[1:])  # after the clock: reported with tokenizing
        detokenize = perf_counter() - detokenize
        return SpeculativeDecoded(
            text=text,
            tokens=tuple(seq[1:]),
            stopped=stopped,
            wall_s=wall,
            calls=trace.calls(),
            run_s=trace.run_s(),
            rounds=tuple(Round(proposed=p, accepted=a, bonus=p > 0 and a == p) for p, a in rounds),
            drafter_calls=d_calls,
            verifier_calls=v_calls,
            drafter_run_s=trace.run_s(d.label + "."),
            verifier_run_s=trace.run_s(v.label + "."),
            detokenize_s=detokenize,
        )


def _rounds(
    d_lane: Lane, v_lane: Lane, special: SpecialIds, k: int, limit: int, verify: str, trace: Trace
) -> tuple[list[int], list[tuple[int, int]], int, int, str]:
    """Draft-and-verify rounds until eos or ``limit`` tokens: the hot path, stamping ``trace.ended`` when done.

    Returns the committed tokens (start included), each round's (proposed, accepted), the drafter's
    and the verifier's call counts and why it stopped.
    """
    eos = special.eos
    seq = [special.decoder_start]  # committed tokens, start included
    d_draft, v_feed = d_lane.draft, v_lane.feed  # bound once: the round loop is the hot path
    rounds: list[tuple[int, int]] = []  # (proposed, accepted); Round objects are built after the clock stops
    d_calls = v_calls = 0
    stopped = "max_new_tokens"
    while len(seq) - 1 < limit:
        budget = min(k, limit - len(seq))  # room for drafts: the verifier adds one token of its own
        drafts: list[int] = []
        if budget > 0:
            catch_up = seq[d_lane.length :]  # committed tokens the drafter lacks, fed single-step
            drafts = d_draft(catch_up, budget, eos, trace)
            d_calls += len(catch_up) + len(drafts) - 1
        base = v_lane.length  # == len(seq) - 1: the verifier always lacks only the last committed token
        if verify == "batched":
            best = v_feed([seq[-1], *drafts], trace).argmax(-1).tolist()
            v_calls += 1
        else:
            best = [int(v_feed([token], trace)[-1].argmax()) for token in (seq[-1], *drafts)]
            v_calls += len(drafts) + 1
        n = 0
        while n < len(drafts) and drafts[n] == best[n]:
            n += 1
        seq += drafts[:n]
        seq.append(best[n])
        rounds.append((len(drafts), n))
        if eos in seq[len(seq) - n - 1 :]:
            del seq[seq.index(eos, len(seq) - n - 1) :]
            stopped = "eos"
            break
        if len(seq) - 1 >= limit:  # the last round: its caches are never fed again, so not trimmed
            break
        v_lane.trim(base + 1 + n)
        if drafts:  # the drafter fed drafts[:-1]: keep what was accepted of them
            d_lane.trim(min(d_lane.length, base + 1 + min(n, len(drafts) - 1)))
    del seq[limit + 1 :]
    trace.ended = perf_counter()  # the lanes still hold their caches: freeing them is not timed
    return seq, rounds, d_calls, v_calls, stopped
