"""Statistics checked against numbers worked out by hand, so a swapped axis or a dropped step shows.

Each test pins a value the formula gives and its nearest plausible mistake does not
(Holm against Bonferroni, the upper quartile against the max, slope against its inverse).
"""

from __future__ import annotations

import numpy as np
import pytest

from measure.analysis.resample import row_medians
from measure.analysis.stats import (
    Estimate,
    fit_exponent,
    holm,
    median_interval,
    paired_ratio,
    percentile_interval,
    predicted_speedup,
    ratio_bootstrap,
    ratio_of_medians,
    summarize,
)


def test_holm_on_distinct_p_values_worked_by_hand():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> kept monotone: 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # Bonferroni would give [0.04, 0.16, 0.12, 0.02]: the largest p is only multiplied by 1
    assert holm([0.2, 0.01]) == pytest.approx([0.2, 0.02])
    assert holm([0.6, 0.7]) == [1.0, 1.0]  # capped at 1, and still monotone
    assert holm([0.3]) == [0.3]
    assert holm([]) == []


def test_percentile_interval_interpolates_like_numpy():
    boot = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 0.0, 9.0, 7.0, 6.0, 8.0, 10.0])
    assert percentile_interval(boot, 0.8) == pytest.approx((1.0, 9.0))
    x = np.random.default_rng(0).standard_normal(101)
    assert percentile_interval(x) == pytest.approx(tuple(np.quantile(x, [0.025, 0.975])))
    assert percentile_interval(np.array([2.0, 4.0]), 0.5) == pytest.approx((2.5, 3.5))
    assert percentile_interval(np.array([3.0])) == (3.0, 3.0)


def test_ratio_bootstrap_is_new_over_base_and_needs_both_sides():
    boot = ratio_bootstrap([3.0, 3.0, 3.0], [1.0, 1.0], resamples=7, seed=0)
    assert boot.shape == (7,) and np.all(boot == 3.0)
    spread = ratio_bootstrap([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], resamples=400, seed=0)
    assert spread.min() < 1.0 < spread.max()
    with pytest.raises(ValueError, match="both sides"):
        ratio_bootstrap([], [1.0], resamples=10, seed=0)
    with pytest.raises(ValueError, match="both sides"):
        ratio_bootstrap([1.0], [], resamples=10, seed=0)
    e = ratio_of_medians([4.0, 6.0, 5.0], [1.0, 3.0, 2.0], resamples=300, seed=0)
    assert e.value == 2.5 and e.lo < 2.5 < e.hi


def test_estimate_excludes_only_what_lies_outside():
    e = Estimate(1.0, 0.5, 1.5)
    assert e.excludes(0.4) and e.excludes(1.6)
    assert not e.excludes(0.5) and not e.excludes(1.5) and not e.excludes(1.0)
    assert Estimate(1.0, 0.5, 1.5, 0.7, 1.2).to_dict() == {"value": 1.0, "lo": 0.5, "hi": 1.5, "q1": 0.7, "q3": 1.2}


def test_exponent_of_a_quadratic_is_two_not_a_half():
    t = np.arange(1.0, 30.0)
    e = fit_exponent(t, 0.003 * t**2, resamples=200, seed=0)
    assert e.value == pytest.approx(2.0) and e.lo == pytest.approx(2.0) and e.hi == pytest.approx(2.0)
    noisy = 0.003 * t**1.5 * np.exp(0.05 * np.random.default_rng(0).standard_normal(t.size))
    n = fit_exponent(t, noisy, resamples=300, seed=0)
    assert 1.4 < n.lo < n.value < n.hi < 1.6
    assert fit_exponent([1, 2, 4], [5, 5, 5], resamples=50, seed=0).value == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="three rows"):
        fit_exponent([1, 2], [1, 4], resamples=10, seed=0)
    with pytest.raises(ValueError, match="three rows"):
        fit_exponent([3, 3, 3], [1, 2, 3], resamples=10, seed=0)


def test_exponent_interval_skips_resamples_of_one_length():
    # three rows, two of one length: some resamples draw a single length (no slope), and are skipped
    e = fit_exponent([1.0, 1.0, 4.0], [1.0, 1.0, 16.0], resamples=200, seed=0)
    assert e.value == pytest.approx(2.0) and e.lo == pytest.approx(2.0) and e.hi == pytest.approx(2.0)


def test_predicted_speedup_clamps_acceptance_and_follows_leviathan():
    assert predicted_speedup(1.0, 3, 0.25) == pytest.approx(4 / 1.75)
    assert predicted_speedup(1.5, 3, 0.25) == pytest.approx(4 / 1.75)  # clamped to 1
    assert predicted_speedup(-0.5, 3, 0.25) == pytest.approx(1 / 1.75)  # clamped to 0
    assert predicted_speedup(0.5, 2, 0.0) == pytest.approx(1.75)  # 1 + a + a^2
    assert predicted_speedup(0.5, 2, 1.0) == pytest.approx(1.75 / 3)


def testrow_medians_of_odd_and_even_rows():
    m = row_medians
    assert m(np.array([[3.0, 1.0, 2.0]])).tolist() == [2.0]
    assert m(np.array([[5.0, 1.0, 4.0, 2.0, 3.0]])).tolist() == [3.0]
    assert m(np.array([[4.0, 1.0, 3.0, 2.0]])).tolist() == [2.5]
    assert m(np.array([[6.0, 5.0, 4.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0, 9.0, 9.0]])).tolist() == [3.5, 1.0]


def test_every_bootstrap_is_reproducible_from_its_seed():
    rng = np.random.default_rng(7)
    a, b = rng.lognormal(size=25), rng.lognormal(size=25)
    lengths = np.arange(2.0, 27.0)
    seconds = lengths**1.3 * rng.lognormal(sigma=0.2, size=25)
    for f in (
        lambda: ratio_of_medians(a, b, resamples=300, seed=11),
        lambda: tuple(ratio_bootstrap(a, b, resamples=300, seed=11)),
        lambda: fit_exponent(lengths, seconds, resamples=300, seed=11),
    ):
        assert f() == f()


def test_every_resample_can_draw_the_first_sample():
    # the first sample is the outlier: a resample holding it twice has it as median
    assert ratio_bootstrap([10.0, 1.0, 1.0], [1.0, 1.0, 1.0], resamples=400, seed=0).max() == 10.0
    assert ratio_bootstrap([1.0, 1.0, 1.0], [0.1, 1.0, 1.0], resamples=400, seed=0).max() == pytest.approx(10.0)
    # rows (1, 1), (2, 2), (4, 16): slopes 1, 2 and 3 on log-log; without the first row only 3 is left
    assert fit_exponent([1.0, 2.0, 4.0], [1.0, 2.0, 16.0], resamples=400, seed=0).lo < 2.0


def test_a_stated_level_sets_every_interval():
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(size=30), rng.lognormal(size=30)
    lengths = np.arange(2.0, 32.0)
    seconds = lengths * rng.lognormal(sigma=0.3, size=30)
    for f in (
        lambda level: paired_ratio(a, b, level=level),
        lambda level: summarize(a, level=level),
        lambda level: ratio_of_medians(a, b, resamples=400, seed=0, level=level),
        lambda level: fit_exponent(lengths, seconds, resamples=400, seed=0, level=level),
    ):
        narrow, wide = f(0.5), f(0.95)
        assert wide.lo < narrow.lo < narrow.hi < wide.hi


def test_an_exponent_over_lengths_close_together():
    # log lengths 10..12 span 0.18: every resample's spread is far below 1 and must still count
    e = fit_exponent([10.0, 11.0, 12.0, 10.0, 12.0], [1.0, 1.1, 1.2, 1.0, 1.2], resamples=200, seed=0)
    assert e.lo == pytest.approx(1.0) and e.hi == pytest.approx(1.0)


def test_errors_say_exactly_what_is_missing():
    with pytest.raises(ValueError, match=r"^no samples to summarize$"):
        summarize([])
    with pytest.raises(ValueError, match=r"^no samples for an interval$"):
        median_interval([])
    for num, den in (([1.0], []), ([], []), ([1.0, 2.0], [1.0])):
        with pytest.raises(ValueError, match=r"^paired samples must have the same non-zero length$"):
            paired_ratio(num, den)
    with pytest.raises(ValueError, match=r"^a ratio needs samples on both sides$"):
        ratio_bootstrap([], [], resamples=10, seed=0)
    with pytest.raises(ValueError, match=r"^an exponent needs at least three rows of different lengths$"):
        fit_exponent([1, 1, 1], [1, 2, 3], resamples=10, seed=0)
