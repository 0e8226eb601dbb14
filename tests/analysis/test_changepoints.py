"""The change-point search on series built with known steps, outliers and creeps (never this machine's timings).

Covers :mod:`measure.analysis.changepoints` (the segmentation) and :mod:`measure.analysis.change_fit` (where each
change lies, its size, the false alarms measured by shuffling).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from measure.analysis.change_fit import describe, false_alarms, search, would_start
from measure.analysis.changepoints import MIN_COMMITS, Runs, detect, drift_floor, neighbour_weights, seeded_intervals

SLOW = math.log(1.15)
"""A loaded runner: every repeat of the run 15% slower."""


def series(
    commits: int,
    steps: dict[int, float] | None = None,
    runs: int = 2,
    drift: float = 0.01,
    loaded: dict[int, int] | None = None,
    creep: tuple[int, int, float] | None = None,
    seed: int = 0,
    model: float | None = None,
) -> Runs:
    """``runs`` runs a commit of log level 0, stepping by ``steps`` {commit: ratio}, a run-to-run ``drift`` (sd of
    the log) and 5 repeats of 0.5% each; ``loaded`` {commit: runs of it 15% slower}; ``creep`` (first commit,
    commits, ratio per commit); ``model``: the drift the detector is told (default: the true one)."""
    rng = np.random.default_rng(seed)
    level = np.zeros(commits)
    for at, ratio in (steps or {}).items():
        level[at:] += math.log(ratio)
    if creep is not None:
        first, span, ratio = creep
        for i in range(span):
            level[first + i :] += math.log(ratio)
    commit = np.repeat(np.arange(commits), runs)
    shift = level[commit] + rng.normal(0, drift, commit.size)
    for at, n in (loaded or {}).items():
        shift[np.flatnonzero(commit == at)[:n]] += SLOW
    repeats = shift[:, None] + rng.normal(0, 0.005, (commit.size, 5))
    told = drift if model is None else model
    return Runs(repeats.mean(axis=1), repeats.var(axis=1, ddof=1) / 5 + told**2, commit, commits)


def test_planted_steps_come_out_where_and_as_large_as_planted():
    runs = series(120, {40: 1.05, 80: 0.92})
    found = describe(runs, detect(runs))
    assert [c.at for c in found] == [40, 80]
    for c, ratio in zip(found, (1.05, 0.92), strict=True):
        assert c.lo < math.log(ratio) < c.hi  # the 95% interval holds the planted size
        assert abs(math.exp(c.log_ratio) - ratio) < 0.01
        assert c.first <= c.at <= c.last and c.last - c.first <= 2 and not c.creep
        assert abs(c.z) >= math.sqrt(20)
    assert (found[0].before, found[0].after, found[1].after) == (40, 40, 40)


def test_a_step_free_series_with_loaded_runners_has_no_change_point():
    """One run in 10 on a loaded runner, and two commits with both runs loaded: outliers, never steps."""
    loaded = {i: 1 for i in range(3, 200, 10)} | {77: 2, 150: 2}
    runs = series(200, loaded=loaded, drift=0.01, seed=3)
    seg = detect(runs)
    assert seg.found == ()
    weights = neighbour_weights(runs)
    slowed = [np.flatnonzero(runs.commit == at)[0] for at in loaded]
    assert np.all(weights[slowed] < 0.5) and np.median(np.delete(weights, slowed)) == 1.0


def test_a_loaded_runner_beside_a_step_moves_it_by_no_more_than_one_commit():
    runs = series(100, {50: 1.06}, loaded={48: 1, 49: 1, 51: 1}, seed=5)
    (change,) = describe(runs, detect(runs))
    assert abs(change.at - 50) <= 1 and change.log_ratio > 0


def test_a_creep_is_one_change_of_its_whole_size_over_its_commits():
    runs = series(120, creep=(60, 10, 1.005), drift=0.002)
    (change,) = describe(runs, detect(runs))
    assert change.creep
    assert change.first <= 61 and change.last >= 68  # the range spans the creep (60-69), not one commit of it
    assert abs(math.exp(change.log_ratio) - 1.005**10) < 0.01


def test_a_regression_fixed_five_commits_later_is_found_in_a_long_series():
    """Seeded intervals at every scale: a five-commit excursion among 600 commits is not averaged away."""
    runs = series(600, {300: 1.10, 305: 1 / 1.10})
    found = describe(runs, detect(runs))
    assert [(c.at, c.log_ratio > 0) for c in found] == [(300, True), (305, False)]


def test_the_newest_commit_alone_never_confirms_a_change_but_two_do():
    one = series(60, {59: 1.30})
    assert detect(one).found == ()
    two = series(60, {58: 1.30})
    assert detect(two).found == (58,)


def test_a_new_commit_would_start_a_change_only_when_slower_by_what_a_change_needs():
    runs = series(60)
    seg = detect(runs)
    var = runs.var[:2]
    started = would_start(runs, seg, np.log([1.08, 1.08]), var)
    assert started is not None and abs(math.exp(started[0]) - 1.08) < 0.01 and started[1] > 4
    assert would_start(runs, seg, np.log([1.003, 0.999]), var) is None  # within the noise
    assert would_start(runs, seg, np.log([0.90, 0.90]), var) is None  # faster: nothing to warn of


def test_the_false_alarm_rate_is_measured_on_the_series_own_noise():
    """Told the right drift, shuffling finds few changes; told a third of it, shuffling finds many: the
    stated rate follows how the detector behaves on this noise, not what its model assumes."""
    calibrated = series(300, seed=11)
    assert false_alarms(calibrated, detect(calibrated), 10, np.random.default_rng(0)) < 0.5
    wrong = series(300, drift=0.03, model=0.01, seed=11)
    assert false_alarms(wrong, detect(wrong), 10, np.random.default_rng(0)) > 3


def test_a_search_is_the_same_every_time():
    runs = series(150, {70: 1.04}, seed=2)
    first, again = search(runs, 7), search(runs, 7)
    assert first.changes == again.changes and first.false_alarms == again.false_alarms
    assert first.permutations >= 1


@pytest.mark.parametrize("commits", [1, 2, MIN_COMMITS - 1])
def test_a_series_too_short_to_hold_a_change_gives_none(commits):
    runs = series(commits, {commits - 1: 2.0} if commits > 1 else None)
    found = search(runs, 0)
    assert found.changes == () and found.false_alarms == 0.0


def test_seeded_intervals_cover_every_scale_and_the_drift_floor_ignores_steps():
    starts, ends = seeded_intervals(100)
    assert (starts[-1], ends[-1]) == (0, 100) and np.all(np.diff(ends - starts) >= 0)  # narrowest first
    assert min(ends - starts) == 4
    rng = np.random.default_rng(0)
    mean = rng.normal(0, 0.02, 400) + np.where(np.arange(400) >= 200, 0.3, 0.0)  # a step of 35%
    assert abs(drift_floor(mean, np.zeros(400)) - 0.02) < 0.004


def _best_splits_by_length(pw, ps, n):
    """The search before it was flattened: one layer of seeded intervals (one length) at a time."""
    from measure.analysis.changepoints import MIN_SEGMENT, _gain, seeded_intervals

    starts, ends = seeded_intervals(n)
    best, where = np.zeros(starts.size), np.zeros(starts.size, dtype=int)
    lengths = ends - starts
    for size in np.unique(lengths):
        sel = np.flatnonzero(lengths == size)
        s, e = starts[sel][:, None], ends[sel][:, None]
        k = s + np.arange(MIN_SEGMENT, size - MIN_SEGMENT + 1)[None, :]
        gains = _gain(pw, ps, s, k, e)
        pick = np.argmax(gains, axis=1)
        best[sel], where[sel] = gains[np.arange(sel.size), pick], k[np.arange(sel.size), pick]
    return starts, ends, best, where


@pytest.mark.parametrize("n", [4, 5, 9, 40, 203])
def test_every_intervals_best_split_is_argmaxs_pick_bit_for_bit(n):
    """One pass over every candidate split (the change search's false alarms ran it 8,000 times a build: 3.4 s
    of a 1,000-record build, now 1.9) picks what np.argmax picked layer by layer: the first of the largest
    gains, and the first NaN where a side weighs nothing."""
    from measure.analysis.changepoints import _best_splits, _prefix

    rng = np.random.default_rng(n)
    level, precision = rng.normal(0, 1, n), rng.uniform(0.5, 2, n)
    level[n // 2 :] += 3  # a step, so the gains are far from flat
    for zeros in (0, n // 3):
        precision[:zeros] = 0.0  # commits that weigh nothing: 0/0 gains (NaN) where a side is only them
        pw, ps = _prefix(level, precision)
        with np.errstate(invalid="ignore", divide="ignore"):
            got, want = _best_splits(pw, ps, n), _best_splits_by_length(pw, ps, n)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    pw, ps = _prefix(np.repeat(1.0, n), np.ones(n))  # flat: every gain 0, ties everywhere
    for a, b in zip(_best_splits(pw, ps, n), _best_splits_by_length(pw, ps, n), strict=True):
        np.testing.assert_array_equal(a, b)
