"""A greedy decode that is also the framing suite's single-step replay, so a row is decoded token by token once.

The framing suite compares a decode fed one token per call with the same tokens fed in blocks. Its single-step
side was a teacher-forced replay of the greedy decode's tokens (:meth:`~measure.engine.tier.Tier.feed_framed`
with block 1) after the greedy decode itself: the same calls twice. :func:`decode_single_step` decodes greedily
through the same lane calls the replay makes (the prompt in one call, then every output token fed one per call,
the last included) and keeps what the replay returns: the logits that decided each token and the cache after
them, bit for bit the replay's (a test holds it to that). Decoder-only tiers, where real sizes make a row cost
seconds; an encoder-decoder tier keeps its decode and replay (None here).
"""

from __future__ import annotations

import numpy as np

from measure.engine.session import Trace
from measure.engine.tier import Tier

Framed = tuple[np.ndarray, tuple[np.ndarray, ...]]


def decode_single_step(tier: Tier, ids: list[int]) -> tuple[list[int], Framed] | None:
    """``(tokens, (logits, cache))`` of a decoder-only tier's greedy decode of ``ids``: the tokens its greedy
    decode outputs (eos left out, at most its default limit), and what ``tier.feed_framed(ids, tokens, 1)``
    returns; None for an encoder-decoder tier."""
    if tier.kind != "causal":
        return None
    limit = tier.default_max_new_tokens(len(ids))
    trace = Trace()
    lane = tier.begin(ids, trace)
    rows = [lane.feed(ids, trace)[-1:]]
    out: list[int] = []
    while limit > 0:
        token = int(rows[-1][-1].argmax())
        if token == tier.special.eos:
            break
        out.append(token)
        rows.append(lane.feed([token], trace))  # fed, as the replay feeds every output token
        if len(out) == limit:
            break
    return out, (np.concatenate(rows), lane.kv())
