"""An encoder-decoder (seq2seq) tier on disk -> a loaded :class:`Seq2SeqTier`: graphs, special ids, decodes.

Metadata comes from the tier folder: Hugging Face's ``config.json`` (and
``generation_config.json``) when present, overridden by measure's own
``tier.json`` (:class:`measure.engine.folder.TierFolder`). Special ids not stated
there come from the tokenizer.

Greedy decoding carries the key/value cache between calls (single-step framing):
one decoder call per output token, each feeding only the new token on top of the
cache, O(T) in output length. The timed region is token ids in -> token ids out
(:meth:`Seq2SeqTier.greedy_ids`); :meth:`Seq2SeqTier.greedy_uncached` re-feeds the
whole prefix every step and exists as the slow reference the cached path is
checked against.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.folder import TierFolder
from measure.engine.meta import meta_source
from measure.engine.options import SessionConfig
from measure.engine.result import Decoded, finish
from measure.engine.seq2seq.decoder import Decoder, Encoder, Lane
from measure.engine.seq2seq.graphs import LAYOUT_FILES, detect_layout
from measure.engine.seq2seq.kvcache import KVCache
from measure.engine.seq2seq.layouts import open_graphs
from measure.engine.session import AfterRun, TimedSession, Trace
from measure.engine.tier import Opening
from measure.engine.tokenizer import Tokenizer
from measure.errors import MeasureError


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    eos: int
    decoder_start: int


def _special_ids(folder: Path, meta: dict[str, Any], tokenizer: Tokenizer, vocab_size: int) -> SpecialIds:
    known = tokenizer.special_ids()
    values: dict[str, int] = {}
    for key in ("pad_token_id", "eos_token_id"):
        value = meta.get(key, known.get(key))
        if isinstance(value, list):  # generation_config may list several eos ids
            value = value[0] if value else None
        if value is None:
            raise MeasureError(f"{folder}: no {key}: state it in tier.json (the tokenizer has no recognisable token)")
        values[key] = value
    values["decoder_start_token_id"] = meta.get("decoder_start_token_id", values["pad_token_id"])
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < vocab_size:
            raise MeasureError(
                f"{meta_source(folder, key)}: field {key}: expected a token id in [0, {vocab_size}) "
                f"(the model's vocabulary), got {value!r}"
            )
    return SpecialIds(
        pad=values["pad_token_id"], eos=values["eos_token_id"], decoder_start=values["decoder_start_token_id"]
    )


def _limit(meta: dict[str, Any], folder: Path, *keys: str) -> int | None:
    for key in keys:
        if key in meta:
            value = meta[key]
            if not isinstance(value, int) or value < 1:
                raise MeasureError(f"{folder}: metadata {key}: expected a positive integer, got {value!r}")
            return value
    return None


class Seq2SeqTier(TierFolder):
    """One loaded, ready-to-decode encoder-decoder tier (see :class:`~measure.engine.folder.TierFolder` for
    ``label`` and ``name``)."""

    kind = "seq2seq"
    holds = ("encoder", "decoder")

    def __init__(
        self,
        folder: Path,
        config: SessionConfig | None = None,
        label: str | None = None,
        after_run: AfterRun | None = None,
        name: str | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> None:
        """``max_new_tokens``: the decode length a suite config sets (None: :meth:`default_max_new_tokens`'s)."""
        folder = Path(folder)
        if not folder.is_dir():
            raise MeasureError(f"{folder}: not a folder (expected a model tier folder)")
        super().__init__(folder, config, label, name, max_new_tokens)
        self.layout = detect_layout(folder)
        self.tokenizer = self._load_tokenizer()
        self.encoder: Encoder
        self.decoder: Decoder
        self.encoder, self.decoder = open_graphs(folder, self.layout, self.config, self.label, self.meta, after_run)
        self.shape = self.decoder.shape
        self._check_vocabulary()
        self.special = _special_ids(folder, self.meta, self.tokenizer, self.shape.vocab_size)
        self.max_source_tokens = self.encoder.max_tokens or _limit(
            self.meta, folder, "max_source_tokens", "max_position_embeddings"
        )
        self._target_key = next((k for k in ("max_target_tokens", "max_position_embeddings") if k in self.meta), None)
        self.max_target_tokens = _limit(self.meta, folder, "max_target_tokens", "max_position_embeddings")

    def graph_files(self) -> list[Path]:
        return [self.path / f for f in LAYOUT_FILES[self.layout]]

    def graph_sessions(self) -> tuple[TimedSession, ...]:
        return (self.encoder.session, *self.decoder.sessions)

    def describe_graphs(self) -> dict[str, dict[str, Any]]:
        return {"encoder": self.encoder.describe(), "decoder": self.decoder.describe()}

    def source_ids(self, text: str) -> list[int]:
        """Token ids of one source, refusing what the model cannot take."""
        if not text.strip():
            raise MeasureError(f"{self.path}: empty source text; expected at least one non-space character")
        ids = self.tokenizer.encode(text)
        if self.max_source_tokens is not None and len(ids) > self.max_source_tokens:
            raise MeasureError(
                f"{self.path}: source is {len(ids)} tokens ({text[:40]!r}...); "
                f"this tier accepts at most {self.max_source_tokens}"
            )
        return ids

    def decode_limit(self) -> tuple[int | None, str]:
        """The suite config's ``max_new_tokens``, else None: 4 x source + 8 (:meth:`default_max_new_tokens`)."""
        return (self.max_new_tokens, "config") if self.max_new_tokens is not None else (None, "4 x source + 8")

    def default_max_new_tokens(self, source_tokens: int) -> int:
        """Cap on output length: the suite config's, else generous for transliteration (one letter can become
        four); bounded by positions."""
        cap = self.max_new_tokens if self.max_new_tokens is not None else 4 * source_tokens + 8
        return min(cap, self.max_target_tokens - 1) if self.max_target_tokens else cap

    def target_room(self, source_tokens: int) -> tuple[int, str] | None:
        """The decoder's positions less the start token's (the source has its own, the encoder's)."""
        if self.max_target_tokens is None or self._target_key is None:
            return None
        where = meta_source(self.path, self._target_key)
        why = f"{where}: field {self._target_key}: {self.max_target_tokens} positions, one of them the start token's"
        return self.max_target_tokens - 1, why

    def start(self, ids: list[int], trace: Trace) -> KVCache:
        """Run the encoder and return the empty decoder cache that goes with it."""
        hidden, mask = self.encoder.run(ids, trace)
        return self.decoder.empty(hidden, mask, trace)

    def begin(self, ids: list[int], trace: Trace) -> Lane:
        """Run the encoder and return a decode's :class:`Lane` at its start (the timed decode's way in)."""
        hidden, mask = self.encoder.run(ids, trace)
        return self.decoder.begin(hidden, mask)

    def feed(self, cache: KVCache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, KVCache]:
        """k tokens in one decoder call: logits (k, vocab) and the grown cache."""
        return self.decoder.feed(cache, tokens, trace)

    def greedy_ids(self, ids: list[int], *, max_new_tokens: int | None = None, trace: Trace | None = None) -> Decoded:
        """Cached greedy decode of one tokenized source (:meth:`source_ids`): the timed region, ids in -> ids out.

        The wall clock runs from ``trace.started`` (a new trace: now) to the last token decided.
        """
        limit = self.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
        trace = trace or Trace()  # made after the arguments are settled: its clock starts at the first real work
        lane = self.begin(ids, trace)
        before = len(trace.log)  # the encoder's calls; the next one is the first decoder step
        out, stopped = self.decoder.greedy(lane, self.special.decoder_start, self.special.eos, limit, trace)
        # the first token is known when the first decoder call returns (its argmax costs microseconds)
        first = trace.log[before][2] - trace.started if len(trace.log) > before else None
        return finish(self, out, stopped, trace, first)

    def greedy_uncached(self, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None) -> Decoded:
        """Reference decode: every step feeds the whole prefix to an empty cache. O(T^2); tests only."""
        ids = self.source_ids(text)
        trace = trace or Trace()
        limit = self.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
        empty = self.start(ids, trace)
        prefix = [self.special.decoder_start]
        while len(prefix) - 1 < limit:
            logits, _ = self.feed(empty, prefix, trace)
            token = int(np.argmax(logits[-1]))
            if token == self.special.eos:
                return finish(self, prefix[1:], "eos", trace)
            prefix.append(token)
        return finish(self, prefix[1:], "max_new_tokens", trace)

    def feed_prefix(
        self, ids: list[int], prefix: list[int], block: int, trace: Trace | None = None
    ) -> tuple[np.ndarray, KVCache]:
        """Feed ``prefix`` from an empty cache in calls of ``block`` tokens: logits of every position, final cache.

        block = 1 is single-step framing; block = len(prefix) feeds the whole prefix in one batched call.
        """
        trace = trace or Trace()
        cache = self.start(ids, trace)
        rows = []
        for i in range(0, len(prefix), block):
            logits, cache = self.feed(cache, prefix[i : i + block], trace)
            rows.append(logits)
        return np.concatenate(rows), cache

    def feed_framed(
        self, ids: list[int], tokens: list[int], block: int | None, trace: Trace | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The start token and ``tokens`` fed in calls of ``block`` (None: one call): see the protocol."""
        prefix = [self.special.decoder_start, *tokens]
        logits, cache = self.feed_prefix(ids, prefix, block or len(prefix), trace)
        return logits, cache.self_kv

    def teacher_forced(self, ids: list[int], tokens: list[int], trace: Trace | None = None) -> np.ndarray:
        """The start token and ``tokens`` in one decoder call after the encoder (as a verifier checks a block):
        logits ``(len(tokens) + 1, vocab)``, row i the distribution that decides ``tokens[i]`` (the last: eos)."""
        trace = trace or Trace()
        return self.begin(ids, trace).feed([self.special.decoder_start, *tokens], trace)

    def prefill_framed(
        self, ids: list[int], block: int | None, trace: Trace | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """None to frame: the encoder takes the whole source in one call (suites ask only decoder-only tiers)."""
        raise TypeError(f"{self.path}: an encoder-decoder tier has no prompt prefill to frame")

    def open_speculative(self, ids: list[int], limit: int, trace: Trace) -> Opening:
        """The verifier's lane after the encoder; the committed sequence is the start token (not an output)."""
        return Opening(self.begin(ids, trace), [self.special.decoder_start], 1)
