"""What the two bound-buffer lanes share: the bound step arrays, the buffer sets lent to one live lane at a time,
and the lane's own bookkeeping (:class:`BufferedLane`).

A bound-buffer lane (:mod:`measure.engine.causal.shared_lane`, :mod:`measure.engine.causal.bound_lane`) keeps a
tier's key/value cache in buffers made once at the positions the config states and bound to onnxruntime with
IOBinding, so a decode step binds and allocates nothing. The buffers belong to the tier
(``CausalGraphs.caches``) and are lent to one live lane at a time (:func:`lend`): a lane still held when another
begins keeps its own, and the new one gets a second set.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort

from measure.engine.causal.layouts import CausalGraphs
from measure.engine.session import DTYPES, Trace
from measure.errors import MeasureError


class Bindings(dict[Any, Any]):
    """Step bindings made once per key (a total length, or one with the side) on first use."""

    def __init__(self, make: Any) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Any) -> Any:
        binding = self[key] = self.make(key)
        return binding


class StepArrays:
    """What a bound decode step reads and writes besides the cache (the mask, the token, the logits) and the
    C-level run; each cache kind adds its buffers and makes its step bindings (``_step``) on first use."""

    def __init__(self, graphs: CausalGraphs, max_length: int) -> None:
        session = graphs.steady
        self.graphs, self.max_length = graphs, max_length
        self.mask: np.ndarray = np.ones((1, max_length), dtype=graphs.mask_dtype)
        self.token: np.ndarray = np.zeros((1, 1), dtype=graphs.ids_dtype)
        self.logits_dtype = DTYPES[session.outputs["logits"].type]
        self.logits: np.ndarray = np.zeros((1, 1, graphs.shape.vocab_size), dtype=self.logits_dtype)
        self.run = session.session._sess.run_with_iobinding
        self.options = ort.RunOptions()
        self.steps = Bindings(self._step)
        self.owner: Any = None
        """The lane holding these buffers now (a weak reference), or None: see :func:`lend`."""

    def _step(self, key: Any) -> Any:
        raise NotImplementedError


def lend(graphs: CausalGraphs, lane: Any, make: Callable[[], Any]) -> Any:
    """A buffer set of the tier no live lane holds (made when every one is held), now held by ``lane``."""
    cache = next((c for c in graphs.caches if c.owner is None or c.owner() is None), None)
    if cache is None:
        cache = make()
        graphs.caches.append(cache)
    cache.owner = weakref.ref(lane)
    return cache


def draft_by_feeding(lane: Any, tokens: list[int], budget: int, eos: int, trace: Trace) -> list[int]:
    """A drafter's turn on a lane whose single steps are already lean (:meth:`CausalLane.draft`'s contract): feed
    ``tokens`` in one call, then draft single-step through ``lane.feed`` until ``budget`` drafts or eos."""
    if not tokens or budget < 1:
        raise ValueError("a draft needs at least one token to feed and a budget of at least one")
    row = lane.feed(tokens, trace)[-1]
    drafts: list[int] = []
    while True:
        token = int(row.argmax())
        drafts.append(token)
        if token == eos or len(drafts) == budget:
            return drafts
        row = lane.feed([token], trace)[-1]


class BufferedLane:
    """A lane whose cache lives in buffers lent by its tier: ``cache`` (a :class:`StepArrays` of the lane's kind),
    ``length`` positions fed. Subclasses say which config field bounds the buffers (``limit_field``)."""

    __slots__ = ("__weakref__", "cache", "graphs", "length", "session")

    def __init__(self, graphs: CausalGraphs, make: Callable[[CausalGraphs, int], Any]) -> None:
        self.graphs, self.session = graphs, graphs.steady
        self.cache: Any = lend(graphs, self, lambda: make(graphs, graphs.context or 0))
        self.length = 0

    def limit_field(self) -> str:
        """``file: field NAME`` of the config number the buffers are made at."""
        raise NotImplementedError

    def _room(self, k: int) -> None:
        if self.length + k > self.cache.max_length:
            raise MeasureError(
                f"{self.limit_field()}: {self.cache.max_length} positions, and the decode needs {self.length + k}"
            )

    def draft(self, tokens: list[int], budget: int, eos: int, trace: Trace) -> list[int]:
        """A drafter's turn: the single steps are already lean, so :func:`draft_by_feeding`."""
        return draft_by_feeding(self, tokens, budget, eos, trace)
