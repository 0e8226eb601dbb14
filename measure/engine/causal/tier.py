"""Decoder-only (causal LM) tiers: load one, prompt it, and decode greedily with the cache carried.

The decoder-only family of :class:`measure.engine.tier.Tier` (beside
:mod:`measure.engine.seq2seq.tier`). A decode prefills the whole prompt in one
call (past length 0), then feeds one token per call on top of the cache: O(T) in
output length. The timed region is prompt ids in -> ids out
(:meth:`CausalTier.greedy_ids`); applying the prompt template and tokenizing
(:meth:`CausalTier.source_ids`) is timed apart, as the seq2seq path times
tokenizing. :meth:`CausalTier.greedy_uncached` re-feeds the whole sequence every
step: the slow reference the cached path is checked against.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from measure.engine.causal.lane import AnyLane, open_lane
from measure.engine.causal.layouts import open_causal_graphs, require_causal_layout
from measure.engine.folder import TierFolder
from measure.engine.meta import meta_source
from measure.engine.options import SessionConfig
from measure.engine.result import Decoded, finish
from measure.engine.session import AfterRun, TimedSession, Trace
from measure.engine.tier import Opening
from measure.errors import MeasureError


@dataclass(frozen=True)
class CausalSpecialIds:
    pad: int
    eos: int
    bos: int | None
    """Added by the tokenizer (its post-processor), never by the engine; recorded to say what the prompt starts with."""


def _positive(folder: Path, meta: dict[str, Any], key: str) -> int | None:
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise MeasureError(f"{meta_source(folder, key)}: field {key}: expected a positive integer, got {value!r}")
    return value


def _special_ids(folder: Path, meta: dict[str, Any], known: dict[str, int], vocab: int) -> CausalSpecialIds:
    values: dict[str, int | None] = {}
    for key in ("pad_token_id", "eos_token_id", "bos_token_id"):
        value = meta.get(key, known.get(key))
        if isinstance(value, list):  # generation_config may list several eos ids
            value = value[0] if value else None
        if value is None and key != "bos_token_id":
            raise MeasureError(f"{folder}: no {key}: state it in tier.json (the tokenizer has no recognisable token)")
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < vocab):
            raise MeasureError(
                f"{meta_source(folder, key)}: field {key}: expected a token id in [0, {vocab}) "
                f"(the model's vocabulary), got {value!r}"
            )
        values[key] = value
    pad, eos = values["pad_token_id"], values["eos_token_id"]
    assert pad is not None and eos is not None
    return CausalSpecialIds(pad=pad, eos=eos, bos=values["bos_token_id"])


def _prompt(folder: Path, meta: dict[str, Any], override: str | None) -> str:
    template = meta.get("prompt", "{input}") if override is None else override
    where = meta_source(folder, "prompt") if override is None else f"{folder} (prompt given)"
    if not isinstance(template, str) or "{input}" not in template:
        raise MeasureError(
            f"{where}: field prompt: expected a template containing {{input}} "
            f"(where the source text goes), got {template!r}"
        )
    return template


DEFAULT_MAX_NEW_TOKENS = 128
"""A decoder-only tier's output cap when neither the suite config nor the model (``generation_config.json`` or
``tier.json`` ``max_new_tokens``) states one. A constant, not a multiple of the prompt: a prompt's length says
nothing about how long a causal LM should continue (the seq2seq heuristic gave 808 tokens to a 200-token prompt)."""


class CausalTier(TierFolder):
    """One loaded, ready-to-decode decoder-only tier (see :class:`~measure.engine.folder.TierFolder` for
    ``label`` and ``name``)."""

    kind = "causal"
    holds = ("graphs",)
    prompt: str
    """The prompt template (``{input}`` where the source goes): tier.json's, or the one a suite config gives."""

    def __init__(
        self,
        folder: Path,
        config: SessionConfig | None = None,
        label: str | None = None,
        after_run: AfterRun | None = None,
        name: str | None = None,
        *,
        prompt: str | None = None,
        max_new_tokens: int | None = None,
    ) -> None:
        """``prompt`` overrides tier.json's template (a suite config's ``tiers[i].prompt``); ``max_new_tokens`` the
        model's decode length (a suite config's)."""
        folder = Path(folder)
        self.layout = require_causal_layout(folder)
        super().__init__(folder, config, label, name, max_new_tokens)
        self.tokenizer = self._load_tokenizer()
        self.prompt = _prompt(folder, self.meta, prompt)
        self.graphs = open_causal_graphs(folder, self.layout, self.config, self.label, self.meta, after_run)
        self.shape = self.graphs.shape
        self._room = (self.graphs.context, self.graphs.genai)
        """What bounds a teacher-forced pass (:meth:`target_room`), kept past :meth:`close`."""
        self._check_vocabulary()
        self.special = _special_ids(folder, self.meta, self.tokenizer.special_ids(), self.shape.vocab_size)
        self.context = _positive(folder, self.meta, "max_position_embeddings")
        """Positions the model was built for: prompt and output together stay within them."""
        self._source_key = "max_source_tokens" if "max_source_tokens" in self.meta else "max_position_embeddings"
        self.max_source_tokens = _positive(folder, self.meta, "max_source_tokens") or self.context
        self.max_target_tokens = _positive(folder, self.meta, "max_target_tokens")
        self._stated_new_tokens = _positive(folder, self.meta, "max_new_tokens")

    def graph_files(self) -> list[Path]:
        return [s.path for s in self.graphs.sessions]

    def graph_sessions(self) -> tuple[TimedSession, ...]:
        return self.graphs.sessions

    def describe_graphs(self) -> dict[str, dict[str, Any]]:
        """One decoder (its graphs in call order); the prompt is fed as its first call."""
        return {"decoder": self.graphs.describe()}

    def source_ids(self, text: str) -> list[int]:
        """The prompt template applied to ``text``, tokenized (the tokenizer adds bos); too long is refused."""
        if not text.strip():
            raise MeasureError(f"{self.path}: empty source text; expected at least one non-space character")
        ids = self.tokenizer.encode(self.prompt.replace("{input}", text))
        if self.max_source_tokens is not None and len(ids) > self.max_source_tokens:
            raise MeasureError(
                f"{meta_source(self.path, self._source_key)}: field {self._source_key}: the prompt is "
                f"{len(ids)} tokens ({text[:40]!r}...); this tier accepts at most {self.max_source_tokens}"
            )
        return ids

    def decode_limit(self) -> tuple[int, str]:
        """The suite config's ``max_new_tokens``, else the model's (``generation_config.json`` or ``tier.json``),
        else :data:`DEFAULT_MAX_NEW_TOKENS`; and where it comes from."""
        if self.max_new_tokens is not None:
            return self.max_new_tokens, "config"
        if self._stated_new_tokens is not None:
            return self._stated_new_tokens, meta_source(self.path, "max_new_tokens").name
        return DEFAULT_MAX_NEW_TOKENS, "default"

    def default_max_new_tokens(self, source_tokens: int) -> int:
        """Cap on output length (:meth:`decode_limit`), bounded by max_target_tokens and the context left."""
        cap = self.decode_limit()[0]
        if self.max_target_tokens is not None:
            cap = min(cap, self.max_target_tokens)
        if self.context is not None:
            cap = min(cap, self.context - source_tokens)
        return max(cap, 0)

    def target_room(self, source_tokens: int) -> tuple[int, str] | None:
        """The positions the cache is made for (onnxruntime-genai's ``max_length``, else
        ``max_position_embeddings``) less the prompt's: prompt and output share them."""
        positions, genai = self._room  # not the graphs': a closed tier is still checked against its reference
        if positions is None:
            return None
        if genai is not None:
            where = f"{genai.path}: field {genai.max_length_field}"
        else:
            where = f"{meta_source(self.path, 'max_position_embeddings')}: field max_position_embeddings"
        why = f"{where}: {positions} positions, {source_tokens} of them the prompt's"
        return max(positions - source_tokens, 0), why

    def begin(self, ids: list[int] | None = None, trace: Trace | None = None) -> AnyLane:
        """An empty cache: a decode's start (no call made; the prompt is the first feed)."""
        return open_lane(self.graphs)

    def greedy_ids(self, ids: list[int], *, max_new_tokens: int | None = None, trace: Trace | None = None) -> Decoded:
        """Cached greedy decode of one prompt (:meth:`source_ids`): the timed region, ids in -> ids out.

        One prefill call for the whole prompt, then one call per token. The wall clock runs from
        ``trace.started`` (a new trace: now) to the last token decided; ``first_token_s`` is the
        time to the first token (the prefill and its argmax).
        """
        limit = self.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
        trace = trace or Trace()  # made after the arguments are settled: its clock starts at the first real work
        if limit < 1:
            trace.ended = perf_counter()
            return finish(self, [], "max_new_tokens", trace)
        lane = self.begin()
        token = int(lane.feed(ids, trace)[-1].argmax())
        first = perf_counter() - trace.started
        if token == self.special.eos:
            trace.ended = perf_counter()
            return finish(self, [], "eos", trace, first)
        out, stopped = lane.greedy(token, self.special.eos, limit, trace)
        return finish(self, out, stopped, trace, first)

    def greedy_uncached(self, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None) -> Decoded:
        """Reference decode: every step feeds the whole sequence to an empty cache. O(T^2); tests only."""
        ids = self.source_ids(text)
        trace = trace or Trace()
        limit = self.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
        out: list[int] = []
        while len(out) < limit:
            token = int(np.argmax(self.begin().feed([*ids, *out], trace)[-1]))
            if token == self.special.eos:
                return finish(self, out, "eos", trace)
            out.append(token)
        return finish(self, out, "max_new_tokens", trace)

    def prefill(
        self, ids: list[int], block: int | None = None, trace: Trace | None = None
    ) -> tuple[np.ndarray, AnyLane]:
        """Feed the prompt from an empty cache in calls of ``block`` tokens (None: one call, as a decode does):
        logits of every prompt position ``(len(ids), vocab)`` and the lane after them."""
        trace = trace or Trace()
        lane = self.begin()
        rows = _feed_blocks(lane, ids, block or len(ids), trace)
        return np.concatenate(rows), lane

    def feed_prefix(
        self, ids: list[int], tokens: list[int], block: int, trace: Trace | None = None
    ) -> tuple[np.ndarray, AnyLane]:
        """Prefill ``ids`` in one call, then feed ``tokens`` in calls of ``block``: the framing suite's decode phase.

        Logits ``(len(tokens) + 1, vocab)``: row i is what decides ``tokens[i]`` (row 0: the prompt's last position).
        block = 1 is single-step framing; block = len(tokens) feeds them all in one batched call.
        """
        trace = trace or Trace()
        lane = self.begin()
        rows = [lane.feed(ids, trace)[-1:]]
        if tokens:
            rows += _feed_blocks(lane, tokens, block, trace)
        return np.concatenate(rows), lane

    def feed_framed(
        self, ids: list[int], tokens: list[int], block: int | None, trace: Trace | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The prompt prefilled, then ``tokens`` fed in calls of ``block`` (None: one call): see the protocol."""
        logits, lane = self.feed_prefix(ids, tokens, block or max(len(tokens), 1), trace)
        return logits, lane.kv()

    def teacher_forced(self, ids: list[int], tokens: list[int], trace: Trace | None = None) -> np.ndarray:
        """The prompt prefilled in one call, then ``tokens`` in one call on its cache (as a verifier checks a
        block): logits ``(len(tokens) + 1, vocab)``, row i the distribution that decides ``tokens[i]`` (row 0:
        the prompt's last position; the last row decides eos)."""
        trace = trace or Trace()
        lane = self.begin()
        rows = [lane.feed(ids, trace)[-1:]]
        if tokens:
            rows.append(lane.feed(tokens, trace))
        return np.concatenate(rows)

    def prefill_framed(
        self, ids: list[int], block: int | None, trace: Trace | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The prompt fed in calls of ``block`` (None: one call, as a decode feeds it): its logits and cache."""
        logits, lane = self.prefill(ids, block, trace)
        return logits, lane.kv()

    def open_speculative(self, ids: list[int], limit: int, trace: Trace) -> Opening:
        """The verifier prefills the prompt in one call, as its greedy decode does: its argmax is the first
        committed token (and the first output)."""
        if limit < 1:
            return Opening(None, list(ids), len(ids), stopped="max_new_tokens")
        lane = self.begin()
        token = int(lane.feed(ids, trace)[-1].argmax())
        first = perf_counter() - trace.started
        if token == self.special.eos:
            return Opening(lane, list(ids), len(ids), 1, first, "eos")
        return Opening(lane, [*ids, token], len(ids), 1, first)


def _feed_blocks(lane: AnyLane, tokens: list[int], block: int, trace: Trace) -> list[np.ndarray]:
    if block < 1:
        raise ValueError(f"block must be at least 1 token, not {block}")
    return [lane.feed(tokens[i : i + block], trace) for i in range(0, len(tokens), block)]
