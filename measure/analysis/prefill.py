"""Decoder-only tiers' timing split at the first token: prefill per prompt token, time to first token, decode.

A decoder-only decode pays for its prompt in one call before the first token, so
ms per output token alone mixes two costs that scale with different lengths.
Each figure is read per repeat from the greedy case's samples (``first_token_s``
and ``source_tokens`` per row) and summarised like the other timings: a median
over repeats with its interval.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from measure.analysis.stats import Estimate, summarize
from measure.record.model import Case, Record


@dataclass(frozen=True)
class CausalTiming:
    tier: str
    prompt_tokens: int
    """Prompt tokens over all golden rows (the ids each prefill took)."""
    decode_calls: int
    """Single-step calls after the prefill over all golden rows (one pass)."""
    prefill_ms_per_prompt_token: Estimate
    """Time to first token over the prompt's tokens, summed over rows, per repeat."""
    first_token_ms: Estimate
    """Mean time to first token (prefill + argmax) of a row, per repeat."""
    decode_ms_per_token: Estimate | None
    """(wall - time to first token) / decode calls, summed over rows, per repeat; None with no decode call."""


def _timing(name: str, case: Case) -> CausalTiming | None:
    first = case.first_token_s
    if first is None or not case.source_tokens or first.shape != case.wall_s.shape or not first.size:
        return None
    prompt = int(sum(case.source_tokens))
    calls = int(sum(max(0, c - 1) for c in case.calls))  # the prefill is a row's first call
    first_ms = 1000 * first.sum(axis=1)
    decode = 1000 * (case.wall_s - first).sum(axis=1)
    return CausalTiming(
        tier=name,
        prompt_tokens=prompt,
        decode_calls=calls,
        prefill_ms_per_prompt_token=summarize(first_ms / max(1, prompt)),
        first_token_ms=summarize(first_ms / first.shape[1]),
        decode_ms_per_token=summarize(np.maximum(decode, 0.0) / calls) if calls else None,
    )


def causal_timings(record: Record) -> list[CausalTiming]:
    """One entry per decoder-only tier with a measured greedy case that kept its first-token samples."""
    if record.wallclock is None:
        return []
    out = []
    for case in record.wallclock.greedy():
        tier = record.tiers.get(case.name)
        if tier is None or not tier.decoder_only or not case.measured:
            continue
        found = _timing(case.name, case)
        if found is not None:
            out.append(found)
    return out
