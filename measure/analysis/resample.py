"""Bootstrap draws, made once per seed and shape: the index matrices and resampled medians every interval of a
record is computed from.

A record's dozens of bootstraps share its one seed, so they draw the same few index matrices; drawn once and
kept read-only, they are exactly the matrices each call would have drawn (:func:`draws`), and the medians of
few samples are taken from their orders rather than sorted again (:func:`resampled_medians`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np


def sorted_resamples(v: np.ndarray, idx: np.ndarray, columns: Sequence[int]) -> np.ndarray:
    """Columns ``columns`` of ``np.sort(v[idx], axis=1)``, bit for bit, from a sort of each resample's ranks.

    A resample's order statistics are values of ``v`` picked by rank; ranks of a few hundred samples are small
    integers, which numpy sorts about ten times faster than floats (a record's percentiles and first-token
    medians were most of its analysis). NaN sorts last either way; 0.0 and -0.0, equal, may trade places, as in
    numpy's own sort.
    """
    n = v.size
    order = np.argsort(v, kind="stable")
    dtype = np.int16 if n <= np.iinfo(np.int16).max + 1 else np.int32 if n <= np.iinfo(np.int32).max + 1 else np.intp
    rank = np.empty(n, dtype=dtype)
    rank[order] = np.arange(n, dtype=dtype)
    return v[order][np.sort(rank[idx], axis=1)[:, list(columns)]]


def row_medians(mat: np.ndarray) -> np.ndarray:
    """Median of each row; sorting short rows beats np.median's partition by several times."""
    srt = np.sort(mat, axis=1)
    n = srt.shape[1]
    return srt[:, n // 2] if n % 2 else 0.5 * (srt[:, n // 2 - 1] + srt[:, n // 2])


KEPT_DRAWS = 1 << 20
"""Index matrices up to this many entries in all (8 MiB) are kept for reuse, 16 sets at most (larger ones: see
:data:`LARGE_DRAWS`). The exponent fit keeps at most 16 length sides of that size too."""


def draws(seed: int, shapes: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, ...]:
    """The index matrices ``default_rng(seed)`` draws for bootstraps of these (resamples, n) shapes, in order.

    Every bootstrap of a record uses the record's one seed, so its dozens of calls draw the same few matrices:
    drawn once (read-only), they are the very matrices each call would have drawn.
    """
    size = sum(r * n for r, n in shapes)
    if size <= KEPT_DRAWS:
        return _kept_draws(seed, shapes)
    if size <= LARGE_DRAWS:
        return _large_draws(seed, shapes)
    rng = np.random.default_rng(seed)
    return tuple(rng.integers(0, n, size=(r, n)) for r, n in shapes)


def resample_indices(seed: int, resamples: int, n: int) -> np.ndarray:
    """``default_rng(seed).integers(0, n, size=(resamples, n))``, read-only, drawn once for the calls that ask
    again (a record's percentiles draw it for every tier)."""
    return draws(seed, ((resamples, n),))[0]


@functools.lru_cache(maxsize=16)
def resample_counts(seed: int, resamples: int, n: int) -> np.ndarray:
    """How many times each of ``n`` rows is drawn in each resample of :func:`resample_indices` (resamples x n,
    read-only), so that a resampled sum is one matrix product rather than a gather of resamples x n values."""
    idx = resample_indices(seed, resamples, n)
    counts = np.zeros((resamples, n))
    np.add.at(counts, (np.repeat(np.arange(resamples), n), idx.ravel()), 1.0)
    counts.flags.writeable = False
    return counts


def resampled_sums(v: np.ndarray, seed: int, resamples: int) -> np.ndarray:
    """The sum of each resample of ``v``'s rows (:func:`resample_indices`): ``v[idx].sum(axis=1)``, as one product
    with :func:`resample_counts` (whole numbers exactly; other floats up to the order of the additions, last
    bits). Non-finite values are gathered and added, so a NaN spoils only the resamples that drew it."""
    if not np.isfinite(v).all():
        return v[resample_indices(seed, resamples, v.size)].sum(axis=1)
    return resample_counts(seed, resamples, v.size) @ v


@functools.lru_cache(maxsize=16)
def _kept_draws(seed: int, shapes: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    out = tuple(rng.integers(0, n, size=(r, n)) for r, n in shapes)
    for idx in out:
        idx.flags.writeable = False
    return out


LARGE_DRAWS = 1 << 23
"""Index matrices over :data:`KEPT_DRAWS` and up to this many entries (64 MiB) are kept too, the last two sets
only; larger ones are drawn each time."""


@functools.lru_cache(maxsize=2)
def _large_draws(seed: int, shapes: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, ...]:
    """Draws over :data:`KEPT_DRAWS`: a record's first-token ratios (each tier's 7 x 64 samples against plain's,
    2,000 resamples) draw one such set a dozen times in a row; two are kept, and go when other shapes come."""
    return _kept_draws.__wrapped__(seed, shapes)


@functools.lru_cache(maxsize=256)
def _median_ranks(seed: int, shapes: tuple[tuple[int, int], ...], which: int, order: tuple[int, ...]) -> np.ndarray:
    """Per resample of draw ``which``, the ranks of its middle order statistics (two rows; equal for odd n).

    A resample's median depends on the values only through their order, and few samples have few orders
    (3 have 6), so the sort of every resample is done once per order instead of once per call.
    """
    idx = draws(seed, shapes)[which]
    rank = np.empty(len(order), dtype=np.intp)
    rank[list(order)] = np.arange(len(order))
    srt = np.sort(rank[idx], axis=1)
    n = srt.shape[1]
    out = np.stack([srt[:, (n - 1) // 2], srt[:, n // 2]])
    out.flags.writeable = False
    return out


SMALL = 8
"""Samples up to this many are resampled through :func:`_median_ranks` (their orders repeat)."""


def resampled_medians(v: np.ndarray, seed: int, shapes: tuple[tuple[int, int], ...], which: int) -> np.ndarray:
    """Median of each resample of ``v`` by draw ``which``: what :func:`row_medians` of ``v[idx]`` gives."""
    if v.size > SMALL or not np.isfinite(v).all():
        return _large_medians(v.tobytes(), v.dtype.str, seed, shapes, which)
    order = np.argsort(v, kind="stable")
    lo, hi = _median_ranks(seed, shapes, which, tuple(order.tolist()))
    srt = v[order]
    return srt[lo] if v.size % 2 else 0.5 * (srt[lo] + srt[hi])


@functools.lru_cache(maxsize=8)
def _large_medians(data: bytes, dtype: str, seed: int, shapes: tuple[tuple[int, int], ...], which: int) -> np.ndarray:
    """:func:`row_medians` of a sample's resamples, kept for the few samples asked again: plain's first token is
    the denominator of every tier's ratio, and its 2,000 resamples of 448 need sorting once, not once a tier."""
    v = np.frombuffer(data, dtype=dtype)
    n = v.size
    middle = sorted_resamples(v, draws(seed, shapes)[which], ((n - 1) // 2, n // 2))  # as row_medians picks
    out = middle[:, 1] if n % 2 else 0.5 * (middle[:, 0] + middle[:, 1])
    out.flags.writeable = False
    return out
