"""One decoder-only decode's place in its graphs: the key/value cache carried between calls, refilled in place.

The causal twin of the seq2seq ``Lane``: one feeds dict per decode, filled once
from ready-made arrays (ids per token, masks per length, positions per place)
and refilled by each call's presents, so the loop between ``session.run`` calls
builds nothing but what onnxruntime returns. Trimming cuts the cache in place,
which is how a speculative round drops rejected drafts.

:func:`open_lane` picks a tier's lane: a genai folder whose config shares past and
present decodes in one buffer bound once (:mod:`shared_lane`), an optimum
``causal`` graph in two bound buffers taking turns (:mod:`bound_lane`), both as
onnxruntime-genai's compiled loop holds the cache; the split and merged layouts,
and a session whose feeds are recorded, in this lane.
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

from measure.engine.causal.bound_lane import BoundLane, takes_bound_buffers
from measure.engine.causal.layouts import CausalGraphs
from measure.engine.causal.shared_lane import SharedLane, shares_buffer
from measure.engine.session import Trace

_CACHE_BRANCH = np.array([True])
_CACHE_BRANCH.flags.writeable = False


class CausalLane:
    """The cache after ``length`` fed positions (prompt included), as the next call's feeds."""

    __slots__ = ("feeds", "graphs", "length", "session")

    def __init__(self, graphs: CausalGraphs) -> None:
        self.graphs = graphs
        self.feeds = graphs.start_feeds()
        self.session = graphs.first
        self.length = 0

    def feed(self, tokens: list[int], trace: Trace) -> np.ndarray:
        """One call of ``len(tokens)`` tokens on top of the cache: logits ``(len(tokens), vocab)``, cache grown."""
        g, feeds, length, k = self.graphs, self.feeds, self.length, len(tokens)
        feeds["input_ids"] = g.ids(tokens)
        feeds["attention_mask"] = g.masks[length + k]
        if g.positions:
            feeds["position_ids"] = g.steps[length] if k == 1 else g.spans[length, k]
        session = self.session
        call = session.call()
        start = perf_counter()
        out = call(g.names, feeds, None)
        trace.log.append((session.label, start, perf_counter()))
        feeds.update(zip(g.past, out, strict=False))  # logits last: zip stops before them
        if length == 0:
            self._settle()
        self.length = length + k
        row: np.ndarray = out[-1][0]
        return row

    def _settle(self) -> None:
        """After the first call: every later call goes to the with-past graph or branch."""
        self.session = self.graphs.steady
        if self.graphs.branch:
            self.feeds["use_cache_branch"] = _CACHE_BRANCH

    def kv(self) -> tuple[np.ndarray, ...]:
        """The cache as it stands: key and value per layer, ``(1, heads, length, head_dim)`` each (the framing
        suite's present differences read it; every lane kind answers it)."""
        return tuple(self.feeds[p] for p in self.graphs.past)

    def trim(self, length: int) -> None:
        """Keep the first ``length`` positions (contiguous copies: onnxruntime is fed them next)."""
        if length > self.length or length < 0:
            raise ValueError(f"cannot trim a cache of {self.length} positions to {length}")
        if length == self.length:
            return
        if length == 0:
            self.feeds, self.session, self.length = self.graphs.start_feeds(), self.graphs.first, 0
            return
        feeds = self.feeds
        for p in self.graphs.past:
            feeds[p] = np.ascontiguousarray(feeds[p][:, :, :length])
        self.length = length

    def greedy(self, token: int, eos: int, limit: int, trace: Trace) -> tuple[list[int], str]:
        """Greedy single-step decode after the prefill decided ``token`` (not eos): generated ids, why it stopped.

        ``token`` counts as the first output; at most ``limit`` in all. The same calls and
        argmax as repeated :meth:`feed`, with the loop's own work cut to what must happen
        between calls. Stamps ``trace.ended`` when the last token is decided.
        """
        out = [token]
        g, feeds, session = self.graphs, self.feeds, self.session
        call, names, past, label, log = session.call(), g.names, g.past, session.label, trace.log.append
        one, masks, steps, positions, append = g.one, g.masks, g.steps, g.positions, out.append
        length = self.length
        stopped = "max_new_tokens"
        while len(out) < limit:
            feeds["input_ids"] = one[token]
            feeds["attention_mask"] = masks[length + 1]
            if positions:
                feeds["position_ids"] = steps[length]
            start = perf_counter()  # timed here as TimedSession.run times, less its frame
            got = call(names, feeds, None)
            log((label, start, perf_counter()))
            length += 1
            feeds.update(zip(past, got, strict=False))  # the lane stays whole even after eos
            token = int(got[-1].argmax())  # (1, 1, vocab): the flat argmax is the vocabulary index
            if token == eos:
                stopped = "eos"
                break
            append(token)
        trace.ended = perf_counter()
        self.length = length
        return out, stopped

    def draft(self, tokens: list[int], budget: int, eos: int, trace: Trace) -> list[int]:
        """A drafter's turn: feed ``tokens`` (committed ones it lacks) in one call, then draft greedily
        single-step until ``budget`` drafts or eos. The last draft is not fed: ``len(drafts)`` calls."""
        if not tokens or budget < 1:
            raise ValueError("a draft needs at least one token to feed and a budget of at least one")
        row = self.feed(tokens, trace)[-1]
        g, feeds, session = self.graphs, self.feeds, self.session
        call, names, past, label, log = session.call(), g.names, g.past, session.label, trace.log.append
        one, masks, steps, positions = g.one, g.masks, g.steps, g.positions
        length = self.length
        drafts: list[int] = []
        while True:
            token = int(row.argmax())
            drafts.append(token)
            if token == eos or len(drafts) == budget:
                self.length = length
                return drafts
            feeds["input_ids"] = one[token]
            feeds["attention_mask"] = masks[length + 1]
            if positions:
                feeds["position_ids"] = steps[length]
            start = perf_counter()
            got = call(names, feeds, None)
            log((label, start, perf_counter()))
            feeds.update(zip(past, got, strict=False))
            row = got[-1]
            length += 1


AnyLane = CausalLane | SharedLane | BoundLane
"""Every lane kind: ``feed``, ``trim``, ``greedy``, ``draft``, ``kv`` and ``length`` alike."""


def open_lane(graphs: CausalGraphs) -> AnyLane:
    """An empty cache for one decode: in the tier's shared buffers where its genai config shares past and present
    (as onnxruntime-genai runs it), in its two bound buffers for one optimum graph, else grown from length 0."""
    if shares_buffer(graphs):
        return SharedLane(graphs)
    return BoundLane(graphs) if takes_bound_buffers(graphs) else CausalLane(graphs)
