"""Per position, how far one tier's next-token distribution lies from its reference's: the teacher-forced facts.

Both tiers score the same token stream (row i of each logits array decides the
same next token), so every difference is the tier's, not the path's. Log-softmax
in float64 over the full vocabulary, as llama.cpp's ``--kl-divergence`` takes it:

* ``kld``: KL(P_ref || P_tier) = sum_v p_ref(v) (log p_ref(v) - log p_tier(v)), >= 0;
* ``dp``: p_tier(t) - p_ref(t) of the reference's top token t;
* ``same_top1``: both pick the same top token;
* ``top5``: how many of the reference's five likeliest tokens are among the tier's five;
* ``nll_ref`` / ``nll_tier``: -log p of the stream's own next token under each.

Measured facts, computed while the logits exist (they are never stored); what
they add up to per tier (means with intervals, percentiles, perplexity ratios)
is :mod:`measure.analysis.fidelity`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOP_K = 5


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-probabilities in float64 (max-shifted, so large logits do not overflow)."""
    x = np.asarray(logits, dtype=np.float64)
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


@dataclass(frozen=True)
class Positions:
    """The per-position facts of one row (arrays of one length: the row's scored positions)."""

    kld: np.ndarray
    dp: np.ndarray
    same_top1: np.ndarray
    top5: np.ndarray
    nll_ref: np.ndarray
    nll_tier: np.ndarray


def _top(logp: np.ndarray, k: int) -> np.ndarray:
    """Each row's ``k`` likeliest token ids (unordered)."""
    k = min(k, logp.shape[-1])
    return np.argpartition(-logp, k - 1, axis=-1)[:, :k]


def compare_logits(ref: np.ndarray, tier: np.ndarray, targets: list[int]) -> Positions:
    """Row i of ``ref`` and ``tier`` both decide ``targets[i]``: the facts of every position."""
    if ref.shape != tier.shape or ref.shape[0] != len(targets):
        raise ValueError(f"logits {ref.shape} and {tier.shape} do not score the {len(targets)} targets alike")
    lp, lq = log_softmax(ref), log_softmax(tier)
    p = np.exp(lp)
    kld = np.maximum(0.0, (p * (lp - lq)).sum(axis=-1))  # rounding can leave a -1e-17 for identical rows
    rows = np.arange(len(targets))
    top_ref, top_tier = lp.argmax(axis=-1), lq.argmax(axis=-1)
    dp = np.exp(lq[rows, top_ref]) - p[rows, top_ref]
    a, b = _top(lp, TOP_K), _top(lq, TOP_K)
    top5 = np.array([len(np.intersect1d(x, y)) for x, y in zip(a, b, strict=True)], dtype=np.int64)
    return Positions(kld, dp, top_ref == top_tier, top5, target_nll(lp, targets), target_nll(lq, targets))


def target_nll(logp: np.ndarray, targets: list[int]) -> np.ndarray:
    """-log p of each position's own next token (row i deciding ``targets[i]``), from :func:`log_softmax`'s rows."""
    return -logp[np.arange(len(targets)), np.asarray(targets)]
