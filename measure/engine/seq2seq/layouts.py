"""The three decoder layouts (simple, optimum, optimum-merged): how each is checked, fed and called.

Each subclass of :class:`~measure.engine.seq2seq.decoder.Decoder` maps its graphs' names
(:mod:`measure.engine.seq2seq.graphs`) onto the common calls; :func:`open_graphs` opens a
tier's sessions and picks the layout's class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.seq2seq.decoder import Decoder, Encoder, Lane, TokenIds
from measure.engine.seq2seq.graphs import (
    LAYOUT_FILES,
    OPT_PAST,
    OPT_PRESENT,
    SIMPLE_PAST,
    SIMPLE_PRESENT,
    check_layers,
    check_names,
)
from measure.engine.seq2seq.kvcache import KVCache
from measure.engine.session import DTYPES, AfterRun, SessionConfig, TimedSession, Trace, open_session
from measure.errors import MeasureError


def _open(folder: Path, file: str, config: SessionConfig, label: str, after_run: AfterRun | None) -> TimedSession:
    path = folder / file
    return TimedSession(open_session(config, path), f"{label}.{file.removesuffix('.onnx')}", path, after_run)


class SimpleDecoder(Decoder):
    """``decoder-kv.onnx``: self-attention cache only; encoder states fed every call."""

    layout = "simple"

    def __init__(self, session: TimedSession, meta: dict[str, Any]) -> None:
        check_names(session, {"input_ids", "encoder_hidden_states", "encoder_attention_mask"}, (SIMPLE_PAST,), "input")
        check_names(session, {"logits"}, (SIMPLE_PRESENT,), "output")
        for need in ("input_ids", "encoder_hidden_states"):
            if need not in session.inputs:
                raise MeasureError(f"{session.path}: expected an input named {need}; found {', '.join(session.inputs)}")
        layers = check_layers(
            {int(m.group(2)) for n in session.inputs if (m := SIMPLE_PAST.match(n))},
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
        self.ids_dtype = DTYPES[session.inputs["input_ids"].type]
        self._one = TokenIds(self.ids_dtype)
        self.shape = self._shape(session, "past_key_0", "logits", layers, meta)
        self.steady_past, self.steady_names = self.past_names, self._presents_first(session)
        self._kv0 = (self._zeros(),) * (2 * layers)
        """The empty cache's self part, made once at load: every decode starts from it."""
        self._feeds0 = dict(zip(self.past_names, self._kv0, strict=True))
        """Its feeds, copied by :meth:`begin` for each decode."""

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> KVCache:
        fixed = {"encoder_hidden_states": hidden}
        if self.with_mask:
            fixed["encoder_attention_mask"] = mask
        return KVCache(self._kv0, fixed, 0)

    def begin(self, hidden: np.ndarray, mask: np.ndarray) -> Lane:
        feeds = self._feeds0.copy()  # the empty past, made once; then this row's encoder outputs
        feeds["encoder_hidden_states"] = hidden
        cross = {"encoder_hidden_states": hidden}
        if self.with_mask:
            feeds["encoder_attention_mask"] = cross["encoder_attention_mask"] = mask
        return Lane.settled(self, self.session, feeds, cross)

    def feed(self, cache: KVCache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, KVCache]:
        feeds = dict(zip(self.past_names, cache.self_kv, strict=True))
        feeds["input_ids"] = self._ids(tokens)
        feeds.update(cache.cross)
        out = self.session.run(feeds, trace)
        return out[0][0], KVCache(tuple(out[1:]), cache.cross, cache.length + len(tokens))

    def _steady(self, cache: KVCache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
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
    pattern = OPT_PAST if source == "inputs" else OPT_PRESENT
    return check_layers(
        {int(m.group(1)) for n in names if (m := pattern.match(n))},
        session.path,
        "past_key_values.{i}.*" if source == "inputs" else "present.{i}.*",
    )


_OPT_INPUTS = {"input_ids", "encoder_attention_mask", "encoder_hidden_states", "use_cache_branch"}


class OptimumDecoder(Decoder):
    """``decoder_model.onnx`` for the first call, ``decoder_with_past_model.onnx`` after."""

    layout = "optimum"
    first_call_differs = True

    def __init__(self, first: TimedSession, with_past: TimedSession, meta: dict[str, Any]) -> None:
        for s in (first, with_past):
            check_names(s, _OPT_INPUTS, (OPT_PAST,), "input")
            check_names(s, {"logits"}, (OPT_PRESENT,), "output")
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
        self.ids_dtype = DTYPES[first.inputs["input_ids"].type]
        self._one = TokenIds(self.ids_dtype)
        self.shape = self._shape(with_past, n.past_self[0], "logits", layers, meta)
        self.steady_past, self.steady_names = n.past_self, self._presents_first(with_past)

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> KVCache:
        return KVCache((), (hidden, mask), 0)

    def feed(self, cache: KVCache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, KVCache]:
        n = self.names
        ids = self._ids(tokens)
        if cache.length == 0:
            hidden, mask = cache.cross[0], cache.cross[1]
            out = self.first.run(
                {"input_ids": ids, "encoder_attention_mask": mask, "encoder_hidden_states": hidden}, trace
            )
            half = 1 + len(n.present_self)
            return out[0][0], KVCache(tuple(out[1:half]), (*out[half:], mask), len(tokens))
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:-1], strict=True))
        feeds["input_ids"] = ids
        feeds["encoder_attention_mask"] = cache.cross[-1]
        out = self.with_past.run(feeds, trace)
        return out[0][0], KVCache(tuple(out[1:]), cache.cross, cache.length + len(tokens))

    def _steady(self, cache: KVCache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
        n = self.names
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:-1], strict=True))
        feeds["encoder_attention_mask"] = cache.cross[-1]
        return self.with_past, feeds, n.past_self

    def _first_call(
        self, first: KVCache, tokens: list[int], trace: Trace
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

    def __init__(self, session: TimedSession, meta: dict[str, Any]) -> None:
        check_names(session, _OPT_INPUTS, (OPT_PAST,), "input")
        check_names(session, {"logits"}, (OPT_PRESENT,), "output")
        if "use_cache_branch" not in session.inputs:
            raise MeasureError(
                f"{session.path}: a merged decoder needs a use_cache_branch input; found {', '.join(session.inputs)}"
            )
        layers = _optimum_layers(session, "inputs")
        self.names = n = _OptimumNames(layers)
        session.output_names = ["logits", *n.present_self, *n.present_cross]
        self.session = session
        self.sessions = (session,)
        self.ids_dtype = DTYPES[session.inputs["input_ids"].type]
        self._one = TokenIds(self.ids_dtype)
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

    def empty(self, hidden: np.ndarray, mask: np.ndarray, trace: Trace | None = None) -> KVCache:
        zero = self._zeros()
        return KVCache((zero,) * (2 * self.shape.layers), ((zero,) * (2 * self.shape.layers)) + (hidden, mask), 0)

    def feed(self, cache: KVCache, tokens: list[int], trace: Trace) -> tuple[np.ndarray, KVCache]:
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
        return out[0][0], KVCache(tuple(out[1:half]), cross, cache.length + len(tokens))

    def _steady(self, cache: KVCache) -> tuple[TimedSession, dict[str, np.ndarray], list[str]]:
        n = self.names
        layers2 = 2 * n.layers
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:layers2], strict=True))
        feeds["encoder_hidden_states"] = cache.cross[layers2]
        feeds["encoder_attention_mask"] = cache.cross[layers2 + 1]
        feeds["use_cache_branch"] = self._cache
        return self._with_cached(), feeds, n.past_self

    def _first_call(
        self, first: KVCache, tokens: list[int], trace: Trace
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
    folder: Path,
    layout: str,
    config: SessionConfig,
    label: str,
    meta: dict[str, Any],
    after_run: AfterRun | None = None,
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
