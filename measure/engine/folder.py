"""What every tier reads from its folder the same way, whatever its model kind: :class:`TierFolder`.

Both families (:mod:`measure.engine.seq2seq`, :mod:`measure.engine.causal`) build
on it: metadata (``config.json``, ``generation_config.json``, ``tier.json``), the
name a record uses, the label a trace uses, the tokenizer, the fingerprint, and
the greedy decode of a source text. How a family opens its graphs and decodes is
its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from measure.engine.fingerprint import TierFingerprint, fingerprint_tier
from measure.engine.meta import read_meta
from measure.engine.options import SessionConfig
from measure.engine.result import Decoded
from measure.engine.session import TimedSession, Trace
from measure.engine.tokenizer import Tokenizer, load_tokenizer
from measure.engine.traffic import StepTraffic, step_traffic
from measure.errors import MeasureError


class TierFolder:
    """One tier folder's shared facts. ``label`` names the tier's calls in a :class:`Trace` (load one folder
    twice with two labels to use one artifact as both drafter and verifier); ``name`` is what records call it:
    a suite config's tier name, else ``tier.json``'s ``name``, else the folder's."""

    kind: str
    """``seq2seq`` (encoder-decoder) or ``causal`` (decoder-only): what records store."""
    layout: str
    shape: Any
    """The graphs' ``layers``, ``heads`` (key/value), ``head_dim``, ``vocab_size`` and ``kv_dtype``."""
    prompt: str | None = None
    """A decoder-only tier's prompt template (``{input}`` where the source goes); None for seq2seq."""
    context: int | None = None
    """Positions prompt and output share (a decoder-only model's ``max_position_embeddings``); None where the
    outputs alone are bounded (``max_target_tokens``)."""

    def __init__(
        self,
        folder: Path,
        config: SessionConfig | None,
        label: str | None,
        name: str | None,
        max_new_tokens: int | None = None,
    ) -> None:
        self.path = folder
        self.config = config or SessionConfig()
        self.meta = read_meta(folder)
        self.name: str = name or str(self.meta.get("name", folder.name))
        self.label = label or self.name
        if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or max_new_tokens < 1):
            raise MeasureError(f"{folder}: max_new_tokens: expected an integer >= 1, got {max_new_tokens!r}")
        self.max_new_tokens = max_new_tokens
        """The decode length a suite config sets for this tier (None: the tier's own default)."""
        self._fingerprint: TierFingerprint | None = None

    holds: tuple[str, ...] = ()
    """The attributes holding the family's sessions and buffers (what :meth:`close` lets go of)."""

    def close(self) -> None:
        """Let go of this tier's onnxruntime sessions and cache buffers now, not whenever the last reference to
        the tier goes: a run that holds one step's sessions at a time frees them before it loads the next. The
        tier cannot decode after; its facts stay (name, path, tokenizer, shape, special ids, the bounds of a
        teacher-forced pass, its fingerprint where it was taken), so a closed tier can still be checked against
        another loaded after it."""
        for attr in self.holds:
            self.__dict__.pop(attr, None)

    def decode_limit(self) -> tuple[int | None, str]:
        """The output cap a decode of this tier takes when no call states one, before the bounds of its positions,
        and where it comes from (``config``, a metadata file, or the family's default); None: per source length."""
        raise NotImplementedError

    def _load_tokenizer(self) -> Tokenizer:
        return load_tokenizer(self.path, self.meta.get("tokenizer"))

    def _check_vocabulary(self) -> None:
        """The tokenizer must fit the model's logits (a larger one names ids the model cannot score)."""
        if self.tokenizer.vocab_size() > self.shape.vocab_size:
            raise MeasureError(
                f"{self.path}: tokenizer vocabulary has {self.tokenizer.vocab_size()} tokens but the model's logits "
                f"have {self.shape.vocab_size}; expected the tokenizer to fit the model"
            )

    tokenizer: Tokenizer

    def graph_files(self) -> list[Path]:
        """The graphs a decode calls, in call order (what the fingerprint reads for precision)."""
        raise NotImplementedError

    def graph_sessions(self) -> tuple[TimedSession, ...]:
        """The sessions of those graphs, in call order: a tool records real decode feeds through them."""
        raise NotImplementedError

    def describe_graphs(self) -> dict[str, dict[str, Any]]:
        """What another runtime needs to call the graphs (JSON-ready): ``decoder`` and, encoder-decoder,
        ``encoder``, each as the family's graphs describe themselves (files, names, dtypes)."""
        raise NotImplementedError

    def fingerprint(self) -> TierFingerprint:
        """Sizes, sha256 and precision of every file; computed once (hashing reads every byte)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint_tier(
                self.name, self.layout, self.path, self.graph_files(), self.shape, self.tokenizer.name
            )
        return self._fingerprint

    def traffic(self) -> StepTraffic:
        """What one decode step reads (:mod:`measure.engine.traffic`), from the last graph a decode calls: the
        step every token after the first takes."""
        return step_traffic(self.graph_files()[-1], self.shape, self.kind)

    def source_ids(self, text: str) -> list[int]:
        raise NotImplementedError

    def greedy_ids(self, ids: list[int], *, max_new_tokens: int | None = None, trace: Trace | None = None) -> Decoded:
        raise NotImplementedError

    def target_ids(self, text: str) -> list[int]:
        """An expected output as the decoder would emit it (no special token): what a teacher-forced pass feeds."""
        return self.tokenizer.encode_target(text)

    def greedy(self, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None) -> Decoded:
        """Cached greedy decode of one source text: tokenized here, then :meth:`greedy_ids` (whose clock starts
        after tokenizing unless ``trace``, made earlier, says otherwise)."""
        return self.greedy_ids(self.source_ids(text), max_new_tokens=max_new_tokens, trace=trace)
