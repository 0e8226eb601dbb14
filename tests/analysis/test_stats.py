"""Statistics: seeded intervals are reproducible and cover what they should; the speedup formula."""

from __future__ import annotations

import numpy as np
import pytest

from measure.analysis.resample import row_medians, sorted_resamples
from measure.analysis.stats import (
    Estimate,
    fit_exponent,
    holm,
    median_interval,
    median_level,
    paired_ratio,
    percentile_interval,
    predicted_speedup,
    ratio_bootstrap,
    ratio_of_medians,
    summarize,
)
from measure.analysis.tdist import t_quantile, t_sf


def test_summary_is_reproducible_and_brackets_the_median():
    x = [1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8]
    a, b = summarize(x), summarize(x)
    assert a == b and a.level == 0.95
    assert a.value == pytest.approx(1.0)
    assert a.lo <= a.value <= a.hi
    assert a.q1 <= a.value <= a.q3


def test_ratio_interval_excludes_one_for_a_real_difference():
    rng = np.random.default_rng(0)
    base = 1 + 0.02 * rng.standard_normal(9)
    slow = 1.3 * base + 0.02 * rng.standard_normal(9)
    r = paired_ratio(slow, base)
    assert not r.lo <= 1.0 <= r.hi and 1.2 < r.value < 1.4
    assert ratio_of_medians(slow, base, resamples=1000, seed=3).lo > 1.1


def test_exponent_tells_linear_from_quadratic():
    t = np.arange(2, 40)
    assert fit_exponent(t, 0.001 * t, resamples=200, seed=0).value == pytest.approx(1.0)
    assert fit_exponent(t, 0.001 * t**2, resamples=200, seed=0).value == pytest.approx(2.0)


def test_leviathan_speedup():
    assert predicted_speedup(1.0, 4, 0.0) == pytest.approx(5.0)
    assert predicted_speedup(0.0, 4, 0.5) == pytest.approx(1 / 3)
    a, k, c = 0.8, 4, 0.1
    assert predicted_speedup(a, k, c) == pytest.approx((1 - a ** (k + 1)) / ((1 - a) * (k * c + 1)))


def test_holm_by_hand_on_distinct_p_values():
    # sorted: 0.005 * 4 = 0.02, 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, then 0.04 * 1 = 0.04 raised to 0.06 (monotone)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_student_t_matches_tables():
    assert t_quantile(0.975, 8) == pytest.approx(2.306004, abs=1e-5)
    assert t_quantile(0.975, 4) == pytest.approx(2.776445, abs=1e-5)
    assert t_quantile(0.95, 30) == pytest.approx(1.697261, abs=1e-5)
    assert t_quantile(0.975, float("inf")) == pytest.approx(1.959964, abs=1e-5)
    assert t_sf(0.0, 3.5) == pytest.approx(0.5)
    assert t_sf(-2.306004, 8) == pytest.approx(0.975, abs=1e-6)


def test_order_statistic_levels_are_exact_and_honest_for_few_repeats():
    assert median_level(7, 1) == pytest.approx(1 - 2 / 128)  # [min, max] of 7: 98.4%
    assert median_level(7, 2) == pytest.approx(1 - 16 / 128)  # [x(2), x(6)]: 87.5%
    # Five repeats cannot reach 95% without assumptions: [min, max], at its exact 93.75%.
    assert median_interval([3.0, 1.0, 5.0, 2.0, 4.0]) == (1.0, 5.0, pytest.approx(0.9375))
    assert median_interval([1.0, 2.0, 3.0])[2] == pytest.approx(0.75)
    lo, hi, level = median_interval(np.arange(1.0, 8.0))
    assert level == 0.95 and 1 < lo < 2 and 6 < hi < 7  # interpolated between x(1)..x(2), x(6)..x(7)


@pytest.mark.parametrize("n", [5, 6, 7, 9, 15])
@pytest.mark.parametrize("shape", ["lognormal", "skewed"])
def test_median_interval_covers_what_it_states(n, shape):
    """4,000 simulated runs: the stated level (or, for n = 5, the exact one reported) within +/-2 points."""
    rng = np.random.default_rng(n)
    sims = 4000
    if shape == "lognormal":  # session-to-session noise on the log scale, as a shared host shows
        x, median = np.exp(0.15 * rng.standard_normal((sims, n))), 1.0
    else:  # a fast floor and a long slow tail
        x, median = 1 + rng.exponential(0.2, (sims, n)), 1 + 0.2 * np.log(2)
    found = [median_interval(row) for row in x]
    covered = np.mean([lo <= median <= hi for lo, hi, _ in found])
    (level,) = {lv for _, _, lv in found}
    assert level == (0.9375 if n == 5 else 0.95)
    assert abs(covered - level) < 0.02, (covered, level)


def test_paired_ratio_interval_covers_what_it_states():
    """2,000 simulated runs of 7 paired repeats with a shared session effect: the 95% interval covers 93-97%."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2000):
        host = 0.1 * rng.standard_normal(7)  # what a repeat's host state does to both cases
        a = np.exp(np.log(1.5) + host + 0.05 * rng.standard_normal(7))
        b = np.exp(host + 0.05 * rng.standard_normal(7))
        r = paired_ratio(a, b)
        hits += r.lo <= 1.5 <= r.hi
    assert 0.93 <= hits / 2000 <= 0.97


@pytest.mark.parametrize("n", [1, 2, 7, 448, 32768, 32769])
def test_sorted_resamples_are_the_float_sort_bit_for_bit(n):
    """Order statistics by sorted ranks equal numpy's sort of the resampled floats, ties and NaN included, on
    both sides of the int16 ranks' limit."""
    rng = np.random.default_rng(n)
    v = np.round(rng.lognormal(0, 1, n), 2)  # rounded: many ties
    if n > 2:
        v[1] = np.nan
        v[2] = -0.0
    idx = rng.integers(0, n, size=(5 if n > 1000 else 300, n))
    columns = [0, n // 2, n - 1, n // 2]
    assert np.array_equal(sorted_resamples(v, idx, columns), np.sort(v[idx], axis=1)[:, columns], equal_nan=True)


# --- Statistics checked against numbers worked out by hand, so a swapped axis or a dropped step shows ---


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


def test_percentile_interval_of_equal_infinities_is_infinite():
    """A perplexity ratio past a float's range is infinite in every resample: the interval says so, never NaN."""
    assert percentile_interval(np.full(400, np.inf)) == (np.inf, np.inf)
    assert percentile_interval(np.array([1.0] * 50 + [np.inf] * 50)) == (1.0, np.inf)


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
    assert not e.lo <= 0.4 <= e.hi and not e.lo <= 1.6 <= e.hi
    assert all(e.lo <= x <= e.hi for x in (0.5, 1.5, 1.0))
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
