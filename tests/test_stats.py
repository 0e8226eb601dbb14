"""Statistics: seeded intervals are reproducible and cover what they should; the speedup formula."""

from __future__ import annotations

import numpy as np
import pytest

from measure.analysis.resample import sorted_resamples
from measure.analysis.stats import (
    fit_exponent,
    holm,
    median_interval,
    median_level,
    paired_ratio,
    predicted_speedup,
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
    assert r.excludes(1.0) and 1.2 < r.value < 1.4
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
