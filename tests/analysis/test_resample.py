"""The fast paths of the statistics give numpy's and the textbook loop's floats bit for bit.

Summaries and comparisons are cached on disk and printed on pages; a speed-up that moved a last bit would
change a cached figure without a reason. Values pinned here were computed by the code before the speed-ups.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from measure.analysis import resample, stats, tdist
from measure.analysis.stats import (
    column_medians,
    fit_exponent,
    mean_var,
    median,
    percentile_interval,
    ratio_of_medians,
    summarize,
)
from measure.analysis.tdist import t_quantile, t_sf


def _clear_caches() -> None:
    kept = (resample._kept_draws, resample.resample_counts, resample._median_ranks, stats._exponent_x)
    for f in (*kept, tdist._terms, tdist._t_quantile):
        f.cache_clear()


def test_t_sf_matches_closed_forms_and_pinned_values():
    for t in (-3.0, -0.5, 0.0, 0.7, 2.0, 12.0):
        assert t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, rel=1e-12, abs=1e-15)
        assert t_sf(t, 2) == pytest.approx(0.5 - t / (2 * math.sqrt(2 + t * t)), rel=1e-12, abs=1e-15)
        assert t_sf(t, math.inf) == pytest.approx(0.5 * math.erfc(t / math.sqrt(2)))
    pinned = [(1.3, 7.3, 0.11657077503308311), (-0.4, 3.0, 0.6420324230128149), (2.5, 12.8, 0.013418056334864913)]
    for t, df, want in pinned:
        assert t_sf(t, df) == want
    assert t_sf(0.02, 40.5) == 0.4920707915229737


def test_t_sf_at_real_df_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    for df in (2.5, 6.51, 13.37, 55.5):
        for t in (0.1, 1.0, 2.3, 6.0):
            x = df / (df + t * t)
            want = float(mpmath.betainc(df / 2, 0.5, 0, x, regularized=True) / 2)
            assert t_sf(t, df) == pytest.approx(want, rel=1e-12)


def test_t_quantile_is_cached_without_changing_a_bit():
    _clear_caches()
    pinned = [(0.975, 6, 2.446911851144969), (0.975, 13.37, 2.154306952430734), (0.995, 2.5, 7.163728138930824)]
    for p, df, want in pinned:
        assert t_quantile(p, df) == want
        assert t_quantile(p, float(df)) == want  # int and float df share one entry and one value
        assert tdist._t_quantile.__wrapped__(float(p), float(df)) == want
    assert tdist._t_quantile.cache_info().hits >= 3
    assert type(t_quantile(np.float64(0.975), np.float64(6.0))) is float


def test_fit_exponent_interval_is_unchanged_and_the_same_from_its_cache():
    t = np.array([3.0, 5.0, 9.0, 17.0, 33.0, 65.0, 5.0, 9.0])
    y = 0.002 * t**1.1 * np.exp(np.random.default_rng(4).normal(0, 0.05, t.size))
    want = (1.097286652839813, 1.0570490172141775, 1.1568523115298206)
    _clear_caches()
    cold = fit_exponent(t, y, resamples=1000, seed=20261202)
    warm = fit_exponent(t, y, resamples=1000, seed=20261202)
    # unchanged to 12 digits: numpy releases may round the last bit of a least-squares fit differently
    assert (cold.value, cold.lo, cold.hi) == pytest.approx(want, rel=1e-12) and warm == cold
    assert stats._exponent_x.cache_info().hits == 1


def test_ratio_of_medians_is_unchanged_for_few_and_many_samples():
    cases = [
        ([3.0, 1.0, 2.0], [2.5, 2.0, 2.25], 2000, 7, (0.8888888888888888, 0.4, 1.5)),
        (
            [1.0, 1.2, 0.9, 1.1, 1.3, 1.0],
            [0.5, 0.55, 0.6, 0.52, 0.58, 0.5],
            2000,
            7,
            (1.9626168224299065, 1.7241379310344829, 2.4),
        ),
        (
            list(np.linspace(1, 2, 12) ** 1.5),
            [1.0, 1.2, 0.9, 1.1, 1.3, 1.0],
            500,
            3,
            (1.75023805672082, 1.2366371927279871, 2.271319330335374),
        ),
    ]
    for num, den, resamples, seed, want in cases:
        _clear_caches()
        for _ in range(2):  # drawn and ranked, then from the caches
            e = ratio_of_medians(num, den, resamples=resamples, seed=seed)
            assert (e.value, e.lo, e.hi) == want


def test_resampled_medians_by_rank_equal_the_sorted_resamples():
    rng = np.random.default_rng(0)
    for n in range(1, resample.SMALL + 1):
        for values in (rng.lognormal(size=n), np.round(rng.uniform(0, 3, n))):  # ties too
            shapes = ((300, n), (300, 2))
            want = resample.row_medians(values[resample.draws(5, shapes)[0]])
            assert np.array_equal(resample.resampled_medians(values, 5, shapes, 0), want)


def test_percentile_interval_equals_the_full_sort():
    rng = np.random.default_rng(1)
    for size in (1, 2, 3, 40, 1000, 2001):
        boot = rng.lognormal(size=size)
        srt = np.sort(boot)
        for level in (0.5, 0.9, 0.95, 0.99):
            want = []
            for q in ((1 - level) / 2, 1 - (1 - level) / 2):
                pos = q * (size - 1)
                i, j = int(pos), min(int(pos) + 1, size - 1)
                want.append(float(srt[i] + (srt[j] - srt[i]) * (pos - i)))
            assert percentile_interval(boot, level) == tuple(want)


def test_median_quartiles_and_column_medians_are_numpys_floats():
    rng = np.random.default_rng(2)
    for n in (1, 2, 3, 4, 7, 8, 20, 21):
        for x in (rng.lognormal(0, 2, n), rng.integers(1, 10**12, n).astype(float), np.full(n, 0.1)):
            assert median(x) == float(np.median(x))
            e = summarize(x)
            q1, q3 = np.quantile(x, [0.25, 0.75])
            assert (e.value, e.q1, e.q3) == (float(np.median(x)), float(q1), float(q3))
        mat = rng.lognormal(size=(n, 5))
        assert np.array_equal(column_medians(mat), np.median(mat, axis=0))
    assert median(np.array([2, 3], dtype=np.int64)) == 2.5
    with_nan = np.array([1.0, np.nan, 3.0])
    assert math.isnan(median(with_nan)) and math.isnan(summarize(with_nan).value)


def test_mean_var_follows_numpys_summation_order():
    rng = np.random.default_rng(3)
    for n in range(2, stats.PAIRWISE_BLOCK + 3):
        for x in (rng.lognormal(0, 3, n), rng.normal(0, 1, n) * 10.0 ** rng.integers(-8, 8, n)):
            assert mean_var(x) == (float(x.mean()), float(x.var(ddof=1)))


def test_paired_ratio_uses_numpys_std():
    rng = np.random.default_rng(5)
    for n in (2, 3, 7, 12):
        a, b = rng.lognormal(0, 0.3, n), rng.lognormal(0, 0.3, n)
        d = np.log(a) - np.log(b)
        half = t_quantile(0.975, n - 1) * float(d.std(ddof=1)) / math.sqrt(n)
        mean = float(d.mean())
        e = stats.paired_ratio(a, b)
        assert (e.value, e.lo, e.hi) == (math.exp(mean), math.exp(mean - half), math.exp(mean + half))


def test_resampled_sums_are_the_gathered_sums_whole_numbers_exactly_other_floats_to_their_last_bits():
    """The fidelity figures' bootstraps add each resample's rows as one product with the draw counts (a record's
    fidelity verdicts took 6.5 ms a record that way down to 1.8; the summaries' ANALYSIS_VERSION moved with it)."""
    _clear_caches()
    rng = np.random.default_rng(5)
    idx = resample.resample_indices(7, 300, 64)
    whole = rng.integers(0, 40, 64).astype(float)
    assert np.array_equal(resample.resampled_sums(whole, 7, 300), whole[idx].sum(axis=1))
    floats = rng.lognormal(-8, 2, 64)
    np.testing.assert_allclose(resample.resampled_sums(floats, 7, 300), floats[idx].sum(axis=1), rtol=1e-13)
    assert resample.resample_counts(7, 300, 64).sum(axis=1).tolist() == [64.0] * 300
    floats[3] = np.nan  # a NaN spoils only the resamples that drew its row
    got = resample.resampled_sums(floats, 7, 300)
    drew = (idx == 3).any(axis=1)
    assert np.isnan(got[drew]).all() and np.isfinite(got[~drew]).all() and drew.any() and not drew.all()
