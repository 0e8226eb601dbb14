"""Statistics: seeded intervals are reproducible and cover what they should; the speedup formula."""

from __future__ import annotations

import numpy as np
import pytest

from measure.stats import (
    char_error_rate,
    fit_exponent,
    paired_ratio,
    predicted_speedup,
    ratio_of_medians,
    summarize,
)


def test_summary_is_reproducible_and_brackets_the_median():
    x = [1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8]
    a, b = summarize(x, resamples=500, seed=1), summarize(x, resamples=500, seed=1)
    assert a == b
    assert a.value == pytest.approx(1.0)
    assert a.lo <= a.value <= a.hi
    assert a.q1 <= a.value <= a.q3


def test_ratio_interval_excludes_one_for_a_real_difference():
    rng = np.random.default_rng(0)
    base = 1 + 0.02 * rng.standard_normal(9)
    slow = 1.3 * base + 0.02 * rng.standard_normal(9)
    r = paired_ratio(slow, base, resamples=1000, seed=3)
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


def test_character_error_rate():
    assert char_error_rate("kitten", "sitting") == pytest.approx(3 / 7)
    assert char_error_rate("abc", "abc") == 0.0
