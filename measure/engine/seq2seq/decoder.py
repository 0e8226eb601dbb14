"""What every layout shares: the encoder, the decoder's common part and a decode's :class:`Lane`.

Every decoder call takes *k* new tokens on top of a cache and returns logits for
all *k* positions plus the grown cache: k = 1 is single-step framing, k > 1 the
batched framing a speculative verifier uses. The per-token loops
(:meth:`Decoder.greedy`, :meth:`Lane.feed`, :meth:`Lane.draft`) live here, once for
all layouts; :mod:`measure.engine.seq2seq.layouts` says how each layout is fed.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Any

import numpy as np

from measure.engine.seq2seq.graphs import check_names
from measure.engine.seq2seq.kvcache import KVCache
from measure.engine.session import DTYPES, TimedSession, Trace
from measure.errors import MeasureError


@dataclass(frozen=True)
class Shape:
    """What the graphs say about the model."""

    layers: int
    heads: int
    head_dim: int
    vocab_size: int
    kv_dtype: type


class Encoder:
    """The encoder graph: source ids in, hidden states out."""

    def __init__(self, session: TimedSession) -> None:
        check_names(session, {"input_ids", "attention_mask"}, (), "input")
        if "input_ids" not in session.inputs:
            raise MeasureError(f"{session.path}: expected an input named input_ids; found {', '.join(session.inputs)}")
        self.session = session
        self.ids_dtype = DTYPES[session.inputs["input_ids"].type]
        self.mask_dtype = DTYPES[session.inputs["attention_mask"].type] if "attention_mask" in session.inputs else None
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
        arr: np.ndarray = np.array([ids], dtype=self.ids_dtype)
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


class TokenIds(dict[int, np.ndarray]):
    """One read-only ``(1, 1)`` id array per token, made on first use and reused.

    A single-step call then feeds a ready array instead of building one between
    ``session.run`` calls, where every allocation is harness overhead.
    """

    def __init__(self, dtype: type) -> None:
        super().__init__()
        self.dtype = dtype

    def __missing__(self, token: int) -> np.ndarray:
        arr: np.ndarray = np.array([[token]], dtype=self.dtype)
        arr.flags.writeable = False
        self[token] = arr
        return arr


class Decoder:
    """Common part of the three decoder layouts: shape discovery and the empty cache."""

    layout: str
    shape: Shape
    ids_dtype: type
    sessions: tuple[TimedSession, ...]
    _one: TokenIds
    first_call_differs: bool = False
    """The first call (empty cache) uses another graph or branch than every later one."""
    steady_past: list[str]
    """The past inputs a with-cache call's presents refill, in output order."""
    steady_names: list[str]
    """The with-cache session's outputs as a :class:`Lane` asks for them: presents first, logits last."""

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> KVCache:
        raise NotImplementedError

    def feed(self, cache: KVCache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, KVCache]:
        raise NotImplementedError

    def _steady(self, cache: KVCache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
        """The with-cache session, its feeds for ``cache`` (a fresh dict) and the past names its outputs refill."""
        raise NotImplementedError

    def begin(self, hidden: np.ndarray, mask: np.ndarray) -> Lane:
        """A lane at a decode's start, from the encoder's outputs: :meth:`empty` then :class:`Lane`.

        The layouts whose first call is a with-cache call override it to build the lane's
        feeds straight from ones made once per decoder: this runs inside the timed region.
        """
        return Lane(self, self.empty(hidden, mask))

    def _first_call(
        self, first: KVCache, tokens: list[int], trace: Trace
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
        assert session is not None and feeds is not None, "a lane settles on its first call"
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

    def draft(
        self, cache: KVCache, tokens: list[int], budget: int, eos: int, trace: Trace
    ) -> tuple[list[int], KVCache]:
        """A drafter's turn from ``cache``: :meth:`Lane.draft`, returning the drafts and the cache after them."""
        lane = Lane(self, cache)
        drafts = lane.draft(tokens, budget, eos, trace)
        return drafts, lane.cache()

    @staticmethod
    def _shape(session: TimedSession, past_name: str, logits: str, layers: int, meta: dict[str, Any]) -> Shape:
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
        return Shape(layers, heads, head_dim, vocab, DTYPES[past.type])

    _empty_past: np.ndarray

    def _zeros(self) -> np.ndarray:
        """The empty (length 0) past every decode starts from: made once, shared read-only."""
        zeros: np.ndarray | None = getattr(self, "_empty_past", None)
        if zeros is None:
            s = self.shape
            zeros = self._empty_past = np.zeros((1, s.heads, 0, s.head_dim), dtype=s.kv_dtype)
            zeros.flags.writeable = False
        return zeros


class Lane:
    """One decode's place in one decoder, kept between calls: the with-cache feeds, refilled in place.

    What a speculative round needs (single-step drafting, a batched check, trims)
    without a feeds dict or a :class:`KVCache` built per call. The calls, their inputs
    and their order are those of repeated :meth:`Decoder.feed` and :meth:`KVCache.trim`;
    only the bookkeeping between calls is cut.
    """

    __slots__ = ("_first", "cross", "decoder", "feeds", "length", "names", "past", "session")

    def __init__(self, decoder: Decoder, cache: KVCache) -> None:
        self.decoder = decoder
        self.length = cache.length
        self.cross = cache.cross
        self._first: KVCache | None = None
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

    def _settle(self, cache: KVCache) -> None:
        self.session, self.feeds, self.past = self.decoder._steady(cache)
        self.names = self.decoder.steady_names

    def feed(self, tokens: list[int], trace: Trace) -> np.ndarray:
        """One call of ``len(tokens)`` tokens on top of the lane: logits ``(len(tokens), vocab)``."""
        feeds, session = self.feeds, self.session
        if feeds is None or session is None:  # the first call's outputs become the feeds: no KVCache made
            decoder, first = self.decoder, self._first
            assert first is not None, "an unsettled lane holds the empty cache it began with"
            logits, self.feeds, self.cross = decoder._first_call(first, tokens, trace)
            self._first, self.length = None, len(tokens)
            self.session, self.past, self.names = decoder._steady_session(), decoder.steady_past, decoder.steady_names
            return logits
        feeds["input_ids"] = self.decoder._ids(tokens)
        call = session.call()
        start = perf_counter()
        out = call(self.names, feeds, None)
        trace.log.append((session.label, start, perf_counter()))
        feeds.update(zip(self.past, out, strict=False))
        self.length += len(tokens)
        last: np.ndarray = out[-1][0]
        return last

    def trim(self, length: int) -> None:
        """Keep the first ``length`` positions, as :meth:`KVCache.trim` does (the same contiguous copies)."""
        if length > self.length or length < 0:
            raise ValueError(f"cannot trim a cache of {self.length} positions to {length}")
        if length == self.length:
            return
        feeds = self.feeds
        assert feeds is not None, "length < self.length: at least one call was made, so feeds exist"
        for p in self.past:
            feeds[p] = np.ascontiguousarray(feeds[p][:, :, :length])
        self.length = length

    def cache(self) -> KVCache:
        """The lane as a :class:`KVCache` (sharing its arrays)."""
        feeds = self.feeds
        if feeds is None:
            assert self._first is not None, "an unsettled lane holds the empty cache it began with"
            return self._first
        return KVCache(tuple([feeds[p] for p in self.past]), self.cross, self.length)

    def kv(self) -> tuple[np.ndarray, ...]:
        """The self-attention key/value per layer as it stands (the cross part stays out), sharing its arrays."""
        return self.cache().self_kv

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
        assert session is not None and feeds is not None, "a lane settles on its first call"
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
