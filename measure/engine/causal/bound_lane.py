"""An optimum ``causal`` tier's decode with its cache in two buffers bound once: the ``BoundLane``.

optimum's graph returns each present as past + the new positions (a new, longer
tensor), so past and present cannot share memory as a genai graph's do. They can
take turns: two buffers per layer and key/value, each ``max_length`` positions
long, the past read from one and the present written into the other, which holds
the past of the next call. A binding fixes the shapes, so one per (total length,
buffer holding the past) is made once per tier; a decode step then binds nothing
and allocates nothing (as onnxruntime-genai's compiled loop runs the same graph):
the loop writes the token and its position into bound arrays and reads the bound
logits. The buffers belong to the tier, lent to one live lane at a time, as for
:class:`measure.engine.causal.shared_lane.SharedLane`.
"""

from __future__ import annotations

from time import perf_counter
from typing import Any

import numpy as np
import onnxruntime as ort

from measure.engine.causal.buffers import BufferedLane, StepArrays
from measure.engine.causal.layouts import CausalGraphs
from measure.engine.session import Trace


class BoundCache(StepArrays):
    """One tier's two cache buffer sets, the bound step arrays and a step binding per (total length, past side):
    key ``(n, side)``, one token at total length n with the past in side ``side``."""

    def __init__(self, graphs: CausalGraphs, max_length: int) -> None:
        s = graphs.shape
        size = s.heads * max_length * s.head_dim
        self.sides: tuple[list[np.ndarray], ...] = tuple(
            [np.zeros(size, dtype=s.kv_dtype) for _ in graphs.past] for _ in range(2)
        )
        self.position: np.ndarray = np.zeros((1, 1), dtype=graphs.pos_dtype)
        super().__init__(graphs, max_length)

    def view(self, side: int, layer: int, length: int) -> np.ndarray:
        """Buffer ``layer`` of ``side`` as the contiguous ``(1, heads, length, head_dim)`` tensor it holds."""
        s = self.graphs.shape
        return self.sides[side][layer][: s.heads * length * s.head_dim].reshape(1, s.heads, length, s.head_dim)

    def bind(self, past: int, total: int, side: int) -> ort.IOBinding:
        """The cache (past from ``side``, present into the other) and the mask; ids, positions and logits to add."""
        g, s = self.graphs, self.graphs.shape
        io = g.steady.session.io_binding()
        for i, (name, present) in enumerate(zip(g.past, g.names, strict=False)):
            src, dst = self.sides[side][i], self.sides[1 - side][i]
            io.bind_input(name, "cpu", 0, src.dtype, (1, s.heads, past, s.head_dim), src.ctypes.data)
            io.bind_output(present, "cpu", 0, dst.dtype, (1, s.heads, total, s.head_dim), dst.ctypes.data)
        io.bind_input("attention_mask", "cpu", 0, self.mask.dtype, (1, total), self.mask.ctypes.data)
        return io

    def _step(self, key: tuple[int, int]) -> Any:
        total, side = key
        io = self.bind(total - 1, total, side)
        io.bind_input("input_ids", "cpu", 0, self.token.dtype, (1, 1), self.token.ctypes.data)
        if self.graphs.positions:
            io.bind_input("position_ids", "cpu", 0, self.position.dtype, (1, 1), self.position.ctypes.data)
        io.bind_output("logits", "cpu", 0, self.logits.dtype, self.logits.shape, self.logits.ctypes.data)
        return io._iobinding


def takes_bound_buffers(graphs: CausalGraphs) -> bool:
    """One optimum graph with a known context, and no feeds being recorded (which needs plain feeds)."""
    return graphs.layout == "causal" and not graphs.branch and bool(graphs.context) and graphs.steady.recorded is None


class BoundLane(BufferedLane):
    """The cache after ``length`` fed positions, held in ``cache.sides[side]`` (see :class:`CausalLane`)."""

    __slots__ = ("side",)

    def __init__(self, graphs: CausalGraphs) -> None:
        super().__init__(graphs, BoundCache)
        self.side = 0

    def limit_field(self) -> str:
        return f"{self.graphs.first.path.parent}: field max_position_embeddings"

    def feed(self, tokens: list[int], trace: Trace) -> np.ndarray:
        """One call of ``len(tokens)`` tokens on top of the cache: logits ``(len(tokens), vocab)``, cache grown.

        A plain call (the prefill, a verification, a framing block: shapes no binding fixes), the past fed as
        views of its side and the presents copied into the other after the call (outside its timing)."""
        k, c, g, length = len(tokens), self.cache, self.graphs, self.length
        self._room(k)
        feeds = {"input_ids": g.ids(tokens), "attention_mask": g.masks[length + k]}
        if g.positions:
            feeds["position_ids"] = g.steps[length] if k == 1 else g.spans[length, k]
        for i, name in enumerate(g.past):
            feeds[name] = c.view(self.side, i, length)
        call = self.session.call()
        start = perf_counter()
        out = call(g.names, feeds, None)
        trace.log.append((self.session.label, start, perf_counter()))
        for i, present in enumerate(out[:-1]):
            c.view(1 - self.side, i, length + k)[...] = present
        self.length, self.side = length + k, 1 - self.side
        row: np.ndarray = out[-1][0]
        return row

    def kv(self) -> tuple[np.ndarray, ...]:
        """The cache as it stands (see :meth:`CausalLane.kv`), copied: the buffers go to the next lane once this
        one is gone."""
        return tuple(self.cache.view(self.side, i, self.length).copy() for i in range(len(self.graphs.past)))

    def trim(self, length: int) -> None:
        """Keep the first ``length`` positions: copied into the other side at the shorter shape (a contiguous
        tensor's layout depends on its length)."""
        if length > self.length or length < 0:
            raise ValueError(f"cannot trim a cache of {self.length} positions to {length}")
        if length in (self.length, 0):
            self.length = length
            return
        c = self.cache
        for i in range(len(self.graphs.past)):
            c.view(1 - self.side, i, length)[...] = c.view(self.side, i, self.length)[:, :, :length]
        self.length, self.side = length, 1 - self.side

    def greedy(self, token: int, eos: int, limit: int, trace: Trace) -> tuple[list[int], str]:
        """As :meth:`CausalLane.greedy`: one bound call per token, nothing built or bound between calls."""
        out = [token]
        c, label, log, append = self.cache, self.session.label, trace.log.append, out.append
        run, options, steps, slot, place, logits = c.run, c.options, c.steps, c.token, c.position, c.logits
        after = self.session.after_run
        length, side = self.length, self.side
        stopped = "max_new_tokens"
        while len(out) < limit:
            if length >= c.max_length:
                self.length, self.side = length, side
                self._room(1)
            slot[0, 0] = token
            place[0, 0] = length
            binding = steps[length + 1, side]
            start = perf_counter()  # timed here as TimedSession.run times, less its frame
            run(binding, options)
            if after is not None:
                after(perf_counter() - start)
            log((label, start, perf_counter()))
            length, side = length + 1, 1 - side
            token = int(logits.argmax())
            if token == eos:
                stopped = "eos"
                break
            append(token)
        trace.ended = perf_counter()
        self.length, self.side = length, side
        return out, stopped
