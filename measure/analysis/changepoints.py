"""Change points in one series of runs ordered by commit: where a metric stepped, and which runs to distrust.

A run is not one number: it is repeats with their own spread, on a machine whose run-to-run drift an A/A
calibration measured. So each run ``r`` of commit ``j`` enters as ``m_r``, the mean of its repeats' log
values, with variance ``v_r = s_r^2 / n_r + drift^2``; runs of one commit are pooled by inverse variance.
On that series the level is taken to be piecewise constant, and the segmentation minimises the weighted
squared error plus :data:`PENALTY` per change (a penalised segmentation, the cost two segments' means
save being ``z^2`` of their difference):

* candidates come from seeded binary segmentation (Kovacs et al. 2023: intervals at every scale, laid
  down in advance, each split at its best point) taken narrowest first (Baranowski et al. 2019), so a
  regression fixed ten commits later is seen in a year of commits; each is then moved to the best split
  between its neighbours, and the weakest is dropped while its ``z^2`` is under the penalty;
* no segment is shorter than :data:`MIN_SEGMENT` commits: one slow commit is an outlier until the next
  agrees with it;
* a loaded runner's run is far from the commits on both sides of it, where a step's first run is near
  the side it belongs to: such runs lose their weight (:func:`neighbour_weights`), and again once the
  segments are fitted, before the segmentation is redone.

Where each change lies, how large it is and whether it crept in over several commits is
:mod:`measure.analysis.change_fit`'s business; how often this finds a change that is not there is measured
by :func:`measure.analysis.change_fit.false_alarms`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

PENALTY = 20.0
"""What a change must save of the weighted squared error: the two segments' means differ by z >= 4.47."""
MIN_SEGMENT = 2
"""Commits a segment holds at least: a change is confirmed by a second commit at its level."""
MIN_COMMITS = 2 * MIN_SEGMENT
"""Commits a series needs before any change can be found in it."""
NEIGHBOURS = 3
"""Commits on each side whose median a run is held against when looking for loaded runners."""
DOWNWEIGHT = (2.5, 4.0)
"""A run this many standard deviations from both sides keeps all of its weight below the first, none past the
second (linearly between): loaded runners' runs, 15% slow on a 3% drift, land past it."""
SCALES = 2**-0.5
"""Seeded intervals shrink by this factor from one layer to the next."""
TINY = 1e-12
"""A commit none of whose runs counts keeps this share of the largest precision (so no segment weighs nothing)."""


@dataclass(frozen=True)
class Runs:
    """One series' runs, in commit order: what the detector reads (arrays of one length, but ``commits``)."""

    mean: np.ndarray
    """Mean of each run's repeats' log values."""
    var: np.ndarray
    """Variance of that mean: the run's own repeat spread over its repeats, plus drift^2."""
    commit: np.ndarray
    """Each run's commit, numbered 0 .. commits - 1 in order (non-decreasing)."""
    commits: int

    def only(self, keep: np.ndarray) -> Runs:
        return Runs(self.mean[keep], self.var[keep], self.commit[keep], self.commits)


def ramp(z: np.ndarray) -> np.ndarray:
    """A run's weight from its distance, in standard deviations, to the level it should share."""
    low, high = DOWNWEIGHT
    return np.clip((high - np.abs(z)) / (high - low), 0.0, 1.0)


def pool(runs: Runs, weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per commit: the weighted mean of its runs and its precision (sum of weight / var; 0 when none counts)."""
    precision = np.bincount(runs.commit, weight / runs.var, runs.commits)
    total = np.bincount(runs.commit, weight * runs.mean / runs.var, runs.commits)
    level = np.divide(total, precision, out=np.zeros(runs.commits), where=precision > 0)
    return level, np.maximum(precision, TINY * float(precision.max(initial=0.0)) or TINY)


def _side_medians(x: np.ndarray, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Median of the ``h`` values before and after each position (NaN where a side has none)."""
    pad = np.full(h, np.nan)
    padded = np.concatenate([pad, x, pad])
    idx = np.arange(x.size)[:, None] + np.arange(h)[None, :]
    return _row_medians(padded[idx]), _row_medians(padded[idx + h + 1])


def _row_medians(rows: np.ndarray) -> np.ndarray:
    """Each row's median over its values that are not NaN (NaN for a row of none): np.nanmedian, without its
    masked arrays (a hundred times slower on rows of three)."""
    ordered = np.sort(rows, axis=1)  # NaN sorts last
    k = np.count_nonzero(~np.isnan(rows), axis=1)
    lo = np.take_along_axis(ordered, np.maximum(k - 1, 0)[:, None] // 2, axis=1)[:, 0]
    hi = np.take_along_axis(ordered, (k // 2)[:, None], axis=1)[:, 0]
    return np.where(k > 0, (lo + hi) / 2, np.nan)


def neighbour_weights(runs: Runs) -> np.ndarray:
    """Each run's weight: full unless it is far from the commits before it *and* from those after it.

    A side with no commits counts as far, so the newest commit alone never confirms a step.
    """
    level, precision = pool(runs, np.ones(runs.mean.size))
    left, right = _side_medians(level, NEIGHBOURS)
    typical = float(np.median(1 / precision[precision > 0])) if np.any(precision > 0) else 0.0
    scale = np.sqrt(runs.var + 0.5 * typical)  # a median of three has about half a commit's variance
    with np.errstate(invalid="ignore"):
        near = np.fmin(np.abs(runs.mean - left[runs.commit]), np.abs(runs.mean - right[runs.commit]))
    return ramp(np.where(np.isnan(near), 0.0, near / scale))


@functools.lru_cache(maxsize=32)
def seeded_intervals(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded intervals of ``0 .. n`` (start, end), narrowest first: each layer's intervals overlap by half."""
    found: set[tuple[int, int]] = set()
    length = float(n)
    while length >= 2 * MIN_SEGMENT:
        size = round(length)
        count = max(1, math.ceil(2 * n / size) - 1)
        for start in np.unique(np.round(np.linspace(0, n - size, count)).astype(int)):
            found.add((int(start), int(start) + size))
        length *= SCALES
    ordered = sorted(found, key=lambda se: (se[1] - se[0], se[0]))
    return np.array([s for s, _ in ordered], dtype=int), np.array([e for _, e in ordered], dtype=int)


def _prefix(level: np.ndarray, precision: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([[0.0], np.cumsum(precision)]), np.concatenate([[0.0], np.cumsum(precision * level)])


def _gain(pw: np.ndarray, ps: np.ndarray, a: np.ndarray, k: np.ndarray, b: np.ndarray) -> np.ndarray:
    """z^2 of the means of [a, k) and [k, b): what splitting there saves of the weighted squared error."""
    wl, wr = pw[k] - pw[a], pw[b] - pw[k]
    d = (ps[k] - ps[a]) / wl - (ps[b] - ps[k]) / wr
    return wl * wr / (wl + wr) * d * d


@functools.lru_cache(maxsize=32)
def _split_layout(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every seeded interval's candidate splits, flat: (start, split, end) per candidate, interval by interval, and
    where each interval's candidates begin. The same for every series of ``n`` commits (and every shuffle of one)."""
    starts, ends = seeded_intervals(n)
    counts = np.maximum(ends - starts - 2 * MIN_SEGMENT + 1, 0)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    owner = np.repeat(np.arange(starts.size), counts)
    split = starts[owner] + MIN_SEGMENT + (np.arange(owner.size) - offsets[owner])
    out = (starts, ends, owner, split, offsets, counts)
    for a in out:
        a.flags.writeable = False
    return out


def _best_splits(pw: np.ndarray, ps: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every seeded interval's best split and its gain: np.argmax's pick (the first of the largest gains, or the
    first NaN), over every candidate of every interval in one pass."""
    starts, ends, owner, split, offsets, counts = _split_layout(n)
    best, where = np.zeros(starts.size), np.zeros(starts.size, dtype=int)
    if not split.size:
        return starts, ends, best, where
    gains = _gain(pw, ps, starts[owner], split, ends[owner])
    has = counts > 0
    nan = np.isnan(gains)
    top = np.maximum.reduceat(np.where(nan, -np.inf, gains), offsets[has])
    top = np.where(np.logical_or.reduceat(nan, offsets[has]), np.nan, top)
    peak = np.repeat(top, counts[has])
    hit = np.where(np.isnan(peak), nan, gains == peak)
    first = np.minimum.reduceat(np.where(hit, np.arange(gains.size), gains.size), offsets[has])
    best[has], where[has] = gains[first], split[first]
    return starts, ends, best, where


def _narrowest_first(pw: np.ndarray, ps: np.ndarray, n: int, penalty: float) -> list[int]:
    """Narrowest-over-threshold: the narrowest interval whose best split passes, then no interval holding it."""
    starts, ends, best, where = _best_splits(pw, ps, n)
    alive = np.ones(starts.size, dtype=bool)
    found = []
    for i in np.flatnonzero(best > penalty):  # the intervals are narrowest first already
        if alive[i]:
            k = where[i]
            found.append(int(k))
            alive &= ~((starts < k) & (ends > k))
    return sorted(found)


def _settle(pw: np.ndarray, ps: np.ndarray, found: list[int], n: int, penalty: float) -> list[int]:
    """Move each change to its best split between its neighbours; drop the weakest while it is under the penalty."""
    for _ in range(4):
        moved: list[int] = []
        bounds = [0, *found, n]
        for i in range(1, len(bounds) - 1):
            a, b = moved[-1] if moved else 0, bounds[i + 1]
            k = np.arange(a + MIN_SEGMENT, b - MIN_SEGMENT + 1)
            if k.size:
                moved.append(int(k[np.argmax(_gain(pw, ps, np.full(k.size, a), k, np.full(k.size, b)))]))
        while moved:
            cuts = np.array([0, *moved, n])
            gains = _gain(pw, ps, cuts[:-2], cuts[1:-1], cuts[2:])
            weakest = int(np.argmin(gains))
            if gains[weakest] >= penalty:
                break
            del moved[weakest]
        if moved == found:
            break
        found = moved
    return found


def segment(level: np.ndarray, precision: np.ndarray, penalty: float = PENALTY) -> list[int]:
    """The first commit of each new segment (ascending) of a series of commit means and their precisions."""
    n = level.size
    if n < MIN_COMMITS:
        return []
    pw, ps = _prefix(level, precision)
    return _settle(pw, ps, _narrowest_first(pw, ps, n, penalty), n, penalty)


def levels(level: np.ndarray, precision: np.ndarray, found: list[int]) -> np.ndarray:
    """Each commit's fitted level: its segment's weighted mean."""
    out = np.empty(level.size)
    for a, b in zip([0, *found], [*found, level.size], strict=True):
        w = precision[a:b].sum()
        out[a:b] = (precision[a:b] * level[a:b]).sum() / w if w > 0 else 0.0
    return out


@dataclass(frozen=True)
class Segmented:
    """A series as the detector left it: the changes' first commits, and the weights it gave each run."""

    found: tuple[int, ...]
    weight: np.ndarray
    level: np.ndarray
    precision: np.ndarray


def detect(runs: Runs, penalty: float = PENALTY) -> Segmented:
    """Segment, re-weigh each run against its fitted segment (restoring runs a step had put far from a side),
    and segment again."""
    weight = neighbour_weights(runs)
    level, precision = pool(runs, weight)
    found = segment(level, precision, penalty)
    fitted = levels(level, precision, found)
    weight = np.maximum(weight, ramp((runs.mean - fitted[runs.commit]) / np.sqrt(runs.var)))
    level, precision = pool(runs, weight)
    return Segmented(tuple(segment(level, precision, penalty)), weight, level, precision)


def drift_floor(mean: np.ndarray, own_var: np.ndarray) -> float:
    """The run-to-run drift this series itself shows: half the robust variance of consecutive runs'
    differences, less what their repeats explain (steps and outliers are rare, so a median ignores them)."""
    if mean.size < 3:
        return 0.0
    diffs = np.diff(mean)
    spread = 1.4826 * float(np.median(np.abs(diffs - np.median(diffs))))
    return math.sqrt(max(0.0, spread**2 / 2 - float(np.median(own_var))))
