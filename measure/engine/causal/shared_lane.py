"""A genai folder's decode in one shared cache buffer, as onnxruntime-genai holds it: the ``SharedLane``.

A genai graph built with ``past_present_share_buffer`` takes its past and writes its
present in one ``(1, heads, max_length, head_dim)`` buffer per layer and key/value
(GroupQueryAttention reads the past length from ``attention_mask``). Bound once with
onnxruntime's IOBinding, present onto past, the cache never moves: a decode step
writes one position in place, and the loop between calls only writes the next token
into a bound array and reads the bound logits. One binding per total length is made
once per tier (a binding fixes the mask's shape), so a step rebinds nothing.

The buffers belong to the tier (:class:`SharedCache`, made on first use) and are lent to
one live lane at a time (:func:`measure.engine.causal.buffers.lend`): a lane still held when another begins keeps its
own, and the new one gets a second set.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

import numpy as np
import onnxruntime as ort

from measure.engine.causal.buffers import BufferedLane, StepArrays
from measure.engine.causal.layouts import CausalGraphs
from measure.engine.session import Trace


class SharedCache(StepArrays):
    """One tier's cache buffers at ``max_length``, the bound step arrays, and a step binding per total length
    (past n - 1 + this one)."""

    def __init__(self, graphs: CausalGraphs, max_length: int) -> None:
        s = graphs.shape
        self.buffers: list[np.ndarray] = [
            np.zeros((1, s.heads, max_length, s.head_dim), dtype=s.kv_dtype) for _ in graphs.past
        ]
        super().__init__(graphs, max_length)
        self.block = self.bind(1)
        """The binding a :meth:`SharedLane.feed` of any length rebinds ids, mask and logits in (the cache stays)."""

    def bind(self, total: int) -> ort.IOBinding:
        """A binding with the cache (present onto past) and the mask for ``total`` positions; ids, logits to add."""
        io = self.graphs.steady.session.io_binding()
        for past, present, buf in zip(self.graphs.past, self.graphs.names, self.buffers, strict=False):
            io.bind_input(past, "cpu", 0, buf.dtype, buf.shape, buf.ctypes.data)
            io.bind_output(present, "cpu", 0, buf.dtype, buf.shape, buf.ctypes.data)
        io.bind_input("attention_mask", "cpu", 0, self.mask.dtype, (1, total), self.mask.ctypes.data)
        return io

    def _step(self, total: int) -> Any:
        io = self.bind(total)
        io.bind_input("input_ids", "cpu", 0, self.token.dtype, self.token.shape, self.token.ctypes.data)
        io.bind_output("logits", "cpu", 0, self.logits.dtype, self.logits.shape, self.logits.ctypes.data)
        return io._iobinding


def shares_buffer(graphs: CausalGraphs) -> bool:
    """The genai config shares past and present (and no feeds are being recorded, which needs plain feeds)."""
    genai = graphs.genai
    return genai is not None and genai.share_buffer and graphs.steady.recorded is None


class SharedLane(BufferedLane):
    """The cache after ``length`` fed positions, in the tier's shared buffers (see :class:`CausalLane`)."""

    __slots__ = ()

    def __init__(self, graphs: CausalGraphs) -> None:
        super().__init__(graphs, SharedCache)

    def limit_field(self) -> str:
        genai = self.graphs.genai
        assert genai is not None, "buffers are shared only as an onnxruntime-genai config asks"
        return f"{genai.path}: field {genai.max_length_field}"

    def feed(self, tokens: list[int], trace: Trace) -> np.ndarray:
        """One call of ``len(tokens)`` tokens on top of the cache: logits ``(len(tokens), vocab)``, cache grown."""
        k, cache = len(tokens), self.cache
        self._room(k)
        io = cache.block
        ids = self.graphs.ids(tokens)
        logits = np.empty((1, k, cache.logits.shape[-1]), dtype=cache.logits_dtype)
        io.bind_input("attention_mask", "cpu", 0, cache.mask.dtype, (1, self.length + k), cache.mask.ctypes.data)
        io.bind_input("input_ids", "cpu", 0, ids.dtype, ids.shape, ids.ctypes.data)
        io.bind_output("logits", "cpu", 0, logits.dtype, logits.shape, logits.ctypes.data)
        after = self.session.after_run
        start = perf_counter()
        cache.run(io._iobinding, cache.options)
        if after is not None:
            after(perf_counter() - start)
        trace.log.append((self.session.label, start, perf_counter()))
        self.length += k
        row: np.ndarray = logits[0]
        return row

    def kv(self) -> tuple[np.ndarray, ...]:
        """The cache as it stands (see :meth:`CausalLane.kv`), copied: the buffers go to the next lane once this
        one is gone."""
        return tuple(buf[:, :, : self.length].copy() for buf in self.cache.buffers)

    def trim(self, length: int) -> None:
        """Keep the first ``length`` positions: the mask decides what is read, the next call overwrites the rest."""
        if length > self.length or length < 0:
            raise ValueError(f"cannot trim a cache of {self.length} positions to {length}")
        self.length = length

    def greedy(self, token: int, eos: int, limit: int, trace: Trace) -> tuple[list[int], str]:
        """As :meth:`CausalLane.greedy`: one bound call per token, nothing built or bound between calls."""
        out = [token]
        cache, label, log, append = self.cache, self.session.label, trace.log.append, out.append
        run, options, steps, slot, logits = cache.run, cache.options, cache.steps, cache.token, cache.logits
        after = self.session.after_run
        length = self.length
        stopped = "max_new_tokens"
        while len(out) < limit:
            if length >= cache.max_length:
                self.length = length
                self._room(1)
            slot[0, 0] = token
            binding = steps[length + 1]
            start = perf_counter()  # timed here as TimedSession.run times, less its frame
            run(binding, options)
            if after is not None:
                after(perf_counter() - start)
            log((label, start, perf_counter()))
            length += 1
            token = int(logits.argmax())
            if token == eos:
                stopped = "eos"
                break
            append(token)
        trace.ended = perf_counter()
        self.length = length
        return out, stopped
