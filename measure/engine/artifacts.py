"""A model tier on disk -> a loaded :class:`Tier`: graphs, tokenizer, special ids, fingerprint.

Metadata comes from the tier folder: Hugging Face's ``config.json`` (and
``generation_config.json``) when present, overridden by measure's own
``tier.json``. Special ids not stated there come from the tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.causal import CausalTier, detect_causal_layout
from measure.engine.decoder import Decoder, Encoder, Lane
from measure.engine.fingerprint import TierFingerprint, fingerprint_tier
from measure.engine.graphs import LAYOUT_FILES, detect_layout
from measure.engine.kvcache import KVCache
from measure.engine.layouts import open_graphs
from measure.engine.meta import meta_source, read_meta
from measure.engine.session import AfterRun, SessionConfig, Trace
from measure.engine.tokenizer import Tokenizer, load_tokenizer
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
            if not isinstance(meta[key], int) or meta[key] < 1:
                raise MeasureError(f"{folder}: metadata {key}: expected a positive integer, got {meta[key]!r}")
            return meta[key]
    return None


class Tier:
    """One loaded, ready-to-decode model tier.

    ``label`` names the tier's calls in a :class:`Trace`; load the same folder
    twice with two labels to use one artifact as both drafter and verifier.
    ``name`` is what records call the tier: a suite config's tier name, so a
    record uses one name throughout; without it, ``tier.json``'s ``name`` or
    the folder's.
    """

    kind = "seq2seq"
    """The model kind records store (:class:`measure.engine.causal.CausalTier` is ``causal``)."""

    def __init__(
        self,
        folder: Path,
        config: SessionConfig | None = None,
        label: str | None = None,
        after_run: AfterRun | None = None,
        name: str | None = None,
    ) -> None:
        folder = Path(folder)
        if not folder.is_dir():
            raise MeasureError(f"{folder}: not a folder (expected a model tier folder)")
        self.path = folder
        self.config = config or SessionConfig()
        self.meta = read_meta(folder)
        self.name: str = name or str(self.meta.get("name", folder.name))
        self.label = label or self.name
        self.layout = detect_layout(folder)
        self.tokenizer = load_tokenizer(folder, self.meta.get("tokenizer"))
        self.encoder: Encoder
        self.decoder: Decoder
        self.encoder, self.decoder = open_graphs(folder, self.layout, self.config, self.label, self.meta, after_run)
        self.shape = self.decoder.shape
        if self.tokenizer.vocab_size() > self.shape.vocab_size:
            raise MeasureError(
                f"{folder}: tokenizer vocabulary has {self.tokenizer.vocab_size()} tokens but the model's logits "
                f"have {self.shape.vocab_size}; expected the tokenizer to fit the model"
            )
        self.special = _special_ids(folder, self.meta, self.tokenizer, self.shape.vocab_size)
        self.max_source_tokens = self.encoder.max_tokens or _limit(
            self.meta, folder, "max_source_tokens", "max_position_embeddings"
        )
        self.max_target_tokens = _limit(self.meta, folder, "max_target_tokens", "max_position_embeddings")
        self._fingerprint: TierFingerprint | None = None

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

    def default_max_new_tokens(self, source_tokens: int) -> int:
        """Cap on output length: generous for transliteration (one letter can become four), bounded by positions."""
        cap = 4 * source_tokens + 8
        return min(cap, self.max_target_tokens - 1) if self.max_target_tokens else cap

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

    def fingerprint(self) -> TierFingerprint:
        """Sizes, sha256 and precision of every file; computed once (hashing reads every byte)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint_tier(
                self.name,
                self.layout,
                self.path,
                [self.path / f for f in LAYOUT_FILES[self.layout]],
                self.shape,
                self.tokenizer.name,
            )
        return self._fingerprint


def load_tier(
    folder: Path | str,
    config: SessionConfig | None = None,
    label: str | None = None,
    after_run: AfterRun | None = None,
    name: str | None = None,
    *,
    prompt: str | None = None,
) -> Tier | CausalTier:
    """Load a tier of either model kind, told apart by its graphs (a decoder-only folder, an onnxruntime-genai
    one included, is looked for first); ``after_run`` is called inside the timing after every call
    (test-only, e.g. a slowdown). ``prompt`` overrides a decoder-only tier's template; a seq2seq tier takes none."""
    folder = Path(folder)
    if detect_causal_layout(folder):
        return CausalTier(folder, config, label, after_run, name, prompt=prompt)
    if prompt is not None:
        raise MeasureError(f"{folder}: a prompt template is for decoder-only tiers; this is an encoder-decoder one")
    return Tier(folder, config, label, after_run, name)
