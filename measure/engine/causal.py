"""Decoder-only (causal LM) tiers: load one, prompt it, and decode greedily with the cache carried.

The causal twin of :mod:`measure.engine.artifacts` and :mod:`measure.engine.decode`.
A decode prefills the whole prompt in one call (past length 0), then feeds one
token per call on top of the cache: O(T) in output length. The timed region is
prompt ids in -> ids out (:func:`causal_greedy_ids`); applying the prompt
template and tokenizing (:meth:`CausalTier.source_ids`) is timed apart, as the
seq2seq path times tokenizing. :func:`causal_greedy_uncached` re-feeds the whole
sequence every step: the slow reference the cached path is checked against.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from measure.engine.causal_lane import AnyLane, CausalLane, open_lane
from measure.engine.causal_layouts import (
    detect_causal_layout,
    open_causal_graphs,
    require_causal_layout,
)
from measure.engine.decoded import Decoded, finish
from measure.engine.fingerprint import TierFingerprint, fingerprint_tier
from measure.engine.meta import meta_source, read_meta
from measure.engine.session import AfterRun, SessionConfig, Trace
from measure.engine.tokenizer import load_tokenizer
from measure.errors import MeasureError

__all__ = [
    "CausalLane",
    "CausalSpecialIds",
    "CausalTier",
    "causal_feed_prefix",
    "causal_greedy",
    "causal_greedy_ids",
    "causal_greedy_uncached",
    "causal_prefill",
    "detect_causal_layout",
    "load_causal_tier",
]


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


class CausalTier:
    """One loaded, ready-to-decode decoder-only tier (see :class:`measure.engine.artifacts.Tier` for
    ``label`` and ``name``: the same meaning)."""

    kind = "causal"
    """The model kind records store: ``seq2seq`` (encoder-decoder) or ``causal`` (decoder-only)."""

    def __init__(
        self,
        folder: Path,
        config: SessionConfig | None = None,
        label: str | None = None,
        after_run: AfterRun | None = None,
        name: str | None = None,
        *,
        prompt: str | None = None,
    ) -> None:
        """``prompt`` overrides tier.json's template (a suite config's ``tiers[i].prompt``)."""
        folder = Path(folder)
        self.layout = require_causal_layout(folder)
        self.path = folder
        self.config = config or SessionConfig()
        self.meta = read_meta(folder)
        self.name: str = name or str(self.meta.get("name", folder.name))
        self.label = label or self.name
        self.tokenizer = load_tokenizer(folder, self.meta.get("tokenizer"))
        self.prompt = _prompt(folder, self.meta, prompt)
        self.graphs = open_causal_graphs(folder, self.layout, self.config, self.label, self.meta, after_run)
        self.shape = self.graphs.shape
        if self.tokenizer.vocab_size() > self.shape.vocab_size:
            raise MeasureError(
                f"{folder}: tokenizer vocabulary has {self.tokenizer.vocab_size()} tokens but the model's logits "
                f"have {self.shape.vocab_size}; expected the tokenizer to fit the model"
            )
        self.special = _special_ids(folder, self.meta, self.tokenizer.special_ids(), self.shape.vocab_size)
        self.context = _positive(folder, self.meta, "max_position_embeddings")
        """Positions the model was built for: prompt and output together stay within them."""
        self._source_key = "max_source_tokens" if "max_source_tokens" in self.meta else "max_position_embeddings"
        self.max_source_tokens = _positive(folder, self.meta, "max_source_tokens") or self.context
        self.max_target_tokens = _positive(folder, self.meta, "max_target_tokens")
        self._fingerprint: TierFingerprint | None = None

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

    def default_max_new_tokens(self, source_tokens: int) -> int:
        """Cap on output length: generous for transliteration, bounded by max_target_tokens and the context left."""
        cap = 4 * source_tokens + 8
        if self.max_target_tokens is not None:
            cap = min(cap, self.max_target_tokens)
        if self.context is not None:
            cap = min(cap, self.context - source_tokens)
        return max(cap, 0)

    def begin(self) -> AnyLane:
        """An empty cache: a decode's start (no call made; the prefill is the first)."""
        return open_lane(self.graphs)

    def fingerprint(self) -> TierFingerprint:
        """Sizes, sha256 and precision of every file; computed once (hashing reads every byte)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint_tier(
                self.name,
                self.layout,
                self.path,
                [s.path for s in self.graphs.sessions],
                self.shape,
                self.tokenizer.name,
            )
        return self._fingerprint


def load_causal_tier(
    folder: Path | str,
    session: SessionConfig | None = None,
    after_run: AfterRun | None = None,
    *,
    label: str | None = None,
    name: str | None = None,
    prompt: str | None = None,
) -> CausalTier:
    """Load a decoder-only tier; a seq2seq or unrecognised folder, or a bad genai_config.json, is one line."""
    return CausalTier(Path(folder), session, label, after_run, name, prompt=prompt)


def causal_greedy(
    tier: CausalTier, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None
) -> Decoded:
    """Cached greedy decode of one source text: prompted and tokenized here, then :func:`causal_greedy_ids`."""
    ids = tier.source_ids(text)
    return causal_greedy_ids(tier, ids, max_new_tokens=max_new_tokens, trace=trace)


def causal_greedy_ids(
    tier: CausalTier, ids: list[int], *, max_new_tokens: int | None = None, trace: Trace | None = None
) -> Decoded:
    """Cached greedy decode of one prompt (:meth:`CausalTier.source_ids`): the timed region, ids in -> ids out.

    One prefill call for the whole prompt, then one call per token. The wall clock runs from
    ``trace.started`` (a new trace: now) to the last token decided; ``first_token_s`` is the
    time to the first token (the prefill and its argmax).
    """
    limit = tier.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
    trace = trace or Trace()  # made after the arguments are settled: its clock starts at the first real work
    if limit < 1:
        trace.ended = perf_counter()
        return finish(tier, [], "max_new_tokens", trace)
    lane = tier.begin()
    token = int(lane.feed(ids, trace)[-1].argmax())
    first = perf_counter() - trace.started
    if token == tier.special.eos:
        trace.ended = perf_counter()
        return finish(tier, [], "eos", trace, first)
    out, stopped = lane.greedy(token, tier.special.eos, limit, trace)
    return finish(tier, out, stopped, trace, first)


def causal_greedy_uncached(
    tier: CausalTier, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None
) -> Decoded:
    """Reference decode: every step feeds the whole sequence to an empty cache. O(T^2); tests only."""
    ids = tier.source_ids(text)
    trace = trace or Trace()
    limit = tier.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
    out: list[int] = []
    while len(out) < limit:
        token = int(np.argmax(tier.begin().feed([*ids, *out], trace)[-1]))
        if token == tier.special.eos:
            return finish(tier, out, "eos", trace)
        out.append(token)
    return finish(tier, out, "max_new_tokens", trace)


def _feed_blocks(lane: CausalLane, tokens: list[int], block: int, trace: Trace) -> list[np.ndarray]:
    if block < 1:
        raise ValueError(f"block must be at least 1 token, not {block}")
    return [lane.feed(tokens[i : i + block], trace) for i in range(0, len(tokens), block)]


def causal_prefill(
    tier: CausalTier, ids: list[int], block: int | None = None, trace: Trace | None = None
) -> tuple[np.ndarray, CausalLane]:
    """Feed the prompt from an empty cache in calls of ``block`` tokens (None: one call, as a decode does):
    logits of every prompt position ``(len(ids), vocab)`` and the lane after them."""
    trace = trace or Trace()
    lane = tier.begin()
    rows = _feed_blocks(lane, ids, block or len(ids), trace)
    return np.concatenate(rows), lane


def causal_feed_prefix(
    tier: CausalTier, ids: list[int], tokens: list[int], block: int, trace: Trace | None = None
) -> tuple[np.ndarray, CausalLane]:
    """Prefill ``ids`` in one call, then feed ``tokens`` in calls of ``block``: the framing suite's decode phase.

    Logits ``(len(tokens) + 1, vocab)``: row i is what decides ``tokens[i]`` (row 0: the prompt's last position).
    block = 1 is single-step framing; block = len(tokens) feeds them all in one batched call.
    """
    trace = trace or Trace()
    lane = tier.begin()
    rows = [lane.feed(ids, trace)[-1:]]
    if tokens:
        rows += _feed_blocks(lane, tokens, block, trace)
    return np.concatenate(rows), lane
