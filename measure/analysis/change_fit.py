"""What each change point of a series says: where it lies, how large it is, and how often such a list is wrong.

Given the segmentation :func:`measure.analysis.changepoints.detect` found:

* **where**: each change is refitted between its neighbours as a step at every commit of a window, and as a
  linear ramp between every pair of commits, on a loss that caps each run's squared error at
  :data:`CAP`^2 (a loaded runner's run then costs the same wherever the change is put). The best step is
  where it most likely lies, and the commits whose step costs no more than :data:`RANGE` over it are its
  range (a likelihood ratio of 1 in 20); a ramp that beats every step by :data:`CREEP_GAIN` is a creep, its
  range the ramp. Two changes in one direction that one ramp explains as well are one creep.
* **how large**: the ratio of the two segments' geometric means (the segments either side, less the
  range), with a 95% t interval whose variance is the model's, scaled up by the segments' own scatter
  when that is larger.
* **how sure**: the evidence is ``z``, the segments' difference in standard errors (the segmentation needs
  ``z^2`` >= :data:`~measure.analysis.changepoints.PENALTY`); and the false-alarm rate is measured, not
  assumed: the series' commits are shuffled within their segments (each run less its segment's level,
  so the shuffled series has no change but keeps this series' own noise, outliers included) and searched
  again; the mean count found is the false alarms expected of this series.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from measure.analysis.changepoints import MIN_COMMITS, MIN_SEGMENT, PENALTY, Runs, Segmented, detect, levels, pool
from measure.analysis.tdist import t_quantile

CAP = 3.0
"""A run's squared error, in standard deviations, counts at most CAP^2 when a change is placed."""
RANGE = 6.0
"""A step this much costlier than the best placement is outside the range: a likelihood ratio under 1/20."""
CREEP_GAIN = 6.6
"""A ramp must beat every step by this (chi-square, 1 df, 1%) to be called a creep."""
WINDOW = 16
"""Commits either side of a change that its placement, ramp and range are sought in."""
PERMUTED_COMMITS = 2000
"""Commits shuffled per series to measure its false alarms (a short series is shuffled more often)."""
PERMUTATIONS = (1, 20)
"""The fewest and most shuffles of one series."""


@dataclass(frozen=True)
class Change:
    """One change point of a series, in commit numbers (0 = the series' first commit)."""

    at: int
    """The most likely first commit at the new level."""
    first: int
    """The first commit the change may lie at: ``first - 1`` is the last good commit."""
    last: int
    """The commit by which it is complete: the first bad commit."""
    log_ratio: float
    lo: float
    hi: float
    """95% interval of the log ratio of the segments' geometric means (after / before)."""
    z: float
    """The segments' difference in standard errors (signed; the segmentation needs |z| >= sqrt(PENALTY))."""
    before: int
    after: int
    """Commits in the segment before and after it."""
    creep: bool
    """Spread over several commits (a ramp fitted better than any step)."""


def _window(runs: Runs, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs of commits [a, b) (the runs are in commit order)."""
    i, j = np.searchsorted(runs.commit, (a, b))
    return runs.commit[i:j], runs.mean[i:j], np.sqrt(runs.var[i:j])


def _costs(runs: Runs, a: int, b: int, mu: tuple[float, float], s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Capped loss of the runs of commits [a, b) under a change from mu[0] to mu[1] over commits s .. e
    (s == e: a step at s; else commits s .. e - 1 part-way, linearly), for every (s, e) given."""
    c, m, sd = _window(runs, a, b)
    frac = np.clip((c[None, :] - s[:, None] + 1) / (e - s + 1)[:, None], 0.0, 1.0)
    z = (m[None, :] - mu[0] - (mu[1] - mu[0]) * frac) / sd[None, :]
    return np.minimum(z * z, CAP * CAP).sum(axis=1)


def _level(seg: Segmented, a: int, b: int) -> tuple[float, float, float, int]:
    """(weighted mean, its model variance, the segment's scatter over it (>= 1), commits) of commits [a, b)."""
    x, w = seg.level[a:b], seg.precision[a:b]
    total = float(w.sum())
    if total <= 0:
        return float(np.mean(x)) if x.size else 0.0, math.inf, 1.0, b - a
    mu = float((w * x).sum() / total)
    counted = int(np.count_nonzero(w))
    scatter = float((w * (x - mu) ** 2).sum()) / (counted - 1) if counted > 1 else 1.0
    return mu, 1 / total, max(1.0, scatter), b - a


def _place(runs: Runs, seg: Segmented, lo: int, hi: int, s0: int, e0: int) -> tuple[int, int, int, bool]:
    """(at, first, last, creep) of a change first put at commits s0 .. e0, between segments [lo, s0), [e0, hi):
    the best step, and the commits that every placement (step or ramp) within RANGE of the best one spans."""
    mu = (_level(seg, lo, s0)[0], _level(seg, e0, hi)[0])
    s_from, e_to = max(lo + MIN_SEGMENT, s0 - WINDOW), min(hi - MIN_SEGMENT, e0 + WINDOW)
    if e_to < s_from:
        return s0, s0, e0, e0 > s0
    s_all, e_all = np.meshgrid(np.arange(s_from, e_to + 1), np.arange(s_from, e_to + 1), indexing="ij")
    ok = e_all >= s_all
    s, e = s_all[ok], e_all[ok]
    cost = _costs(runs, s_from - 1, e_to + 1, mu, s, e)  # outside, every placement costs the same
    step = s == e
    best_step = float(cost[step].min())
    at = int(s[step][np.argmin(cost[step])])
    i = int(np.argmin(cost))
    if float(cost[i]) + CREEP_GAIN < best_step:  # a ramp: its span
        return at, int(s[i]), int(e[i]), True
    near = s[step][cost[step] <= best_step + RANGE]
    return at, int(near.min()), int(near.max()), False


def _one_ramp(runs: Runs, seg: Segmented, lo: int, k1: int, k2: int, hi: int) -> bool:
    """Whether one ramp from [lo, k1) to [k2, hi) fits about as well as two steps, at k1 and at k2."""
    a, b, c = _level(seg, lo, k1)[0], _level(seg, k1, k2)[0], _level(seg, k2, hi)[0]
    one, two = np.array([k1]), np.array([k2])
    steps = float(_costs(runs, lo, k2, (a, b), one, one)[0] + _costs(runs, k1, hi, (b, c), two, two)[0])
    s_all, e_all = np.meshgrid(
        np.arange(max(lo + MIN_SEGMENT, k1 - WINDOW), k1 + 1), np.arange(k2, min(hi - MIN_SEGMENT, k2 + WINDOW) + 1)
    )
    ramp = float(_costs(runs, lo, hi, (a, c), s_all.ravel(), e_all.ravel()).min()) if s_all.size else math.inf
    return ramp <= steps + CREEP_GAIN / 2


def _merged(runs: Runs, seg: Segmented) -> list[tuple[int, int]]:
    """The changes as (start, end) commits: steps, with consecutive ones in one direction that one ramp
    explains as well joined into one."""
    found = list(seg.found)
    fitted = levels(seg.level, seg.precision, found)
    out: list[tuple[int, int]] = []
    for i, k in enumerate(found):
        if out:
            s, e = out[-1]
            lo, hi = out[-2][1] if len(out) > 1 else 0, found[i + 1] if i + 1 < len(found) else runs.commits
            same = (fitted[e] - fitted[e - 1]) * (fitted[k] - fitted[k - 1]) > 0
            if same and k - e <= WINDOW and _one_ramp(runs, seg, lo, s, k, hi):
                out[-1] = (s, k)
                continue
        out.append((k, k))
    return out


def describe(runs: Runs, seg: Segmented) -> tuple[Change, ...]:
    """Each change the segmentation found: placed, ranged, sized, oldest first."""
    spans = _merged(runs, seg)
    out = []
    for i, (s0, e0) in enumerate(spans):
        lo = spans[i - 1][1] if i else 0
        hi = spans[i + 1][0] if i + 1 < len(spans) else runs.commits
        at, first, last, creep = _place(runs, seg, lo, hi, s0, e0)
        cut_a, cut_b = (first, last) if creep else (at, at)
        mu_a, var_a, phi_a, n_a = _level(seg, lo, cut_a)
        mu_b, var_b, phi_b, n_b = _level(seg, cut_b, hi)
        d = mu_b - mu_a
        se2 = phi_a * var_a + phi_b * var_b
        parts = (phi_a * var_a) ** 2 / max(1, n_a - 1) + (phi_b * var_b) ** 2 / max(1, n_b - 1)
        df = se2**2 / parts if parts > 0 else math.inf
        half = t_quantile(0.975, max(1.0, df)) * math.sqrt(se2) if math.isfinite(se2) else math.inf
        z = d / math.sqrt(var_a + var_b) if math.isfinite(var_a + var_b) and var_a + var_b > 0 else 0.0
        out.append(Change(at, first, last, d, d - half, d + half, z, n_a, n_b, creep))
    return tuple(out)


def permutations_for(commits: int) -> int:
    """How often a series of this many commits is shuffled to measure its false alarms."""
    few, most = PERMUTATIONS
    return int(min(most, max(few, math.ceil(PERMUTED_COMMITS / max(1, commits)))))


def false_alarms(runs: Runs, seg: Segmented, permutations: int, rng: np.random.Generator) -> float:
    """The mean count of changes found in this series with its changes taken out and its commits shuffled
    within their segments: what the search finds in noise like this series' own."""
    if runs.commits < 2 * MIN_SEGMENT or permutations < 1:
        return 0.0
    fitted = levels(seg.level, seg.precision, list(seg.found))
    flat = runs.mean - fitted[runs.commit]
    bounds = [0, *seg.found, runs.commits]
    found = 0
    for _ in range(permutations):
        order = np.concatenate([a + rng.permutation(b - a) for a, b in pairwise(bounds)])
        shuffled = Runs(flat, runs.var, order[runs.commit], runs.commits)
        found += len(detect(shuffled).found)
    return found / permutations


def would_start(runs: Runs, seg: Segmented, mean: np.ndarray, var: np.ndarray) -> tuple[float, float] | None:
    """(log ratio, z) when a new commit's runs (``mean``, ``var`` as :class:`Runs` holds them) would start a
    slower segment once one more commit agrees with them, on a last segment of at least MIN_SEGMENT commits."""
    start = seg.found[-1] if seg.found else 0
    if runs.commits - start < MIN_SEGMENT or mean.size == 0:
        return None
    mu, var_tail, _, _ = _level(seg, start, runs.commits)
    new, _ = pool(Runs(mean, var, np.zeros(mean.size, dtype=int), 1), np.ones(mean.size))
    precision = float((1 / var).sum())
    d = float(new[0]) - mu
    twice = 2 * precision  # this commit and one more like it: a segment of MIN_SEGMENT
    gain = d * d / (var_tail + 1 / twice)
    if d <= 0 or gain < PENALTY:
        return None
    return d, d / math.sqrt(var_tail + 1 / precision)


@dataclass(frozen=True)
class Searched:
    """One series searched: the segmentation, its changes, and the false alarms measured on it."""

    segmented: Segmented
    changes: tuple[Change, ...]
    false_alarms: float
    permutations: int


def search(runs: Runs, seed: int) -> Searched:
    """Detect, describe and measure the false alarms of one series (``seed``: the shuffles', fixed per series)."""
    seg = detect(runs)
    shuffles = permutations_for(runs.commits) if runs.commits >= MIN_COMMITS else 0
    return Searched(seg, describe(runs, seg), false_alarms(runs, seg, shuffles, np.random.default_rng(seed)), shuffles)
