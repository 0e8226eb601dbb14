"""Statistics over raw samples: robust summaries, seeded bootstrap intervals, fits.

Everything here is a pure function of samples plus a seed, so a page or a
gate recomputes the same interval from the same record, years later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A point value with its interval (``lo``..``hi`` at ``level``) and spread."""

    value: float
    lo: float
    hi: float
    q1: float | None = None
    q3: float | None = None

    def excludes(self, x: float) -> bool:
        return x < self.lo or x > self.hi

    def to_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "q1": self.q1, "q3": self.q3}


def _row_medians(mat: np.ndarray) -> np.ndarray:
    """Median of each row; sorting short rows beats np.median's partition by several times."""
    srt = np.sort(mat, axis=1)
    n = srt.shape[1]
    return srt[:, n // 2] if n % 2 else 0.5 * (srt[:, n // 2 - 1] + srt[:, n // 2])


def percentile_interval(boot: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval, linearly interpolated as np.quantile does, from one sort."""
    srt = np.sort(boot)
    tail = (1 - level) / 2

    def at(q: float) -> float:
        pos = q * (srt.size - 1)
        i = int(pos)
        j = min(i + 1, srt.size - 1)
        return float(srt[i] + (srt[j] - srt[i]) * (pos - i))

    return at(tail), at(1 - tail)


def summarize(values: Sequence[float], *, resamples: int, seed: int, level: float = LEVEL) -> Estimate:
    """Median with a percentile-bootstrap interval and the interquartile range."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no samples to summarize")
    rng = np.random.default_rng(seed)
    boot = _row_medians(x[rng.integers(0, x.size, size=(resamples, x.size))])
    lo, hi = percentile_interval(boot, level)
    q1, q3 = np.quantile(x, [0.25, 0.75])
    return Estimate(float(np.median(x)), lo, hi, float(q1), float(q3))


def paired_ratio(
    num: Sequence[float], den: Sequence[float], *, resamples: int, seed: int, level: float = LEVEL
) -> Estimate:
    """median(num) / median(den) with repeats resampled jointly (interleaved repeats are paired)."""
    a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if a.size != b.size or a.size == 0:
        raise ValueError("paired samples must have the same non-zero length")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(resamples, a.size))
    boot = _row_medians(a[idx]) / _row_medians(b[idx])
    lo, hi = percentile_interval(boot, level)
    return Estimate(float(np.median(a) / np.median(b)), lo, hi)


def ratio_bootstrap(num: Sequence[float], den: Sequence[float], *, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap distribution of median(num) / median(den) for two independent runs (each side on its own)."""
    a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("a ratio needs samples on both sides")
    rng = np.random.default_rng(seed)
    boot_a = _row_medians(a[rng.integers(0, a.size, size=(resamples, a.size))])
    boot_b = _row_medians(b[rng.integers(0, b.size, size=(resamples, b.size))])
    return boot_a / boot_b


def ratio_of_medians(
    num: Sequence[float], den: Sequence[float], *, resamples: int, seed: int, level: float = LEVEL
) -> Estimate:
    """median(num) / median(den) for two independent runs: each side resampled on its own."""
    lo, hi = percentile_interval(ratio_bootstrap(num, den, resamples=resamples, seed=seed), level)
    return Estimate(float(np.median(num) / np.median(den)), lo, hi)


def tail_share(boot: np.ndarray, below: float | None = None, above: float | None = None) -> float:
    """Bootstrap p-value: share of resamples at or beyond a bound, with the +1 that keeps it above zero."""
    hits = np.count_nonzero(boot <= below) if below is not None else np.count_nonzero(boot >= above)
    return float((hits + 1) / (boot.size + 1))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone), in the order given.

    Rejecting where the adjusted value is below alpha keeps the chance of any
    false call among all the metrics compared at most alpha.
    """
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def fit_exponent(
    lengths: Sequence[float], seconds: Sequence[float], *, resamples: int, seed: int, level: float = LEVEL
) -> Estimate:
    """Slope b of log(time) on log(length): time ~ length^b; rows resampled for the interval."""
    x, y = np.log(np.asarray(lengths, dtype=float)), np.log(np.asarray(seconds, dtype=float))
    if x.size < 3 or np.ptp(x) == 0:
        raise ValueError("an exponent needs at least three rows of different lengths")
    slope = float(np.polyfit(x, y, 1)[0])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(resamples, x.size))
    bx, by = x[idx], y[idx]  # least-squares slope of every resample at once
    dx = bx - bx.mean(axis=1, keepdims=True)
    var = (dx * dx).sum(axis=1)
    ok = var > 0
    boot = (dx * (by - by.mean(axis=1, keepdims=True))).sum(axis=1)[ok] / var[ok]
    lo, hi = percentile_interval(boot, level)
    return Estimate(slope, lo, hi)


def predicted_speedup(acceptance: float, k: int, cost_ratio: float) -> float:
    """Leviathan et al. 2023, Theorem 3.8: (1 - a^(k+1)) / ((1 - a)(k c + 1))."""
    a = min(max(acceptance, 0.0), 1.0)
    expected_tokens = k + 1.0 if a == 1.0 else (1 - a ** (k + 1)) / (1 - a)
    return expected_tokens / (k * cost_ratio + 1)


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (insert, delete, substitute), O(len(a) * len(b))."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def char_error_rate(hypothesis: str, reference: str) -> float:
    return edit_distance(hypothesis, reference) / max(1, len(reference))
