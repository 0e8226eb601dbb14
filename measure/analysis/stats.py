"""Statistics over raw samples: robust summaries, seeded bootstrap intervals, fits.

Everything here is a pure function of samples plus a seed, so a page or a
gate recomputes the same interval from the same record, years later.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from measure.analysis.resample import KEPT_DRAWS, draws, resampled_medians, row_medians
from measure.analysis.tdist import t_quantile

LEVEL = 0.95

Samples = Sequence[float] | np.ndarray
"""What a statistic takes: plain floats or a float array (a record view hands out arrays)."""


@dataclass(frozen=True)
class Estimate:
    """A point value with its interval (``lo``..``hi`` at ``level``) and spread."""

    value: float
    lo: float
    hi: float
    q1: float | None = None
    q3: float | None = None
    level: float | None = None
    """The interval's actual coverage where it differs from the stated one (few samples), else the stated one."""

    @property
    def short_level(self) -> float | None:
        """The interval's actual level when few samples keep it below the stated :data:`LEVEL`, else None."""
        return self.level if self.level is not None and self.level < LEVEL - 1e-9 else None

    def to_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "lo": self.lo, "hi": self.hi, "q1": self.q1, "q3": self.q3}


def percentile_interval(boot: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """Percentile interval, linearly interpolated as np.quantile does, from one partial sort."""
    tail = (1 - level) / 2
    last = boot.size - 1
    pos = [q * last for q in (tail, 1 - tail)]
    ij = [(int(x), min(int(x) + 1, last)) for x in pos]
    srt = np.partition(boot, sorted({k for pair in ij for k in pair})) if boot.size > 1 else np.sort(boot)

    def at(x: float, i: int, j: int) -> float:
        if srt[i] == srt[j]:  # no step to interpolate (between two infinities, inf - inf would make it NaN)
            return float(srt[i])
        return float(srt[i] + (srt[j] - srt[i]) * (x - i))

    return at(pos[0], *ij[0]), at(pos[1], *ij[1])


def _sorted_finite(values: np.ndarray) -> list[float] | None:
    """The values sorted as Python floats, or None when any is not finite (numpy then decides what NaN gives)."""
    if values.ndim != 1:
        return None
    x = values.tolist()
    return sorted(x) if all(map(math.isfinite, x)) else None


def _median_of_sorted(s: list[float]) -> float:
    """np.median's float: the middle value, or the mean of the middle two as (a + b) / 2."""
    h = len(s) // 2
    return s[h] if len(s) % 2 else (s[h - 1] + s[h]) / 2


def _quantile_of_sorted(s: list[float], q: float) -> float:
    """np.quantile's float (method "linear", its two-sided interpolation) from sorted finite samples."""
    last = len(s) - 1
    v = last * q
    if v >= last:
        return s[-1]
    if v < 0:
        return s[0]
    i = math.floor(v)
    g = v - i
    a, b = s[i], s[i + 1]
    diff = b - a
    return b - diff * (1 - g) if g >= 0.5 else a + diff * g


def median(values: Samples) -> float:
    """np.median of few samples, bit for bit, without numpy's per-call overhead (a sort of a Python list)."""
    x = np.asarray(values, dtype=float)
    s = _sorted_finite(x)
    return float(np.median(x)) if not s else _median_of_sorted(s)


PAIRWISE_BLOCK = 128
"""numpy sums up to this many float64 values in one block of its pairwise summation; :func:`mean_var` copies it."""


def _numpy_sum(v: list[float]) -> float:
    """np.add.reduce of a contiguous float64 array of at most :data:`PAIRWISE_BLOCK` values, bit for bit:
    a running sum below 8 values, else eight running sums combined pairwise, then the rest; started from 0.0."""
    n = len(v)
    if n < 8:
        res = -0.0
        for a in v:
            res += a
        return 0.0 + res
    r0, r1, r2, r3, r4, r5, r6, r7 = v[:8]
    stop = n - n % 8
    for i in range(8, stop, 8):
        r0, r1, r2, r3 = r0 + v[i], r1 + v[i + 1], r2 + v[i + 2], r3 + v[i + 3]
        r4, r5, r6, r7 = r4 + v[i + 4], r5 + v[i + 5], r6 + v[i + 6], r7 + v[i + 7]
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for a in v[stop:]:
        res += a
    return 0.0 + res


def mean_var(values: np.ndarray) -> tuple[float, float]:
    """``(values.mean(), values.var(ddof=1))`` of a short 1-D float64 array, bit for bit, in plain Python.

    A comparison takes these of a few repeats per case; numpy's per-call overhead is most of their cost.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or not 2 <= x.size <= PAIRWISE_BLOCK:
        return float(x.mean()), float(x.var(ddof=1))
    v = x.tolist()
    m = _numpy_sum(v) / len(v)
    return m, _numpy_sum([(a - m) * (a - m) for a in v]) / (len(v) - 1)


def column_medians(mat: np.ndarray) -> np.ndarray:
    """np.median(mat, axis=0), bit for bit: one sort of the columns (np.median partitions each one)."""
    x = np.asarray(mat, dtype=float)
    if x.ndim != 2 or x.shape[0] == 0 or not np.isfinite(x).all():
        return np.median(x, axis=0)
    return row_medians(x.T)


@functools.lru_cache(maxsize=512)
def _half_cdf(n: int) -> tuple[float, ...]:
    """P(Binomial(n, 1/2) <= k) for k = 0..n, exact (integer binomials), computed once per n."""
    out, c, total = [], 1, 0
    for i in range(n + 1):
        total += c
        out.append(total / 2**n)
        c = c * (n - i) // (i + 1)
    return tuple(out)


def _binom_half_cdf(k: int, n: int) -> float:
    """P(Binomial(n, 1/2) <= k)."""
    return 0.0 if k < 0 else _half_cdf(n)[min(k, n)]


def median_level(n: int, depth: int) -> float:
    """Exact coverage of ``[x_(depth), x_(n + 1 - depth)]`` for the median of any continuous distribution."""
    return 1 - 2 * _binom_half_cdf(depth - 1, n)


def median_interval(values: Samples, level: float = LEVEL) -> tuple[float, float, float]:
    """Distribution-free interval for the median of few samples: ``(lo, hi, achieved level)``.

    Order statistics give exact levels only at discrete points (n = 7: 98.4% or 87.5%); between two of
    them the bounds are interpolated as Hettmansperger and Sheather (1986) do, which holds ``level``
    closely for any near-symmetric distribution. When even ``[min, max]`` falls short of ``level``
    (n <= 5 at 95%), the interval is ``[min, max]`` and the level returned is the exact one it has.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("no samples for an interval")
    if n == 1:
        return float(x[0]), float(x[0]), 0.0
    depth = 1
    while depth + 1 <= n // 2 and median_level(n, depth + 1) >= level:
        depth += 1
    g = median_level(n, depth)
    if g < level:
        return float(x[0]), float(x[-1]), g
    nxt = median_level(n, depth + 1) if depth + 1 <= (n + 1) // 2 else 0.0
    if depth + 1 > (n + 1) // 2 or g == level:
        return float(x[depth - 1]), float(x[n - depth]), g
    share = (g - level) / (g - nxt)
    lam = (n - depth) * share / (depth + (n - 2 * depth) * share)
    lo = lam * x[depth] + (1 - lam) * x[depth - 1]
    hi = lam * x[n - depth - 1] + (1 - lam) * x[n - depth]
    return float(lo), float(hi), level


def summarize(values: Samples, *, level: float = LEVEL) -> Estimate:
    """Median with its distribution-free interval (:func:`median_interval`) and the interquartile range."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no samples to summarize")
    lo, hi, achieved = median_interval(x, level)
    s = _sorted_finite(x)
    if s is None:
        q1, q3 = np.quantile(x, [0.25, 0.75])
        return Estimate(float(np.median(x)), lo, hi, float(q1), float(q3), achieved)
    return Estimate(_median_of_sorted(s), lo, hi, _quantile_of_sorted(s, 0.25), _quantile_of_sorted(s, 0.75), achieved)


def paired_ratio(num: Samples, den: Samples, *, level: float = LEVEL) -> Estimate:
    """num / den over paired repeats (interleaved in one run): the geometric mean of the per-repeat ratios.

    Its interval is Student's t on the log ratios (n - 1 degrees of freedom): exact for lognormal noise and
    close for anything near it, where a percentile bootstrap of a ratio of medians of 7 repeats covers ~87%.
    One repeat has no interval (both bounds are the value, level 0).
    """
    a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if a.size != b.size or a.size == 0:
        raise ValueError("paired samples must have the same non-zero length")
    d = np.log(a) - np.log(b)
    if d.size == 1:
        mean = float(d.mean())
        return Estimate(math.exp(mean), math.exp(mean), math.exp(mean), level=0.0)
    mean, var = mean_var(d)  # numpy's std is the rounded sqrt of its var, as math.sqrt's is
    half = t_quantile(1 - (1 - level) / 2, d.size - 1) * math.sqrt(var) / math.sqrt(d.size)
    return Estimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), level=level)


def ratio_bootstrap(num: Samples, den: Samples, *, resamples: int, seed: int) -> np.ndarray:
    """Bootstrap distribution of median(num) / median(den) for two independent runs (each side on its own)."""
    a, b = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("a ratio needs samples on both sides")
    shapes = ((resamples, a.size), (resamples, b.size))
    return resampled_medians(a, seed, shapes, 0) / resampled_medians(b, seed, shapes, 1)


def ratio_of_medians(num: Samples, den: Samples, *, resamples: int, seed: int, level: float = LEVEL) -> Estimate:
    """median(num) / median(den) for two independent runs: each side resampled on its own."""
    lo, hi = percentile_interval(ratio_bootstrap(num, den, resamples=resamples, seed=seed), level)
    return Estimate(median(num) / median(den), lo, hi)


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


def fit_exponent(lengths: Samples, seconds: Samples, *, resamples: int, seed: int, level: float = LEVEL) -> Estimate:
    """Slope b of log(time) on log(length): time ~ length^b; rows resampled for the interval."""
    x, y = np.log(np.asarray(lengths, dtype=float)), np.log(np.asarray(seconds, dtype=float))
    if x.size < 3 or np.ptp(x) == 0:
        raise ValueError("an exponent needs at least three rows of different lengths")
    slope = float(np.polyfit(x, y, 1)[0])
    side = _exponent_x if x.size * resamples <= KEPT_DRAWS else _exponent_x.__wrapped__
    weights, ok, var_ok = side(x.tobytes(), resamples, seed)
    boot = (weights @ y)[ok] / var_ok  # least-squares slope of every resample at once
    lo, hi = percentile_interval(boot, level)
    return Estimate(slope, lo, hi)


@functools.lru_cache(maxsize=16)
def _exponent_x(x: bytes, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The length side of :func:`fit_exponent`'s resampled fits: (weights, var > 0, var where > 0).

    A resample's slope is sum_j dx_j y[idx_j] / var (dx: its lengths centred, which sum to 0, so y needs no
    centring); ``weights[r, k]`` adds the dx of every draw of row k in resample r, so every slope is one
    product with y (the last bits move with the order of the additions). A record's tiers decode the same
    golden rows, and a history's records the same again, so the lengths repeat and this is done once.
    """
    lengths = np.frombuffer(x)
    n = lengths.size
    (idx,) = draws(seed, ((resamples, n),))
    bx = lengths[idx]
    dx = bx - bx.mean(axis=1, keepdims=True)
    var = (dx * dx).sum(axis=1)
    ok = var > 0
    flat = (np.arange(resamples)[:, None] * n + idx).ravel()
    weights = np.bincount(flat, weights=dx.ravel(), minlength=resamples * n).reshape(resamples, n)
    out = (weights, ok, var[ok])
    for a in out:
        a.flags.writeable = False
    return out


def predicted_speedup(acceptance: float, k: int, cost_ratio: float) -> float:
    """Leviathan et al. 2023, Theorem 3.8: (1 - a^(k+1)) / ((1 - a)(k c + 1))."""
    a = min(max(acceptance, 0.0), 1.0)
    expected_tokens = k + 1.0 if a == 1.0 else (1 - a ** (k + 1)) / (1 - a)
    return expected_tokens / (k * cost_ratio + 1)
