"""Comparisons judged together give, float for float, what judging each pair alone gives.

A history compares thousands of consecutive records; :func:`compare_many` and the batch t functions do it
with the continued fraction run over every case at once, which must not move a p-value or an interval.
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest

from measure.analysis import tdist
from measure.analysis.comparison import CaseSamples, Drift, compare, compare_many
from measure.analysis.stats import summarize
from measure.policy import Policy
from measure.results.cache import SummaryCache


def _samples(rng: np.random.Generator, scale: float, noise: float, cases: int = 12) -> dict[str, CaseSamples]:
    out = {}
    for i in range(cases):
        ms = (1.0 + i / 10) * scale * np.exp(rng.normal(0, noise, 5 + i % 4))
        out[f"case-{i}"] = CaseSamples("greedy", tuple(float(x) for x in ms), summarize(ms))
    return out


def _jobs() -> list[tuple[dict[str, CaseSamples], dict[str, CaseSamples], Policy]]:
    rng = np.random.default_rng(0)
    runs = [_samples(rng, scale, noise) for scale in (1.0, 0.9, 1.02, 1.3, 1.0) for noise in (0.002, 0.02, 0.1)]
    jobs = [(a, b, Policy()) for a, b in pairwise(runs)]
    return [*jobs, (runs[0], runs[0], Policy()), (runs[0], {}, Policy())]


@pytest.mark.parametrize("drift", [None, Drift(0.01, 12.0)])
@pytest.mark.parametrize("paired", [False, True])
def test_compare_many_is_compare_of_each_pair(drift, paired):
    jobs = _jobs()
    together = compare_many(jobs, 0.03, drift, paired)
    alone = [compare(base, new, policy, 0.03, drift, paired) for base, new, policy in jobs]
    assert together == alone
    assert {c.outcome for found in together for c in found} >= {"faster", "slower", "same", "inconclusive"}
    assert sum(len(found) for found in together) > tdist.BATCH_MIN  # the batch path, not the one-by-one


def test_batch_t_functions_equal_the_scalar_ones_float_for_float():
    rng = np.random.default_rng(1)
    n = 4 * tdist.BATCH_MIN
    df = [float(d) for d in rng.uniform(1, 80, n)] + [1.0, 2.0, 30.0, math.inf]
    t = [float(v) for v in rng.normal(0, 4, len(df) - 4)] + [0.0, -0.0, 3.0, -1.5]
    assert tdist.t_sf_many(t, df) == [tdist.t_sf(a, b) for a, b in zip(t, df, strict=True)]
    for p in (0.6, 0.975, 0.995):
        assert tdist.t_quantile_many(p, df) == [tdist.t_quantile(p, d) for d in df]
    assert tdist.t_quantile_many(0.975, df[:3]) == [tdist.t_quantile(0.975, d) for d in df[:3]]  # one by one


def test_the_cache_judges_many_pairs_as_it_judges_one():
    jobs = _jobs()[:6]

    class Run:
        def __init__(self, sha: str, samples: dict[str, CaseSamples]) -> None:
            self.sha256, self.samples, self.policy = sha, samples, Policy()

        def samples_of(self, metric: str) -> dict[str, CaseSamples]:
            return self.samples

    runs = [Run(str(i), base) for i, (base, _, _) in enumerate(jobs)]
    pairs = list(pairwise(runs))
    cache = SummaryCache(None)
    many = cache.comparisons_many(pairs, None)  # type: ignore[arg-type]

    def judged(found: list[list]) -> list[list[tuple]]:
        return [[(c.case, c.outcome, c.ratio, c.p_change, c.p_same, c.df) for c in f] for f in found]

    one_by_one = [compare(a.samples, b.samples, Policy()) for a, b in pairs]
    assert judged(many) == judged(one_by_one)
    assert SummaryCache(None).comparisons(*pairs[2], None) == many[2]  # type: ignore[arg-type]
    again = cache.comparisons_many(pairs, None)  # type: ignore[arg-type]  # from the cache now
    assert again == many  # a fresh judgement comes back as a cached one does (kept without quartiles)
