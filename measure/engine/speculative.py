r"""Speculative greedy decoding with both caches carried (Leviathan et al. 2023, greedy case), either model kind.

Each round the drafter proposes up to k tokens; the verifier checks them all in
one batched call; the longest agreeing prefix is kept plus the verifier's own
next token (the *bonus* token when every draft was accepted). Both caches are
trimmed to the accepted length and carried on: nothing is ever re-fed from zero,
so the cost is O(T) (rebuilding per block is the O(T^2) trap).

The rounds are one loop for both kinds, on :class:`~measure.engine.tier.Lane`\ s;
only the opening differs (:meth:`Tier.open_speculative`): an encoder-decoder
verifier starts from its start token after the encoder, a decoder-only one
prefills the prompt in one call, as its plain greedy decode does, and its argmax
there is the first committed token. The drafter catches up on what it lacks in
its own way (:meth:`Lane.draft`): single-step (seq2seq) or in one call
(decoder-only). Every committed token is a verifier argmax, so the output is the
verifier's greedy output.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

from measure.engine.result import Decoded, finish
from measure.engine.session import Trace
from measure.engine.tier import KINDS, Lane, Opening, Tier
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


def vocab_mismatch(drafter: Tier, verifier: Tier) -> str | None:
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


def mismatch(a: Tier, b: Tier, roles: tuple[str, str] = ("drafter", "verifier")) -> str | None:
    """Why two tiers cannot share token ids (two model kinds, or two vocabularies), or None; ``roles`` name them."""
    if a.kind != b.kind:
        both = "a pair" if roles == ("drafter", "verifier") else "judging one against the other"
        kinds = f"the {roles[0]} is {KINDS[a.kind]} and the {roles[1]} {KINDS[b.kind]}"
        return f"{kinds}; {both} needs two tiers of one model kind"
    if vocab := vocab_mismatch(a, b):
        return f"they do not share one vocabulary: {vocab.replace('drafter', roles[0]).replace('verifier', roles[1])}"
    return None


def refuse_pair(drafter: Tier, verifier: Tier) -> None:
    """A one-line error unless both tiers are of one kind and share one vocabulary."""
    why = mismatch(drafter, verifier)
    if why is not None:
        raise MeasureError(f"speculative pair refused: drafter {drafter.path} and verifier {verifier.path}: {why}")


class Pair:
    """A drafter and a verifier of one model kind that share one vocabulary (checked here, once)."""

    def __init__(self, drafter: Tier, verifier: Tier) -> None:
        refuse_pair(drafter, verifier)
        self.drafter = drafter
        self.verifier = verifier
        self.kind = verifier.kind

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
        """The timed region, ids in -> ids out (from ``trace.started``; a new trace: now).

        ``verify="single"`` checks drafts one token per verifier call: the uniform framing a probe assumes.
        """
        if verify not in ("batched", "single"):
            raise ValueError(f"verify must be 'batched' or 'single', not {verify!r}")
        if k < 1:
            raise MeasureError(f"speculative k: expected at least 1 draft token per round, got {k}")
        v = self.verifier
        limit = v.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
        trace = trace or Trace()  # made after the arguments are settled, as greedy_ids makes its own
        opening = v.open_speculative(ids, limit, trace)
        rounds: list[tuple[int, int]] = []  # (proposed, accepted); Round objects are built after the clock stops
        calls = [0, opening.calls]
        stopped = opening.stopped
        if stopped is None:
            d_lane = self.drafter.begin(ids, trace)
            stopped = _rounds(d_lane, opening, v.special.eos, k, limit, verify == "batched", rounds, calls, trace)
        trace.ended = perf_counter()  # the lanes still hold their caches: freeing them is not timed
        return self._result(opening, stopped, trace, rounds, calls)

    def _result(
        self, opening: Opening, stopped: str, trace: Trace, rounds: list[tuple[int, int]], calls: list[int]
    ) -> SpeculativeDecoded:
        """What the decode made and cost, built after the clock stopped: the text is decoded here, timed apart."""
        out = opening.seq[opening.prompt :]
        return SpeculativeDecoded(
            **vars(finish(self.verifier, out, stopped, trace, opening.first_token_s)),
            rounds=tuple(Round(proposed=p, accepted=a, bonus=p > 0 and a == p) for p, a in rounds),
            drafter_calls=calls[0],
            verifier_calls=calls[1],
            drafter_run_s=trace.run_s(self.drafter.label + "."),
            verifier_run_s=trace.run_s(self.verifier.label + "."),
        )


def open_pair(drafter: Tier, verifier: Tier) -> Pair:
    """Two encoder-decoder tiers or two decoder-only ones sharing a vocabulary; anything else is a one-line
    error. The one place suites and verbs build pairs."""
    return Pair(drafter, verifier)


def _rounds(
    d_lane: Lane,
    opening: Opening,
    eos: int,
    k: int,
    limit: int,
    batched: bool,
    rounds: list[tuple[int, int]],
    calls: list[int],
    trace: Trace,
) -> str:
    """Draft-and-verify rounds until eos or ``limit`` outputs: the hot path. ``opening.seq`` (the committed
    sequence, its first ``opening.prompt`` ids not output) grows in place; ``calls`` counts the drafter's and
    the verifier's calls."""
    seq, prompt, v_lane, log = opening.seq, opening.prompt, opening.lane, trace.log
    assert v_lane is not None, "an opening has no lane only where it ended the decode"
    d_draft, v_feed = d_lane.draft, v_lane.feed  # bound once: the round loop is the hot path
    while len(seq) - prompt < limit:
        budget = min(k, limit - (len(seq) - prompt) - 1)  # room for drafts: the verifier adds one of its own
        drafts: list[int] = []
        if budget > 0:
            before = len(log)
            drafts = d_draft(seq[d_lane.length :], budget, eos, trace)  # what the drafter lacks, then drafts
            calls[0] += len(log) - before
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
