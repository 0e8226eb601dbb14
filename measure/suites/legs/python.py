"""The Python onnxruntime leg: the reference every other runtime is held against, always run.

For each tier and golden row: the greedy decode single-step, then the very same token prefix replayed in blocks
of k (and the whole prefix in one call), comparing present keys/values per layer, logits and argmax; for a
decoder-only tier the prompt's framings too; quality against the golden outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from measure.engine.tier import Tier
from measure.record.model.framing_blocks import block_facts, layer_facts
from measure.record.model.framing_tier import miss, python_tier, quality_part
from measure.suites.config import FramingConfig
from measure.suites.finite import require_finite
from measure.suites.golden import GoldenRows, char_error_rate
from measure.suites.single_step import decode_single_step

Framed = tuple[np.ndarray, tuple[np.ndarray, ...]]
"""A replay's logits and its cache's key/value per layer (:meth:`measure.engine.tier.Tier.feed_framed`)."""


class _Diff:
    """Running sums for one block size of one tier: per-layer |single - batched| and magnitudes."""

    def __init__(self, layers: int) -> None:
        self.sum = np.zeros((layers, 2))
        self.max = np.zeros((layers, 2))
        self.mag = np.zeros((layers, 2))
        self.count = np.zeros(layers)
        self.logits_max = 0.0
        self.agree = 0
        self.total = 0
        self.first_divergent: list[int | None] = []

    def add(self, single: Framed, batched: Framed) -> None:
        """One row: the single-step replay's logits and key/value per layer against one block size's."""
        (ls, cs), (lb, cb) = single, batched
        for layer in range(len(self.count)):
            for part in (0, 1):  # key, value
                s, b = cs[2 * layer + part], cb[2 * layer + part]
                d = np.abs(s.astype(np.float64) - b)
                self.sum[layer, part] += d.sum()
                self.max[layer, part] = max(self.max[layer, part], float(d.max()))
                self.mag[layer, part] += np.abs(s).sum(dtype=np.float64)
            self.count[layer] += cs[2 * layer].size
        self.logits_max = max(self.logits_max, float(np.abs(ls - lb).max()))
        same = ls.argmax(-1) == lb.argmax(-1)
        self.agree += int(same.sum())
        self.total += int(same.size)
        self.first_divergent.append(None if same.all() else int(np.argmin(same)))

    def facts(self, block: int | str) -> dict[str, Any]:
        n = self.count
        layers = [
            layer_facts(
                i,
                key_mean=float(self.sum[i, 0] / n[i]),
                key_max=float(self.max[i, 0]),
                value_mean=float(self.sum[i, 1] / n[i]),
                value_max=float(self.max[i, 1]),
                key_abs=float(self.mag[i, 0] / n[i]),
                value_abs=float(self.mag[i, 1] / n[i]),
            )
            for i in range(len(n))
        ]
        present = float(self.max.max())
        return block_facts(block, layers, present, self.logits_max, self.agree, self.total, self.first_divergent)


def _framed_row(
    tier: Tier, ids: list[int], tokens: list[int], diffs: dict[int | str, _Diff], single: Framed | None = None
) -> None:
    """The decode (seq2seq: start token and output; decoder-only: the output on the prompt's cache) fed
    single-step (``single``: as the greedy decode already fed it), then in each block size and whole."""
    single = single or tier.feed_framed(ids, tokens, 1)
    for b, diff in diffs.items():
        diff.add(single, tier.feed_framed(ids, tokens, None if b == "whole" else int(b)))


def _prefill_row(tier: Tier, ids: list[int], prefill: dict[int | str, _Diff]) -> None:
    """A decoder-only prompt fed token by token, then in blocks and whole (as a decode feeds it)."""
    single = tier.prefill_framed(ids, 1)
    for b, diff in prefill.items():
        diff.add(single, tier.prefill_framed(ids, None if b == "whole" else int(b)))


def tier_parity(
    tier: Tier, golden: GoldenRows, config: FramingConfig, prefill_rows: int | None = None
) -> dict[str, Any]:
    """One tier's parity blocks (and, decoder-only, prefill blocks: on the first ``prefill_rows`` rows where a
    budget's plan cut them), quality and greedy decodes."""
    blocks: list[int | str] = [*config.k, *(["whole"] if config.whole_prefix else [])]
    diffs = {b: _Diff(tier.shape.layers) for b in blocks}
    framed = tier.kind == "causal" and prefill_rows != 0  # a budget may cut the prompt framings to none
    prefill = {b: _Diff(tier.shape.layers) for b in blocks} if framed else None
    outputs, output_ids = [], []
    for i, row in enumerate(golden.rows):
        ids = tier.source_ids(row.input)
        found = decode_single_step(tier, ids)  # decoder-only: the greedy decode is the single-step replay
        tokens = [int(t) for t in (tier.greedy_ids(ids).tokens if found is None else found[0])]
        outputs.append(tier.tokenizer.decode(tokens))
        output_ids.append(tokens)
        single = tier.feed_framed(ids, tokens, 1) if found is None else found[1]
        require_finite(single[0], tier.name, golden.path, row.line, "the framing suite's single-step replay")
        _framed_row(tier, ids, tokens, diffs, single)
        if prefill is not None and (prefill_rows is None or i < prefill_rows):  # a decoder-only prompt's framings
            _prefill_row(tier, ids, prefill)
    exact = sum(o == r.output for o, r in zip(outputs, golden.rows, strict=True))
    cer = [char_error_rate(o, r.output) for o, r in zip(outputs, golden.rows, strict=True)]
    misses = [miss(r.line, r.input, r.output, o) for o, r in zip(outputs, golden.rows, strict=True) if o != r.output]
    quality = quality_part(len(golden), exact, float(np.mean(cer)), cer, misses)
    facts = [diffs[b].facts(b) for b in blocks]
    prefill_facts = None if prefill is None else [prefill[b].facts(b) for b in blocks]
    return python_tier(tier.name, tier.fingerprint().precision, facts, quality, outputs, output_ids, prefill_facts)
