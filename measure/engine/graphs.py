"""How to call a tier's ONNX graphs: input/output discovery and the key/value cache.

Three layouts are understood, each discovered from the graphs' own input and
output names (never from a hard-coded layer count):

* ``simple``: ``encoder.onnx`` + ``decoder-kv.onnx``; ``past_key_{i}``/``past_value_{i}``
  in, ``present_key_{i}``/``present_value_{i}`` out; self-attention cached only and
  ``encoder_hidden_states`` fed on every call.
* ``optimum``: Hugging Face optimum's ``encoder_model.onnx`` + ``decoder_model.onnx``
  (first call) + ``decoder_with_past_model.onnx`` (later calls), with
  ``past_key_values.{i}.{decoder,encoder}.{key,value}`` and ``present.{i}...``.
* ``optimum-merged``: ``decoder_model_merged.onnx``, one graph whose
  ``use_cache_branch`` input picks the first-call or the with-past branch.

Every decoder call takes *k* new tokens on top of a cache and returns logits for
all *k* positions plus the grown cache: k = 1 is single-step framing, k > 1 the
batched framing a speculative verifier uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from measure.engine.session import AfterRun, SessionConfig, TimedSession, Trace, open_session
from measure.errors import MeasureError

_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}
_SIMPLE_PAST = re.compile(r"^past_(key|value)_(\d+)$")
_SIMPLE_PRESENT = re.compile(r"^present_(key|value)_(\d+)$")
_OPT_PAST = re.compile(r"^past_key_values\.(\d+)\.(decoder|encoder)\.(key|value)$")
_OPT_PRESENT = re.compile(r"^present\.(\d+)\.(decoder|encoder)\.(key|value)$")

LAYOUT_FILES = {
    "optimum-merged": ("encoder_model.onnx", "decoder_model_merged.onnx"),
    "optimum": ("encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx"),
    "simple": ("encoder.onnx", "decoder-kv.onnx"),
}


def detect_layout(folder: Path) -> str:
    """The layout whose graph files are all present, or a one-line error saying what was expected."""
    for layout, files in LAYOUT_FILES.items():
        if all((folder / f).is_file() for f in files):
            return layout
    found = sorted(p.name for p in folder.glob("*.onnx")) if folder.is_dir() else []
    raise MeasureError(
        f"{folder}: missing model graphs: expected encoder_model.onnx with decoder_model.onnx + "
        f"decoder_with_past_model.onnx or decoder_model_merged.onnx (optimum layout), "
        f"or encoder.onnx + decoder-kv.onnx; found {', '.join(found) or 'no .onnx files'}"
    )


class Cache:
    """The decoder state after ``length`` fed tokens: self-attention k/v per layer and the cross part.

    ``cross`` holds the feeds that stay fixed for a whole decode: a dict of
    ``encoder_hidden_states`` (and its mask) for the simple layout, per-layer
    cross k/v plus the mask for optimum layouts.
    """

    __slots__ = ("cross", "length", "self_kv")

    def __init__(self, self_kv: tuple[np.ndarray, ...], cross: Any, length: int) -> None:
        self.self_kv = self_kv
        self.cross = cross
        self.length = length

    def trim(self, length: int) -> Cache:
        """Keep the first ``length`` positions: how a speculative round drops rejected drafts."""
        if length > self.length or length < 0:
            raise ValueError(f"cannot trim a cache of {self.length} positions to {length}")
        if length == self.length:
            return self
        return Cache(tuple(np.ascontiguousarray(a[:, :, :length]) for a in self.self_kv), self.cross, length)


@dataclass(frozen=True)
class Shape:
    """What the graphs say about the model."""

    layers: int
    heads: int
    head_dim: int
    vocab_size: int
    kv_dtype: type


def _open(folder: Path, file: str, config: SessionConfig, label: str, after_run: AfterRun | None) -> TimedSession:
    path = folder / file
    return TimedSession(open_session(config, path), f"{label}.{file.removesuffix('.onnx')}", path, after_run)


def _unknown(session: TimedSession, known: set[str], patterns: tuple[re.Pattern[str], ...], what: str) -> None:
    names = list(session.inputs) if what == "input" else list(session.outputs)
    bad = [n for n in names if n not in known and not any(p.match(n) for p in patterns)]
    if bad:
        raise MeasureError(
            f"{session.path}: {what} {bad[0]!r} is not one the engine understands; found {what}s: {', '.join(names)}"
        )


class Encoder:
    """The encoder graph: source ids in, hidden states out."""

    def __init__(self, session: TimedSession) -> None:
        _unknown(session, {"input_ids", "attention_mask"}, (), "input")
        if "input_ids" not in session.inputs:
            raise MeasureError(f"{session.path}: expected an input named input_ids; found {', '.join(session.inputs)}")
        self.session = session
        self.ids_dtype = _DTYPES[session.inputs["input_ids"].type]
        self.mask_dtype = _DTYPES[session.inputs["attention_mask"].type] if "attention_mask" in session.inputs else None
        session.output_names = session.output_names[:1]
        dim = session.inputs["input_ids"].shape[1] if len(session.inputs["input_ids"].shape) > 1 else None
        self.max_tokens = dim if isinstance(dim, int) else None
        self._masks: dict[int, np.ndarray] = {}

    def _mask(self, length: int) -> np.ndarray:
        """The all-ones source mask of one length, made once and shared read-only by every decode."""
        mask = self._masks.get(length)
        if mask is None:
            mask = self._masks[length] = np.ones((1, length), dtype=self.mask_dtype or np.int64)
            mask.flags.writeable = False
        return mask

    def run(self, ids: list[int], trace: Trace) -> tuple[np.ndarray, np.ndarray]:
        arr = np.array([ids], dtype=self.ids_dtype)
        mask = self._mask(len(ids))
        feeds = {"input_ids": arr}
        if self.mask_dtype is not None:
            feeds["attention_mask"] = mask
        (hidden,) = self.session.run(feeds, trace)
        return hidden, mask

    def describe(self) -> dict[str, Any]:
        """What another runtime needs to call this graph: file, output name, dtypes (JSON-ready)."""
        return {
            "file": self.session.path.name,
            "output": self.session.output_names[0],
            "ids_dtype": np.dtype(self.ids_dtype).name,
            "mask_dtype": None if self.mask_dtype is None else np.dtype(self.mask_dtype).name,
        }


class _TokenIds(dict):
    """One read-only ``(1, 1)`` id array per token, made on first use and reused.

    A single-step call then feeds a ready array instead of building one between
    ``session.run`` calls, where every allocation is harness overhead.
    """

    def __init__(self, dtype: type) -> None:
        super().__init__()
        self.dtype = dtype

    def __missing__(self, token: int) -> np.ndarray:
        arr = np.array([[token]], dtype=self.dtype)
        arr.flags.writeable = False
        self[token] = arr
        return arr


class Decoder:
    """Common part of the three decoder layouts: shape discovery and the empty cache."""

    layout: str
    shape: Shape
    ids_dtype: type
    sessions: tuple[TimedSession, ...]
    _one: _TokenIds
    first_call_differs: bool = False
    """The first call (empty cache) uses another graph or branch than every later one."""
    steady_past: list[str]
    """The past inputs a with-cache call's presents refill, in output order."""
    steady_names: list[str]
    """The with-cache session's outputs as a :class:`Lane` asks for them: presents first, logits last."""

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> Cache:
        raise NotImplementedError

    def feed(self, cache: Cache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, Cache]:
        raise NotImplementedError

    def _steady(self, cache: Cache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
        """The with-cache session, its feeds for ``cache`` (a fresh dict) and the past names its outputs refill."""
        raise NotImplementedError

    def begin(self, hidden: np.ndarray, mask: np.ndarray) -> Lane:
        """A lane at a decode's start, from the encoder's outputs: :meth:`empty` then :class:`Lane`.

        The layouts whose first call is a with-cache call override it to build the lane's
        feeds straight from ones made once per decoder: this runs inside the timed region.
        """
        return Lane(self, self.empty(hidden, mask))

    def _first_call(
        self, first: Cache, tokens: list[int], trace: Trace
    ) -> tuple[np.ndarray, dict[str, np.ndarray], Any]:
        """The call from an empty cache on the layouts where it differs: logits ``(len(tokens), vocab)``, the
        with-cache feeds its outputs make (a fresh dict) and the cross part. Only those layouts define it."""
        raise NotImplementedError

    def _steady_session(self) -> TimedSession:
        """The session every with-cache call goes to."""
        return self.sessions[-1]

    @staticmethod
    def _presents_first(session: TimedSession) -> list[str]:
        """``session``'s outputs as a lane asks for them (:attr:`Lane.names`): made once per decoder."""
        logits, *presents = session.output_names
        return [*presents, logits]

    def describe(self) -> dict[str, Any]:
        """What another runtime needs to call this layout (JSON-ready): files in call order, names, dtypes."""
        return {
            "layout": self.layout,
            "files": [s.path.name for s in self.sessions],
            "ids_dtype": np.dtype(self.ids_dtype).name,
        }

    def _ids(self, tokens: list[int]) -> np.ndarray:
        if len(tokens) == 1:
            return self._one[tokens[0]]
        return np.array([tokens], dtype=self.ids_dtype)

    def greedy(self, lane: Lane, token: int, eos: int, limit: int, trace: Trace) -> tuple[list[int], str]:
        """Greedy single-step decode from ``lane`` fed ``token``: the generated ids and why it stopped.

        The same calls and argmax as repeated :meth:`feed`, with the loop's own work cut
        to what must happen between calls: one feeds dict kept and refilled in place by
        the outputs, ready-made id arrays, no cache objects. Outputs are identical.
        Stamps ``trace.ended`` when the last token is decided.
        """
        out: list[int] = []
        if limit < 1:
            trace.ended = perf_counter()
            return out, "max_new_tokens"
        if lane.feeds is None:  # the first call goes to another graph or branch
            token = int(lane.feed([token], trace)[-1].argmax())
            if token == eos:
                trace.ended = perf_counter()
                return out, "eos"
            out.append(token)
        session, feeds, past = lane.session, lane.feeds, lane.past
        call, names, label, log = session.call(), lane.names, session.label, trace.log.append
        one, append = self._one, out.append
        stopped = "max_new_tokens"
        while len(out) < limit:
            feeds["input_ids"] = one[token]
            start = perf_counter()  # timed here as TimedSession.run times, less its frame
            got = call(names, feeds, None)
            log((label, start, perf_counter()))
            token = int(got[-1].argmax())  # (1, 1, vocab): the flat argmax is the vocabulary index
            if token == eos:
                stopped = "eos"
                break
            append(token)
            feeds.update(zip(past, got, strict=False))  # logits last: zip stops before them, no slice made
        trace.ended = perf_counter()  # the last token is decided; the lane's caches are freed after the clock
        return out, stopped

    def draft(self, cache: Cache, tokens: list[int], budget: int, eos: int, trace: Trace) -> tuple[list[int], Cache]:
        """A drafter's turn from ``cache``: :meth:`Lane.draft`, returning the drafts and the cache after them."""
        lane = Lane(self, cache)
        drafts = lane.draft(tokens, budget, eos, trace)
        return drafts, lane.cache()

    @staticmethod
    def _shape(session: TimedSession, past_name: str, logits: str, layers: int, meta: dict) -> Shape:
        past = session.inputs[past_name]
        heads, head_dim = past.shape[1], past.shape[3]
        heads = heads if isinstance(heads, int) else meta.get("num_heads")
        head_dim = head_dim if isinstance(head_dim, int) else meta.get("head_dim")
        if not isinstance(heads, int) or not isinstance(head_dim, int):
            raise MeasureError(
                f"{session.path}: {past_name} has symbolic heads/head size {past.shape}; "
                "state num_heads and head_dim in tier.json"
            )
        vocab = session.outputs[logits].shape[-1]
        vocab = vocab if isinstance(vocab, int) else meta.get("vocab_size")
        if not isinstance(vocab, int):
            raise MeasureError(f"{session.path}: logits have a symbolic vocabulary axis; state vocab_size in tier.json")
        return Shape(layers, heads, head_dim, vocab, _DTYPES[past.type])

    def _zeros(self) -> np.ndarray:
        """The empty (length 0) past every decode starts from: made once, shared read-only."""
        zeros = getattr(self, "_empty_past", None)
        if zeros is None:
            s = self.shape
            zeros = self._empty_past = np.zeros((1, s.heads, 0, s.head_dim), dtype=s.kv_dtype)
            zeros.flags.writeable = False
        return zeros


class Lane:
    """One decode's place in one decoder, kept between calls: the with-cache feeds, refilled in place.

    What a speculative round needs (single-step drafting, a batched check, trims)
    without a feeds dict or a :class:`Cache` built per call. The calls, their inputs
    and their order are those of repeated :meth:`Decoder.feed` and :meth:`Cache.trim`;
    only the bookkeeping between calls is cut.
    """

    __slots__ = ("_first", "cross", "decoder", "feeds", "length", "names", "past", "session")

    def __init__(self, decoder: Decoder, cache: Cache) -> None:
        self.decoder = decoder
        self.length = cache.length
        self.cross = cache.cross
        self._first: Cache | None = None
        self.session: TimedSession | None = None
        self.feeds: dict[str, np.ndarray] | None = None
        """None until the first call when that call goes to another graph or branch."""
        self.past: list[str] = []
        self.names: list[str] = []
        """The steady session's outputs asked for presents first and logits last, so the presents refill
        ``feeds`` by a plain ``zip`` with ``past`` (no slice per call); the values are the same."""
        if cache.length == 0 and decoder.first_call_differs:
            self._first = cache
        else:
            self._settle(cache)

    @classmethod
    def settled(cls, decoder: Decoder, session: TimedSession, feeds: dict[str, np.ndarray], cross: Any) -> Lane:
        """A lane at a decode's start whose with-cache feeds are already built (:meth:`Decoder.begin`)."""
        lane = cls.__new__(cls)
        lane.decoder, lane.session, lane.feeds, lane.cross = decoder, session, feeds, cross
        lane.length, lane._first, lane.past, lane.names = 0, None, decoder.steady_past, decoder.steady_names
        return lane

    def _settle(self, cache: Cache) -> None:
        self.session, self.feeds, self.past = self.decoder._steady(cache)
        self.names = self.decoder.steady_names

    def feed(self, tokens: list[int], trace: Trace) -> np.ndarray:
        """One call of ``len(tokens)`` tokens on top of the lane: logits ``(len(tokens), vocab)``."""
        if self.feeds is None:  # straight from the first call's outputs to the with-cache feeds: no Cache made
            decoder = self.decoder
            logits, self.feeds, self.cross = decoder._first_call(self._first, tokens, trace)
            self._first, self.length = None, len(tokens)
            self.session, self.past, self.names = decoder._steady_session(), decoder.steady_past, decoder.steady_names
            return logits
        feeds, session = self.feeds, self.session
        feeds["input_ids"] = self.decoder._ids(tokens)
        call = session.call()
        start = perf_counter()
        out = call(self.names, feeds, None)
        trace.log.append((session.label, start, perf_counter()))
        feeds.update(zip(self.past, out, strict=False))
        self.length += len(tokens)
        return out[-1][0]

    def trim(self, length: int) -> None:
        """Keep the first ``length`` positions, as :meth:`Cache.trim` does (the same contiguous copies)."""
        if length > self.length or length < 0:
            raise ValueError(f"cannot trim a cache of {self.length} positions to {length}")
        if length == self.length:
            return
        feeds = self.feeds
        for p in self.past:  # length < self.length: at least one call was made, so feeds exist
            feeds[p] = np.ascontiguousarray(feeds[p][:, :, :length])
        self.length = length

    def cache(self) -> Cache:
        """The lane as a :class:`Cache` (sharing its arrays)."""
        if self.feeds is None:
            return self._first
        return Cache(tuple([self.feeds[p] for p in self.past]), self.cross, self.length)

    def draft(self, tokens: list[int], budget: int, eos: int, trace: Trace) -> list[int]:
        """A drafter's turn: feed ``tokens`` single-step, then draft greedily until ``budget`` drafts or eos.

        The last draft is not fed. The same calls and argmax as repeated :meth:`Decoder.feed`,
        with the loop's work cut as in :meth:`Decoder.greedy`: ``len(tokens) + len(drafts) - 1`` calls.
        """
        if not tokens or budget < 1:
            raise ValueError("a draft needs at least one token to feed and a budget of at least one")
        if self.feeds is None:
            row, tokens = self.feed(tokens[:1], trace)[-1], tokens[1:]
        feeds, past, one, session = self.feeds, self.past, self.decoder._one, self.session
        call, names, label, log = session.call(), self.names, session.label, trace.log.append
        for token in tokens:
            feeds["input_ids"] = one[token]
            start = perf_counter()
            out = call(names, feeds, None)
            log((label, start, perf_counter()))
            feeds.update(zip(past, out, strict=False))  # logits last: zip stops before them
            row = out[-1]
        self.length += len(tokens)
        drafts: list[int] = []
        while True:
            token = int(row.argmax())
            drafts.append(token)
            if token == eos or len(drafts) == budget:
                return drafts
            feeds["input_ids"] = one[token]
            start = perf_counter()
            out = call(names, feeds, None)
            log((label, start, perf_counter()))
            feeds.update(zip(past, out, strict=False))
            row = out[-1]
            self.length += 1


def _check_layers(found: set[int], path: Path, what: str) -> int:
    if not found:
        raise MeasureError(f"{path}: no {what} inputs found; the engine needs the key/value cache to decode in O(T)")
    if found != set(range(len(found))):
        raise MeasureError(f"{path}: {what} layers are {sorted(found)}; expected 0..{len(found) - 1}")
    return len(found)


class SimpleDecoder(Decoder):
    """``decoder-kv.onnx``: self-attention cache only; encoder states fed every call."""

    layout = "simple"

    def __init__(self, session: TimedSession, meta: dict) -> None:
        _unknown(session, {"input_ids", "encoder_hidden_states", "encoder_attention_mask"}, (_SIMPLE_PAST,), "input")
        _unknown(session, {"logits"}, (_SIMPLE_PRESENT,), "output")
        for need in ("input_ids", "encoder_hidden_states"):
            if need not in session.inputs:
                raise MeasureError(f"{session.path}: expected an input named {need}; found {', '.join(session.inputs)}")
        layers = _check_layers(
            {int(m.group(2)) for n in session.inputs if (m := _SIMPLE_PAST.match(n))},
            session.path,
            "past_key_{i}/past_value_{i}",
        )
        self.session = session
        self.sessions = (session,)
        self.past_names = [f"past_{kind}_{i}" for i in range(layers) for kind in ("key", "value")]
        session.output_names = ["logits"] + [f"present_{kind}_{i}" for i in range(layers) for kind in ("key", "value")]
        missing = [n for n in self.past_names + session.output_names if n not in session.inputs | session.outputs]
        if missing:
            raise MeasureError(
                f"{session.path}: missing {missing[0]}; found {', '.join(session.inputs | session.outputs)}"
            )
        self.with_mask = "encoder_attention_mask" in session.inputs
        self.ids_dtype = _DTYPES[session.inputs["input_ids"].type]
        self._one = _TokenIds(self.ids_dtype)
        self.shape = self._shape(session, "past_key_0", "logits", layers, meta)
        self.steady_past, self.steady_names = self.past_names, self._presents_first(session)
        self._kv0 = (self._zeros(),) * (2 * layers)
        """The empty cache's self part, made once at load: every decode starts from it."""
        self._feeds0 = dict(zip(self.past_names, self._kv0, strict=True))
        """Its feeds, copied by :meth:`begin` for each decode."""

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> Cache:
        fixed = {"encoder_hidden_states": hidden}
        if self.with_mask:
            fixed["encoder_attention_mask"] = mask
        return Cache(self._kv0, fixed, 0)

    def begin(self, hidden: np.ndarray, mask: np.ndarray) -> Lane:
        feeds = self._feeds0.copy()  # the empty past, made once; then this row's encoder outputs
        feeds["encoder_hidden_states"] = hidden
        cross = {"encoder_hidden_states": hidden}
        if self.with_mask:
            feeds["encoder_attention_mask"] = cross["encoder_attention_mask"] = mask
        return Lane.settled(self, self.session, feeds, cross)

    def feed(self, cache: Cache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, Cache]:
        feeds = dict(zip(self.past_names, cache.self_kv, strict=True))
        feeds["input_ids"] = self._ids(tokens)
        feeds.update(cache.cross)
        out = self.session.run(feeds, trace)
        return out[0][0], Cache(tuple(out[1:]), cache.cross, cache.length + len(tokens))

    def _steady(self, cache: Cache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
        if cache.self_kv is self._kv0:  # a decode's start: copy the ready feeds (the same arrays)
            feeds = self._feeds0.copy()
        else:
            feeds = dict(zip(self.past_names, cache.self_kv, strict=True))
        feeds.update(cache.cross)
        return self.session, feeds, self.past_names

    def describe(self) -> dict[str, Any]:
        return super().describe() | {
            "past": self.past_names,
            "present": self.session.output_names[1:],
            "with_mask": self.with_mask,
        }


class _OptimumNames:
    """optimum's naming: self (``decoder``) and cross (``encoder``) parts per layer."""

    def __init__(self, layers: int) -> None:
        self.layers = layers
        self.past_self = [f"past_key_values.{i}.decoder.{k}" for i in range(layers) for k in ("key", "value")]
        self.past_cross = [f"past_key_values.{i}.encoder.{k}" for i in range(layers) for k in ("key", "value")]
        self.present_self = [f"present.{i}.decoder.{k}" for i in range(layers) for k in ("key", "value")]
        self.present_cross = [f"present.{i}.encoder.{k}" for i in range(layers) for k in ("key", "value")]
        self.past_all = [*self.past_self, *self.past_cross]
        """Every past input, self then cross: what a first call's presents (in that order) become."""


def _optimum_layers(session: TimedSession, source: str) -> int:
    names = session.inputs if source == "inputs" else session.outputs
    pattern = _OPT_PAST if source == "inputs" else _OPT_PRESENT
    return _check_layers(
        {int(m.group(1)) for n in names if (m := pattern.match(n))},
        session.path,
        "past_key_values.{i}.*" if source == "inputs" else "present.{i}.*",
    )


_OPT_INPUTS = {"input_ids", "encoder_attention_mask", "encoder_hidden_states", "use_cache_branch"}


class OptimumDecoder(Decoder):
    """``decoder_model.onnx`` for the first call, ``decoder_with_past_model.onnx`` after."""

    layout = "optimum"
    first_call_differs = True

    def __init__(self, first: TimedSession, with_past: TimedSession, meta: dict) -> None:
        for s in (first, with_past):
            _unknown(s, _OPT_INPUTS, (_OPT_PAST,), "input")
            _unknown(s, {"logits"}, (_OPT_PRESENT,), "output")
        layers = _optimum_layers(with_past, "inputs")
        self.names = n = _OptimumNames(layers)
        first.output_names = ["logits", *n.present_self, *n.present_cross]
        with_past.output_names = ["logits", *n.present_self]
        for s in (first, with_past):
            missing = [x for x in s.output_names if x not in s.outputs]
            if missing:
                raise MeasureError(f"{s.path}: missing output {missing[0]}; found {', '.join(s.outputs)}")
        self.first, self.with_past = first, with_past
        self.sessions = (first, with_past)
        self.ids_dtype = _DTYPES[first.inputs["input_ids"].type]
        self._one = _TokenIds(self.ids_dtype)
        self.shape = self._shape(with_past, n.past_self[0], "logits", layers, meta)
        self.steady_past, self.steady_names = n.past_self, self._presents_first(with_past)

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> Cache:
        return Cache((), (hidden, mask), 0)

    def feed(self, cache: Cache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, Cache]:
        n = self.names
        ids = self._ids(tokens)
        if cache.length == 0:
            hidden, mask = cache.cross[0], cache.cross[1]
            out = self.first.run(
                {"input_ids": ids, "encoder_attention_mask": mask, "encoder_hidden_states": hidden}, trace
            )
            half = 1 + len(n.present_self)
            return out[0][0], Cache(tuple(out[1:half]), (*out[half:], mask), len(tokens))
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:-1], strict=True))
        feeds["input_ids"] = ids
        feeds["encoder_attention_mask"] = cache.cross[-1]
        out = self.with_past.run(feeds, trace)
        return out[0][0], Cache(tuple(out[1:]), cache.cross, cache.length + len(tokens))

    def _steady(self, cache: Cache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
        n = self.names
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:-1], strict=True))
        feeds["encoder_attention_mask"] = cache.cross[-1]
        return self.with_past, feeds, n.past_self

    def _first_call(
        self, first: Cache, tokens: list[int], trace: Trace
    ) -> tuple[np.ndarray, dict[str, np.ndarray], Any]:
        hidden, mask = first.cross
        out = self.first.run(
            {"input_ids": self._ids(tokens), "encoder_attention_mask": mask, "encoder_hidden_states": hidden}, trace
        )
        presents = out[1:]
        feeds = dict(zip(self.names.past_all, presents, strict=True))
        feeds["encoder_attention_mask"] = mask
        return out[0][0], feeds, (*presents[len(self.names.past_self) :], mask)


class MergedDecoder(Decoder):
    """``decoder_model_merged.onnx``: ``use_cache_branch`` false on the first call, true after."""

    layout = "optimum-merged"
    first_call_differs = True

    def __init__(self, session: TimedSession, meta: dict) -> None:
        _unknown(session, _OPT_INPUTS, (_OPT_PAST,), "input")
        _unknown(session, {"logits"}, (_OPT_PRESENT,), "output")
        if "use_cache_branch" not in session.inputs:
            raise MeasureError(
                f"{session.path}: a merged decoder needs a use_cache_branch input; found {', '.join(session.inputs)}"
            )
        layers = _optimum_layers(session, "inputs")
        self.names = n = _OptimumNames(layers)
        session.output_names = ["logits", *n.present_self, *n.present_cross]
        self.session = session
        self.sessions = (session,)
        self.ids_dtype = _DTYPES[session.inputs["input_ids"].type]
        self._one = _TokenIds(self.ids_dtype)
        self.shape = self._shape(session, n.past_self[0], "logits", layers, meta)
        self._no_cache = np.array([False])
        self._cache = np.array([True])
        self._with_cache = TimedSession(session.session, session.label, session.path, session.after_run)
        self._with_cache.output_names = ["logits", *n.present_self]
        """The same session asked only for what a with-cache call yields that is new: the cross part
        stays the first call's, so its pass-through outputs are not fetched."""
        self.steady_past, self.steady_names = n.past_self, self._presents_first(self._with_cache)
        self._feeds0 = dict.fromkeys(n.past_all, self._zeros())
        self._feeds0["use_cache_branch"] = self._no_cache
        """The first call's fixed feeds, made once: the empty past (every decode starts from it), branch off."""

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> Cache:
        zero = self._zeros()
        return Cache((zero,) * (2 * self.shape.layers), ((zero,) * (2 * self.shape.layers)) + (hidden, mask), 0)

    def feed(self, cache: Cache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, Cache]:
        n = self.names
        layers2 = 2 * n.layers
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:layers2], strict=True))
        feeds["input_ids"] = self._ids(tokens)
        feeds["encoder_hidden_states"] = cache.cross[layers2]
        feeds["encoder_attention_mask"] = cache.cross[layers2 + 1]
        feeds["use_cache_branch"] = self._cache if cache.length else self._no_cache
        out = (self._with_cached() if cache.length else self.session).run(feeds, trace)
        half = 1 + layers2
        cross = cache.cross if cache.length else (*out[half:], *cache.cross[layers2:])
        return out[0][0], Cache(tuple(out[1:half]), cross, cache.length + len(tokens))

    def _steady(self, cache: Cache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
        n = self.names
        layers2 = 2 * n.layers
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:layers2], strict=True))
        feeds["encoder_hidden_states"] = cache.cross[layers2]
        feeds["encoder_attention_mask"] = cache.cross[layers2 + 1]
        feeds["use_cache_branch"] = self._cache
        return self._with_cached(), feeds, n.past_self

    def _first_call(
        self, first: Cache, tokens: list[int], trace: Trace
    ) -> tuple[np.ndarray, dict[str, np.ndarray], Any]:
        layers2 = 2 * self.names.layers
        hidden, mask = first.cross[layers2], first.cross[layers2 + 1]
        feeds = self._feeds0.copy()  # a length-0 cache is always the empty one
        feeds["input_ids"] = self._ids(tokens)
        feeds["encoder_hidden_states"] = hidden
        feeds["encoder_attention_mask"] = mask
        out = self.session.run(feeds, trace)
        presents = out[1:]
        feeds.update(zip(self.names.past_all, presents, strict=True))  # the same dict, now the with-cache feeds
        feeds["use_cache_branch"] = self._cache
        return out[0][0], feeds, (*presents[layers2:], hidden, mask)

    def _steady_session(self) -> TimedSession:
        return self._with_cached()

    def _with_cached(self) -> TimedSession:
        self._with_cache.recorded = self.session.recorded  # calibration records every call of the graph
        self._with_cache.call_like(self.session)
        return self._with_cache


def open_graphs(
    folder: Path, layout: str, config: SessionConfig, label: str, meta: dict, after_run: AfterRun | None = None
) -> tuple[Encoder, Decoder]:
    """Sessions for one tier, checked against what the engine understands; ``after_run`` hooks every call."""
    files = LAYOUT_FILES[layout]
    sessions = [_open(folder, f, config, label, after_run) for f in files]
    encoder = Encoder(sessions[0])
    if layout == "simple":
        decoder: Decoder = SimpleDecoder(sessions[1], meta)
    elif layout == "optimum":
        decoder = OptimumDecoder(sessions[1], sessions[2], meta)
    else:
        decoder = MergedDecoder(sessions[1], meta)
    return encoder, decoder
