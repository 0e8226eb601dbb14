"""What every suite may ask of a tier, whatever its model kind: the :class:`Tier` and :class:`Lane` protocols.

Two families implement :class:`Tier`: encoder-decoder tiers
(:class:`measure.engine.seq2seq.tier.Seq2SeqTier`) and decoder-only ones
(:class:`measure.engine.causal.tier.CausalTier`), told apart by their folder's
graphs. A suite decodes, frames and drafts through this protocol; it asks a
tier's ``kind`` only where the measurement itself differs (a decoder-only
tier's prompt prefill framings). :func:`measure.engine.load.load_tier` opens a folder
as the family its graphs say.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from measure.engine.fingerprint import TierFingerprint
from measure.engine.options import SessionConfig
from measure.engine.result import Decoded
from measure.engine.session import TimedSession, Trace
from measure.engine.tokenizer import Tokenizer
from measure.engine.traffic import StepTraffic

KINDS = {"seq2seq": "seq2seq (encoder-decoder)", "causal": "decoder-only"}
"""The model kinds records store, in words."""


@runtime_checkable
class Lane(Protocol):
    """One decode's cache, carried between calls (either kind): what greedy, speculative and framing runs feed."""

    length: int
    """Positions fed so far (a decoder-only tier's prompt included; a seq2seq tier's start token included)."""

    def feed(self, tokens: list[int], trace: Trace) -> np.ndarray:
        """One call of ``len(tokens)`` tokens on top of the cache: logits ``(len(tokens), vocab)``."""
        ...

    def trim(self, length: int) -> None:
        """Keep the first ``length`` positions (how a speculative round drops rejected drafts)."""
        ...

    def draft(self, tokens: list[int], budget: int, eos: int, trace: Trace) -> list[int]:
        """Feed the committed ``tokens`` the lane lacks, then draft greedily up to ``budget`` tokens or eos."""
        ...

    def kv(self) -> tuple[np.ndarray, ...]:
        """The self-attention key/value per layer as it stands (what :meth:`Tier.feed_framed` returns)."""
        ...


class TierShape(Protocol):
    """What the graphs say about the model, either kind (read only)."""

    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int:
        """Key/value heads: the cache's second axis."""
        ...

    @property
    def head_dim(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def kv_dtype(self) -> type: ...


@dataclass
class Opening:
    """Where a speculative decode's rounds start: the verifier's lane, the committed sequence (in the lane's
    positions: a seq2seq start token, or a decoder-only prompt and the prefill's token), how many of its
    leading ids are not output, the verifier calls made and the time to the first output token."""

    lane: Lane | None
    """None only where the opening already ended the decode (:attr:`stopped`)."""
    seq: list[int]
    prompt: int
    calls: int = 0
    first_token_s: float | None = None
    stopped: str | None = None
    """``eos`` when the opening already ended the decode."""


@runtime_checkable
class Tier(Protocol):
    """One loaded, ready-to-decode tier of either model kind. Its facts are read only here: a suite asks, and
    each family may hold a narrower type (a decoder-only tier's ``prompt`` is never None)."""

    @property
    def kind(self) -> str:
        """``seq2seq`` or ``causal``."""
        ...

    @property
    def name(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def path(self) -> Path: ...
    @property
    def layout(self) -> str: ...
    @property
    def meta(self) -> dict[str, Any]: ...
    @property
    def config(self) -> SessionConfig: ...
    @property
    def tokenizer(self) -> Tokenizer: ...
    @property
    def shape(self) -> TierShape: ...
    @property
    def special(self) -> Any:
        """The special ids: ``pad`` and ``eos`` for both kinds (plus ``decoder_start`` or ``bos``)."""
        ...

    @property
    def max_source_tokens(self) -> int | None: ...
    @property
    def max_target_tokens(self) -> int | None: ...
    @property
    def prompt(self) -> str | None: ...
    @property
    def context(self) -> int | None: ...
    @property
    def max_new_tokens(self) -> int | None:
        """The decode length a suite config set (None: the tier's own)."""
        ...

    def source_ids(self, text: str) -> list[int]: ...

    def default_max_new_tokens(self, source_tokens: int) -> int: ...

    def decode_limit(self) -> tuple[int | None, str]: ...

    def fingerprint(self) -> TierFingerprint: ...

    def graph_files(self) -> list[Path]:
        """The graphs a decode calls, in call order."""
        ...

    def graph_sessions(self) -> tuple[TimedSession, ...]:
        """The sessions of those graphs, in call order (a tool records real decode feeds through them)."""
        ...

    def describe_graphs(self) -> dict[str, dict[str, Any]]:
        """What another runtime needs to call the graphs (JSON-ready): ``decoder`` (files in call order, input
        and output names, dtypes), and an encoder-decoder tier's ``encoder``."""
        ...

    def close(self) -> None:
        """Let go of the sessions and cache buffers now (the tier cannot decode after)."""
        ...

    def traffic(self) -> StepTraffic:
        """The bytes one decode step reads, by part (weights, embedding rows, key/value cache per position)."""
        ...

    def begin(self, ids: list[int], trace: Trace) -> Lane:
        """A lane at a decode's start (seq2seq: after the encoder; decoder-only: empty, the prompt fed first)."""
        ...

    def greedy(self, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None) -> Decoded: ...

    def greedy_ids(
        self, ids: list[int], *, max_new_tokens: int | None = None, trace: Trace | None = None
    ) -> Decoded: ...

    def greedy_uncached(self, text: str, *, max_new_tokens: int | None = None) -> Decoded: ...

    def open_speculative(self, ids: list[int], limit: int, trace: Trace) -> Opening: ...

    def target_ids(self, text: str) -> list[int]:
        """An expected output as the decoder would emit it (no special token)."""
        ...

    def target_room(self, source_tokens: int) -> tuple[int, str] | None:
        """The most tokens a teacher-forced pass may feed after a source of ``source_tokens`` (its decode
        positions), and the metadata field that bounds them, in words; None where nothing states a bound."""
        ...

    def feed_prefix(
        self, ids: list[int], tokens: list[int], block: int, trace: Trace | None = None
    ) -> tuple[np.ndarray, object]:
        """The source ``ids`` opened, then ``tokens`` fed in calls of ``block``: the logits of every fed position
        and the cache after them. An encoder-decoder tier's ``tokens`` start with its start token; a decoder-only
        tier prefills ``ids`` in one call first, whose last position is the first row."""
        ...

    def teacher_forced(self, ids: list[int], tokens: list[int], trace: Trace | None = None) -> np.ndarray:
        """``tokens`` fed in one call on the cache the source left: logits ``(len(tokens) + 1, vocab)``, row i
        deciding ``tokens[i]`` and the last row deciding end-of-sequence."""
        ...

    def prefill_framed(
        self, ids: list[int], block: int | None, trace: Trace | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """Decoder-only: the prompt fed in calls of ``block`` (None: one call); its logits and cache."""
        ...

    def feed_framed(
        self, ids: list[int], tokens: list[int], block: int | None, trace: Trace | None = None
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """The output ``tokens`` of a decode replayed on its source in calls of ``block`` (None: all in one call):
        the logits that decided each output and the cache's key/value per layer after them."""
        ...
