"""A model tier on disk -> a loaded :class:`Tier`: graphs, tokenizer, special ids, fingerprint.

Metadata comes from the tier folder: Hugging Face's ``config.json`` (and
``generation_config.json``) when present, overridden by measure's own
``tier.json``. Special ids not stated there come from the tokenizer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.decoder import Decoder, Encoder, Lane
from measure.engine.fingerprint import TierFingerprint, file_fingerprint, graph_fingerprint, tier_precision
from measure.engine.graphs import LAYOUT_FILES, detect_layout
from measure.engine.kvcache import KVCache
from measure.engine.layouts import open_graphs
from measure.engine.session import AfterRun, SessionConfig, Trace
from measure.engine.tokenizer import Tokenizer, load_tokenizer
from measure.errors import MeasureError

META_FILES = ("config.json", "generation_config.json", "tier.json")


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    eos: int
    decoder_start: int


def read_meta(folder: Path) -> dict[str, Any]:
    """Merged metadata, later files overriding earlier ones; a malformed file is a one-line error."""
    meta: dict[str, Any] = {}
    for name in META_FILES:
        path = folder / name
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise MeasureError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from exc
        except UnicodeDecodeError as exc:
            raise MeasureError(f"{path}: not UTF-8 text (byte {exc.start}); expected a JSON object") from exc
        except json.JSONDecodeError as exc:
            raise MeasureError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(data, dict):
            raise MeasureError(f"{path}: expected a JSON object")
        meta.update(data)
    return meta


def _meta_source(folder: Path, key: str) -> Path:
    """The metadata file that set ``key`` (the last one read), for error messages."""
    for name in reversed(META_FILES):
        path = folder / name
        try:
            if path.is_file() and key in json.loads(path.read_text(encoding="utf-8")):
                return path
        except (OSError, ValueError):
            continue
    return folder / "tier.json"


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
                f"{_meta_source(folder, key)}: field {key}: expected a token id in [0, {vocab_size}) "
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
            graphs = tuple(graph_fingerprint(self.path / f) for f in LAYOUT_FILES[self.layout])
            files = tuple(file_fingerprint(p) for p in sorted(self.path.iterdir()) if p.is_file())
            self._fingerprint = TierFingerprint(
                name=self.name,
                layout=self.layout,
                precision=tier_precision(graphs),
                files=files,
                graphs=graphs,
                layers=self.shape.layers,
                heads=self.shape.heads,
                head_dim=self.shape.head_dim,
                vocab_size=self.shape.vocab_size,
                tokenizer=self.tokenizer.name,
                total_bytes=sum(f.bytes for f in files),
            )
        return self._fingerprint


def load_tier(
    folder: Path | str,
    config: SessionConfig | None = None,
    label: str | None = None,
    after_run: AfterRun | None = None,
    name: str | None = None,
) -> Tier:
    """Load a tier; ``after_run`` is called inside the timing after every call (test-only, e.g. a slowdown)."""
    return Tier(Path(folder), config, label, after_run, name)
