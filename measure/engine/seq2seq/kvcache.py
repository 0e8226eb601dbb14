"""The key/value cache as a value: what :meth:`~measure.engine.seq2seq.decoder.Decoder.feed` takes and returns.

A module of its own because the decoder, every layout and the framing suites that
compare caches all hold one, and it needs nothing from them. The hot decode loops
never build one: a :class:`~measure.engine.seq2seq.decoder.Lane` refills its feeds in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class KVCache:
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

    def trim(self, length: int) -> KVCache:
        """Keep the first ``length`` positions: how a speculative round drops rejected drafts."""
        if length > self.length or length < 0:
            raise ValueError(f"cannot trim a cache of {self.length} positions to {length}")
        if length == self.length:
            return self
        return KVCache(tuple(np.ascontiguousarray(a[:, :, :length]) for a in self.self_kv), self.cross, length)
