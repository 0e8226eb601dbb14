"""How to call a decoder-only (causal LM) tier's ONNX graphs: layout discovery and the per-call feeds.

Three layouts of Hugging Face optimum's exports are understood, told apart by
their files and checked against the graphs' own input and output names (the
number of layers, key/value heads and head size are read from the graph, never
assumed):

* ``causal``: ``model.onnx`` (optimum's current ``text-generation-with-past``
  export), one graph for every call, the first with a length-0 past;
* ``causal-split``: ``decoder_model.onnx`` (first call, no past inputs) +
  ``decoder_with_past_model.onnx`` (every later call);
* ``causal-merged``: ``decoder_model_merged.onnx``, whose ``use_cache_branch``
  input picks the first-call or the with-past branch.

Every graph takes ``input_ids``, ``attention_mask`` (past + new positions),
optionally ``position_ids`` and ``past_key_values.{i}.key/.value``; it returns
``logits`` and ``present.{i}.key/.value``.

A fourth, ``genai``, is a folder of onnxruntime-genai's model builder
(``genai_config.json`` beside the graph it names): GroupQueryAttention with the
rotary embedding fused in, no ``position_ids``, a symbolic head size and the
names per layer the config states. onnxruntime-genai allocates its cache once at
``max_length`` (``past_present_share_buffer``) and so does measure's loop
(:mod:`measure.engine.causal.shared_lane`); the graph equally takes a past grown from
length 0 (GroupQueryAttention reads the lengths from ``attention_mask``), which
the plain :class:`CausalLane` does: both give onnxruntime-genai's logits, bit for
bit, on the demo folders.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.bounds import require_fits
from measure.engine.causal.genai_config import GenaiConfig, check_genai_graph, read_genai_config
from measure.engine.kind import CAUSAL_LAYOUT_FILES, SEQ2SEQ_MARKERS, detect_causal_layout
from measure.engine.meta import meta_source
from measure.engine.session import DTYPES, AfterRun, SessionConfig, TimedSession, open_session
from measure.errors import MeasureError

_PAST = re.compile(r"^past_key_values\.(\d+)\.(key|value)$")
_PRESENT = re.compile(r"^present\.(\d+)\.(key|value)$")
_INPUTS = {"input_ids", "attention_mask", "position_ids", "use_cache_branch"}
_EXPECTED = (
    "model.onnx (optimum text-generation-with-past), decoder_model.onnx + decoder_with_past_model.onnx, "
    "or decoder_model_merged.onnx"
)


def require_causal_layout(folder: Path) -> str:
    """:func:`detect_causal_layout`, or a one-line error saying what a decoder-only folder holds."""
    if not folder.is_dir():
        raise MeasureError(f"{folder}: not a folder (expected a decoder-only model tier folder)")
    layout = detect_causal_layout(folder)
    if layout is not None:
        return layout
    seq2seq = [f for f in SEQ2SEQ_MARKERS if (folder / f).is_file()]
    if seq2seq:
        raise MeasureError(
            f"{folder}: an encoder-decoder (seq2seq) tier ({seq2seq[0]}); expected a decoder-only folder: {_EXPECTED}"
        )
    found = sorted(p.name for p in folder.glob("*.onnx"))
    raise MeasureError(
        f"{folder}: neither a seq2seq nor a decoder-only tier: expected {_EXPECTED} "
        f"(or an encoder graph); found {', '.join(found) or 'no .onnx files'}"
    )


@dataclass(frozen=True)
class CausalShape:
    """What the graphs (or config.json, for symbolic dims) say about the model."""

    layers: int
    heads: int
    """Key/value heads: the cache's second axis (fewer than attention heads under grouped-query attention)."""
    head_dim: int
    vocab_size: int
    kv_dtype: type


class Ready(dict[Any, np.ndarray]):
    """Arrays made once per key on first use and reused read-only: the hot loop feeds them, never builds them."""

    def __init__(self, make: Callable[[Any], np.ndarray]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Any) -> np.ndarray:
        arr = self.make(key)
        arr.flags.writeable = False
        self[key] = arr
        return arr


def _check(session: TimedSession, need_past: bool) -> list[int]:
    """Input and output names against the contract; the layer numbers of the past inputs."""
    for what, names, known, pattern in (
        ("input", list(session.inputs), _INPUTS, _PAST),
        ("output", list(session.outputs), {"logits"}, _PRESENT),
    ):
        bad = [n for n in names if n not in known and not pattern.match(n)]
        if bad:
            raise MeasureError(
                f"{session.path}: {what} {bad[0]!r} is not one a decoder-only graph has; found {', '.join(names)}"
            )
    for need in ("input_ids", "attention_mask"):
        if need not in session.inputs:
            raise MeasureError(f"{session.path}: expected an input named {need}; found {', '.join(session.inputs)}")
    if "logits" not in session.outputs:
        raise MeasureError(f"{session.path}: expected an output named logits; found {', '.join(session.outputs)}")
    layers = sorted({int(m.group(1)) for n in session.inputs if (m := _PAST.match(n))})
    if need_past and not layers:
        raise MeasureError(
            f"{session.path}: no past_key_values.{{i}}.key/value inputs; the engine needs the key/value cache "
            "to decode in O(T) (export with --task text-generation-with-past)"
        )
    if not need_past and layers:
        raise MeasureError(f"{session.path}: a first-call graph with past inputs; expected none")
    if layers != list(range(len(layers))):
        raise MeasureError(f"{session.path}: past layers are {layers}; expected 0..{len(layers) - 1}")
    return layers


def _check_genai(session: TimedSession, cfg: GenaiConfig) -> None:
    """A genai graph's names against its config's: every layer's past and present, nothing unknown."""
    inputs = {"input_ids", "attention_mask", *cfg.past_names(), *([cfg.position_ids] if cfg.position_ids else [])}
    outputs = {"logits", *cfg.present_names()}
    for what, names, known in (("input", list(session.inputs), inputs), ("output", list(session.outputs), outputs)):
        extra = [n for n in names if n not in known]
        missing = sorted(known - set(names))
        if extra or missing:
            said = f"{extra[0]!r} is not one its config names" if extra else f"{missing[0]!r} is missing"
            raise MeasureError(
                f"{cfg.path}: field model.decoder.{what}s (with num_hidden_layers {cfg.layers}): {session.path.name}'s "
                f"{what} {said}; found {', '.join(names)}"
            )


def _dim(value: Any, meta: dict[str, Any], *keys: str, graph: Path | None = None) -> int | None:
    """A dimension the graph fixes (``value``), else the first config key that states it. With ``graph``, a
    config that states the first key otherwise than the graph is refused: it describes another model."""
    stated = meta.get(keys[0])
    if isinstance(value, int):
        if graph is not None and isinstance(stated, int) and not isinstance(stated, bool) and stated != value:
            raise MeasureError(
                f"{meta_source(graph.parent, keys[0])}: field {keys[0]}: {stated}, but {graph.name} has {value}; "
                "expected the config to describe the graph"
            )
        return value
    for key in keys:
        found = meta.get(key)
        if isinstance(found, int):
            return found
    return None


def _shape(session: TimedSession, layers: int, meta: dict[str, Any], first_past: str) -> CausalShape:
    """Key/value heads and head size from the past input's shape, else config.json; vocabulary from the logits."""
    past = session.inputs[first_past]
    heads = _dim(past.shape[1], meta, "num_key_value_heads", "num_attention_heads", graph=session.path)
    head_dim = _dim(past.shape[3], meta, "head_dim", graph=session.path)
    hidden, heads_all = meta.get("hidden_size"), meta.get("num_attention_heads")
    if head_dim is None and isinstance(hidden, int) and isinstance(heads_all, int) and heads_all > 0:
        head_dim = hidden // heads_all
    if heads is None or head_dim is None:
        raise MeasureError(
            f"{session.path}: {first_past} has symbolic heads/head size {past.shape}; "
            "state num_key_value_heads and head_dim in config.json or tier.json"
        )
    vocab = _dim(session.outputs["logits"].shape[-1], meta, "vocab_size")
    if vocab is None:
        raise MeasureError(f"{session.path}: logits have a symbolic vocabulary axis; state vocab_size in tier.json")
    return CausalShape(layers, heads, head_dim, vocab, DTYPES[past.type])


class CausalGraphs:
    """One tier's sessions and everything a call needs that is made once: names, dtypes, ready arrays.

    ``first`` takes the call from an empty cache, ``steady`` every later one (the same
    session for ``causal``, ``causal-merged`` and ``genai``). ``names`` asks a session for the presents
    first and the logits last, so the presents refill the feeds by a plain ``zip`` with ``past``.
    ``genai`` (its config given) takes the config's names and its head size and key/value heads.
    """

    def __init__(
        self, layout: str, sessions: list[TimedSession], meta: dict[str, Any], genai: GenaiConfig | None = None
    ) -> None:
        self.layout = layout
        self.sessions = tuple(sessions)
        self.first, self.steady = sessions[0], sessions[-1]
        self.genai = genai
        self.caches: list[Any] = []
        """Cache buffer sets of :mod:`shared_lane` / :mod:`bound_lane`, each lent to one live lane at a time."""
        context = genai.max_length if genai is not None else meta.get("max_position_embeddings")
        self.context: int | None = context if isinstance(context, int) and context > 0 else None
        """Positions the cache buffers of :mod:`bound_lane` / :mod:`shared_lane` are made for."""
        if genai is not None:
            _check_genai(self.steady, genai)
            self.past, self.names = genai.past_names(), [*genai.present_names(), "logits"]
            meta = meta | genai.meta()
        else:
            if layout == "causal-split":
                _check(self.first, need_past=False)
            layers = len(_check(self.steady, need_past=True))
            self.past = [f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
            self.names = [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")] + ["logits"]
        for s in self.sessions:
            missing = [n for n in self.names if n not in s.outputs]
            if missing:
                raise MeasureError(f"{s.path}: missing output {missing[0]}; found {', '.join(s.outputs)}")
            s.output_names = self.names
        inputs = self.steady.inputs
        self.shape = _shape(self.steady, len(self.past) // 2, meta, self.past[0])
        self._check_sizes(meta)
        self.ids_dtype = DTYPES[inputs["input_ids"].type]
        self.mask_dtype = DTYPES[inputs["attention_mask"].type]
        self.positions = "position_ids" in inputs
        self.pos_dtype = DTYPES[inputs["position_ids"].type] if self.positions else np.int64
        self.branch = "use_cache_branch" in inputs
        self.one = Ready(lambda token: np.array([[token]], dtype=self.ids_dtype))
        """``(1, 1)`` input ids per token."""
        self.masks = Ready(lambda n: np.ones((1, n), dtype=self.mask_dtype))
        """All-ones attention masks per total length (past + new)."""
        self.steps = Ready(lambda p: np.array([[p]], dtype=self.pos_dtype))
        """``(1, 1)`` position ids per position."""
        self.spans = Ready(lambda span: np.arange(span[0], span[0] + span[1], dtype=self.pos_dtype)[None])
        """``(1, k)`` position ids per ``(first position, k)``."""
        self._start = self._start_feeds()

    def _check_sizes(self, meta: dict[str, Any]) -> None:
        """The config numbers that size buffers, against the graph and this machine, before any is made."""
        s, folder = self.shape, self.steady.path.parent
        graph_heads = self.steady.inputs[self.past[0]].shape[1]
        if self.genai is not None and isinstance(graph_heads, int) and graph_heads != self.genai.kv_heads:
            raise MeasureError(
                f"{self.genai.path}: field model.decoder.num_key_value_heads: {self.genai.kv_heads}, but "
                f"{self.steady.path.name}'s {self.past[0]} has {graph_heads}; expected the config to describe the graph"
            )
        itemsize = np.dtype(s.kv_dtype).itemsize
        position = 2 * s.layers * s.heads * s.head_dim * itemsize  # one position of every layer's key and value
        if self.genai is not None:
            g = self.genai
            require_fits(g.path, g.max_length_field, g.max_length, g.max_length * position, "the key/value cache")
        elif self.context is not None:  # bound_lane's two cache sides
            source = meta_source(folder, "max_position_embeddings")
            need = 2 * self.context * position
            require_fits(source, "max_position_embeddings", self.context, need, "the key/value cache")
        if not isinstance(self.steady.outputs["logits"].shape[-1], int):  # the vocabulary came from a config file
            require_fits(
                meta_source(folder, "vocab_size"), "vocab_size", s.vocab_size, s.vocab_size * 4, "a logits row"
            )

    def _start_feeds(self) -> dict[str, np.ndarray]:
        """The first call's fixed feeds: the empty (length 0) past where the graph takes one, the branch off."""
        feeds: dict[str, np.ndarray] = {}
        if self.past[0] in self.first.inputs:
            s = self.shape
            zeros: np.ndarray = np.zeros((1, s.heads, 0, s.head_dim), dtype=s.kv_dtype)
            zeros.flags.writeable = False
            feeds.update(dict.fromkeys(self.past, zeros))
        if self.branch:
            off = np.array([False])
            off.flags.writeable = False
            feeds["use_cache_branch"] = off
        return feeds

    def start_feeds(self) -> dict[str, np.ndarray]:
        """A fresh feeds dict for one decode's first call (the arrays in it are shared, read-only)."""
        return self._start.copy()

    def ids(self, tokens: list[int]) -> np.ndarray:
        if len(tokens) == 1:
            return self.one[tokens[0]]
        return np.array([tokens], dtype=self.ids_dtype)

    def describe(self) -> dict[str, Any]:
        """What another runtime needs to call this layout (JSON-ready): files in call order, names, dtypes."""
        return {
            "layout": self.layout,
            "files": [s.path.name for s in self.sessions],
            "past": self.past,
            "present": self.names[:-1],
            "ids_dtype": np.dtype(self.ids_dtype).name,
            "mask_dtype": np.dtype(self.mask_dtype).name,
            "position_ids": self.positions,
            "position_dtype": np.dtype(self.pos_dtype).name,
            "use_cache_branch": self.branch,
        } | ({"genai": self.genai.cache_mode()} if self.genai is not None else {})


def open_causal_graphs(
    folder: Path, layout: str, config: SessionConfig, label: str, meta: dict[str, Any], after_run: AfterRun | None
) -> CausalGraphs:
    """Sessions for one decoder-only tier, checked against the contract; ``after_run`` hooks every call."""
    genai = read_genai_config(folder) if layout == "genai" else None
    if genai is not None:
        check_genai_graph(genai, folder / genai.filename)
    sessions = []
    for file in (genai.filename,) if genai is not None else CAUSAL_LAYOUT_FILES[layout]:
        path = folder / file
        sessions.append(TimedSession(open_session(config, path), f"{label}.{path.stem}", path, after_run))
    return CausalGraphs(layout, sessions, meta, genai)
