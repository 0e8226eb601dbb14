"""Student's t distribution in pure Python: the tail probability and the quantile the comparisons use.

Real degrees of freedom (Welch-Satterthwaite's are not integers), no scipy: the incomplete beta function's
continued fraction, and Newton's method on it for the quantile. The comparisons of a long history call these
hundreds of thousands of times, so the loop is written for speed without changing a single float it computes.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

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
