"""Greedy decoding with the key/value cache carried between calls (single-step framing).

One decoder call per output token, each feeding only the new token on top of
the cache: O(T) in output length. The timed region is token ids in -> token ids
out (:func:`greedy_ids`): tokenizing the source is identical across tiers that
share a tokenizer, so it is timed on its own by whoever calls it, and the output
text is decoded after the clock stops (its cost kept in ``detokenize_s``). :func:`greedy_uncached` re-feeds the whole
prefix every step and exists as the slow reference the cached path is checked
against (and as the O(T^2) shape a benchmark must be able to tell apart).
"""

from __future__ import annotations

import numpy as np

from measure.engine.artifacts import Tier
from measure.engine.causal import CausalTier, causal_greedy_ids, causal_greedy_uncached
from measure.engine.decoded import Decoded, finish
from measure.engine.kvcache import KVCache
from measure.engine.session import Trace


def greedy(
    tier: Tier | CausalTier, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None
) -> Decoded:
    """Cached greedy decode of one source text: tokenized here, then :func:`greedy_ids` (whose clock starts
    after tokenizing unless ``trace``, made earlier, says otherwise)."""
    ids = tier.source_ids(text)
    return greedy_ids(tier, ids, max_new_tokens=max_new_tokens, trace=trace)


def greedy_ids(
    tier: Tier | CausalTier, ids: list[int], *, max_new_tokens: int | None = None, trace: Trace | None = None
) -> Decoded:
    """Cached greedy decode of one tokenized source (:meth:`Tier.source_ids`): the timed region, ids in -> ids out.

    The wall clock runs from ``trace.started`` (a new trace: now) to the last token decided. A decoder-only tier
    prefills its prompt in one call instead (:func:`measure.engine.causal.causal_greedy_ids`).
    """
    if isinstance(tier, CausalTier):
        return causal_greedy_ids(tier, ids, max_new_tokens=max_new_tokens, trace=trace)
    limit = tier.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
    trace = trace or Trace()  # made after the arguments are settled: its clock starts at the first real work
    lane = tier.begin(ids, trace)
    before = len(trace.log)  # the encoder's calls; the next one is the first decoder step
    out, stopped = tier.decoder.greedy(lane, tier.special.decoder_start, tier.special.eos, limit, trace)
    # the first token is known when the first decoder call returns (its argmax costs microseconds)
    first = trace.log[before][2] - trace.started if len(trace.log) > before else None
    return finish(tier, out, stopped, trace, first)


def greedy_uncached(
    tier: Tier | CausalTier, text: str, *, max_new_tokens: int | None = None, trace: Trace | None = None
) -> Decoded:
    """Reference decode: every step feeds the whole prefix to an empty cache. O(T^2); tests only."""
    if isinstance(tier, CausalTier):
        return causal_greedy_uncached(tier, text, max_new_tokens=max_new_tokens, trace=trace)
    ids = tier.source_ids(text)
    trace = trace or Trace()
    limit = tier.default_max_new_tokens(len(ids)) if max_new_tokens is None else max_new_tokens
    empty = tier.start(ids, trace)
    prefix = [tier.special.decoder_start]
    while len(prefix) - 1 < limit:
        logits, _ = tier.feed(empty, prefix, trace)
        token = int(np.argmax(logits[-1]))
        if token == tier.special.eos:
            return finish(tier, prefix[1:], "eos", trace)
        prefix.append(token)
    return finish(tier, prefix[1:], "max_new_tokens", trace)


def feed_prefix(
    tier: Tier, ids: list[int], prefix: list[int], block: int, trace: Trace | None = None
) -> tuple[np.ndarray, KVCache]:
    """Feed ``prefix`` from an empty cache in calls of ``block`` tokens: logits of every position, final cache.

    block = 1 is single-step framing; block = len(prefix) feeds the whole prefix in one batched call.
    """
    trace = trace or Trace()
    cache = tier.start(ids, trace)
    rows = []
    for i in range(0, len(prefix), block):
        logits, cache = tier.feed(cache, prefix[i : i + block], trace)
        rows.append(logits)
    return np.concatenate(rows), cache
