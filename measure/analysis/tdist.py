"""Student's t distribution without scipy: the tail probability and the quantile the comparisons use.

Real degrees of freedom (Welch-Satterthwaite's are not integers): the incomplete beta function's continued
fraction, and Newton's method on it for the quantile. The comparisons of a long history call these hundreds
of thousands of times, so the scalar loop is written for speed, and :func:`t_sf_many` and
:func:`t_quantile_many` run the continued fraction over many arguments at once in numpy; neither changes a
single float: every element sees the same IEEE operations in the same order, and the transcendental
functions stay Python's ``math`` ones.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

TERMS = 299
"""The most continued-fraction terms evaluated (each one an even and an odd step)."""


@functools.lru_cache(maxsize=64)
def _terms(a: float, b: float) -> list[tuple[float, float, float, float]]:
    """The continued fraction's coefficients at (a, b), less their factor x, filled in as far as one was needed.

    A quantile's Newton steps and a comparison's tests evaluate one (a, b) at several x: the coefficients are
    the same floats each time, computed once.
    """
    return []


def _more_terms(terms: list[tuple[float, float, float, float]], a: float, b: float) -> None:
    qab, qap, qam = a + b, a + 1, a - 1
    for m in range(len(terms) + 1, min(len(terms) + 16, TERMS) + 1):
        m2 = 2 * m
        terms.append((m * (b - m), (qam + m2) * (a + m2), -(a + m) * (qab + m), (a + m2) * (qap + m2)))


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz).

    Written out step by step (no tuple per term, no ``abs`` call, the coefficients from :func:`_terms`)
    because the comparisons of a long history spend most of their time here; every float operation is the
    textbook one, in the same order.
    """
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    if not (d > tiny or d < -tiny):
        d = tiny
    d = 1 / d
    h = d
    terms = _terms(a, b)
    for m in range(TERMS):
        if m == len(terms):
            _more_terms(terms, a, b)
        num_even, den_even, num_odd, den_odd = terms[m]
        aa = num_even * x / den_even
        d = 1 + aa * d
        if not (d > tiny or d < -tiny):
            d = tiny
        d = 1 / d
        c = 1 + aa / c
        if not (c > tiny or c < -tiny):
            c = tiny
        h *= d * c
        aa = num_odd * x / den_odd
        d = 1 + aa * d
        if not (d > tiny or d < -tiny):
            d = tiny
        d = 1 / d
        c = 1 + aa / c
        if not (c > tiny or c < -tiny):
            c = tiny
        dc = d * c
        h *= dc
        if -1e-15 < dc - 1 < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` (real) degrees of freedom; df = inf is the normal."""
    if math.isinf(df):
        return 0.5 * math.erfc(t / math.sqrt(2))
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1 - tail


def t_quantile(p: float, df: float) -> float:
    """The t value with P(T <= t) = p, p in (0, 1): Newton's method from the normal quantile, kept in a bracket.

    Cached: a record's intervals ask for the same few (p, df) dozens of times.
    """
    return _t_quantile(float(p), float(df))


@functools.lru_cache(maxsize=4096)
def _t_quantile(p: float, df: float) -> float:
    z = NormalDist().inv_cdf(p)
    if math.isinf(df):
        return z
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    lo, hi, x = -1e6, 1e6, z
    for _ in range(100):
        f = (1 - t_sf(x, df)) - p
        if f > 0:
            hi = x
        else:
            lo = x
        if abs(f) < 1e-13:
            break
        pdf = math.exp(log_norm - (df + 1) / 2 * math.log1p(x * x / df))
        step = x - f / pdf if pdf > 0 else (lo + hi) / 2
        x = step if lo < step < hi else (lo + hi) / 2
    return float(x)


BATCH_MIN = 64
"""Fewer arguments than this are evaluated one by one (numpy's per-call cost outweighs the loop's)."""


def _guard(v: np.ndarray) -> np.ndarray:
    return np.where((v > 1e-300) | (v < -1e-300), v, 1e-300)


def _betacf_many(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`_betacf` of every (a, b, x) at once: the same steps, an element leaving when it converges."""
    out = np.empty_like(x)
    idx = np.arange(x.size)
    qab, qap, qam = a + b, a + 1, a - 1
    c = np.ones_like(x)
    d = 1 / _guard(1 - qab * x / qap)
    h = d.copy()
    with np.errstate(all="ignore"):
        for m in range(1, TERMS + 1):
            m2 = 2 * m
            aa = m * (b - m) * x / ((qam + m2) * (a + m2))
            d = 1 / _guard(1 + aa * d)
            c = _guard(1 + aa / c)
            h = h * (d * c)
            aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
            d = 1 / _guard(1 + aa * d)
            c = _guard(1 + aa / c)
            dc = d * c
            h = h * dc
            off = dc - 1
            done = (off > -1e-15) & (off < 1e-15)
            if done.any():
                out[idx[done]] = h[done]
                keep = ~done
                idx, a, b, x, qab, qap, qam, c, d, h = (v[keep] for v in (idx, a, b, x, qab, qap, qam, c, d, h))
                if idx.size == 0:
                    return out
    out[idx] = h
    return out


def _betainc_many(a: list[float], b: list[float], x: list[float]) -> list[float]:
    """:func:`_betainc` of every (a, b, x): the front factor in ``math``, the continued fractions in one go."""
    out, front = [0.0] * len(x), [0.0] * len(x)
    low: list[int] = []
    high: list[int] = []
    for i, (ai, bi, xi) in enumerate(zip(a, b, x, strict=True)):
        if xi <= 0 or xi >= 1:
            out[i] = 0.0 if xi <= 0 else 1.0
            continue
        front[i] = math.exp(
            math.lgamma(ai + bi) - math.lgamma(ai) - math.lgamma(bi) + ai * math.log(xi) + bi * math.log1p(-xi)
        )
        (low if xi < (ai + 1) / (ai + bi + 2) else high).append(i)
    if low:
        cf = _betacf_many(np.array([a[i] for i in low]), np.array([b[i] for i in low]), np.array([x[i] for i in low]))
        for i, f in zip(low, cf.tolist(), strict=True):
            out[i] = front[i] * f / a[i]
    if high:
        cf = _betacf_many(
            np.array([b[i] for i in high]), np.array([a[i] for i in high]), np.array([1 - x[i] for i in high])
        )
        for i, f in zip(high, cf.tolist(), strict=True):
            out[i] = 1 - front[i] * f / b[i]
    return out


def t_sf_many(t: Sequence[float], df: Sequence[float]) -> list[float]:
    """``[t_sf(t[i], df[i]) ...]``, the same floats, in one pass of the continued fraction over all of them."""
    if len(t) < BATCH_MIN:
        return [t_sf(ti, di) for ti, di in zip(t, df, strict=True)]
    out = [0.5 * math.erfc(ti / math.sqrt(2)) if math.isinf(di) else 0.0 for ti, di in zip(t, df, strict=True)]
    rest = [i for i, di in enumerate(df) if not math.isinf(di)]
    inc = _betainc_many([df[i] / 2 for i in rest], [0.5] * len(rest), [df[i] / (df[i] + t[i] * t[i]) for i in rest])
    for i, v in zip(rest, inc, strict=True):
        tail = 0.5 * v
        out[i] = tail if t[i] >= 0 else 1 - tail
    return out


def t_quantile_many(p: float, df: Sequence[float]) -> list[float]:
    """``[t_quantile(p, d) for d in df]``, the same floats: the Newton steps of all of them taken together."""
    if len(df) < BATCH_MIN:
        return [t_quantile(p, d) for d in df]
    z = NormalDist().inv_cdf(p)
    x, lo, hi = [z] * len(df), [-1e6] * len(df), [1e6] * len(df)
    live = [i for i, d in enumerate(df) if not math.isinf(d)]
    norm = {i: math.lgamma((df[i] + 1) / 2) - math.lgamma(df[i] / 2) - 0.5 * math.log(df[i] * math.pi) for i in live}
    for _ in range(100):
        if not live:
            break
        going = []
        for i, sf in zip(live, t_sf_many([x[i] for i in live], [df[i] for i in live]), strict=True):
            f, xi, d = (1 - sf) - p, x[i], df[i]
            if f > 0:
                hi[i] = xi
            else:
                lo[i] = xi
            if abs(f) < 1e-13:
                continue
            pdf = math.exp(norm[i] - (d + 1) / 2 * math.log1p(xi * xi / d))
            step = xi - f / pdf if pdf > 0 else (lo[i] + hi[i]) / 2
            x[i] = step if lo[i] < step < hi[i] else (lo[i] + hi[i]) / 2
            going.append(i)
        live = going
    return [float(v) for v in x]
