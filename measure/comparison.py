"""Regression decisions between two run records: faster / slower / same / inconclusive per metric.

A metric is one wall-clock case's ms/token. Each decision needs all of:

* the point ratio (NEW / BASE) past the tolerance band ``1 +/- tolerance``;
* the two runs' 95% intervals apart (each median's own bootstrap interval, at its record's settings);
* a bootstrap p-value below ``alpha`` after Holm's correction over every
  metric compared, so comparing twenty cases does not buy twenty chances
  of a false call.

"same" is an equivalence claim (two one-sided tests against the band edges,
Holm-corrected too); whatever is neither is "inconclusive". On shared CI
runners the tolerance comes from an A/A calibration (:mod:`measure.calibration`)
when one is recorded, never narrower than the policy states.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from measure.analysis import Bootstrap, bootstrap_of
from measure.cost import metric_samples
from measure.model import Record
from measure.policy import Policy
from measure.stats import Estimate, holm, percentile_interval, ratio_bootstrap, summarize, tail_share

OUTCOMES = ("faster", "slower", "same", "inconclusive")


@dataclass(frozen=True)
class CaseSamples:
    """What a comparison reads of one wall-clock case: its kind and ms/token per repeat."""

    kind: str
    ms_per_token: tuple[float, ...]
    estimate: Estimate
    """The median over repeats and its interval, at the record's own bootstrap settings."""

    @property
    def median(self) -> float:
        return self.estimate.value


def samples_of(record: Record) -> dict[str, CaseSamples]:
    """Every measured wall-clock case of a record, as comparisons and the A/A calibration read it."""
    if record.wallclock is None:
        return {}
    boot = bootstrap_of(record)
    out = {}
    for name, c in record.wallclock.cases.items():
        if c.measured:
            ms = c.per_repeat_ms_per_token
            e = summarize(ms, resamples=boot.resamples, seed=boot.seed)
            out[name] = CaseSamples(c.kind, tuple(float(x) for x in ms), Estimate(e.value, e.lo, e.hi))
    return out


def cost_samples_of(record: Record, metric: str) -> dict[str, CaseSamples]:
    """One cost-profile metric per tier (:data:`measure.cost.METRICS`), in the shape a comparison reads.

    The samples travel in ``ms_per_token`` whatever their unit; lower is better for every metric.
    """
    boot = bootstrap_of(record)
    out = {}
    for name, values in metric_samples(record, metric).items():
        e = summarize(values, resamples=boot.resamples, seed=boot.seed)
        out[name] = CaseSamples("greedy", tuple(float(x) for x in values), Estimate(e.value, e.lo, e.hi))
    return out


@dataclass(frozen=True)
class Comparison:
    case: str
    kind: str
    """greedy (a tier) or speculative (a pair at one k)."""
    outcome: str
    """faster, slower, same or inconclusive."""
    ratio: Estimate
    """NEW ms/token / BASE ms/token, with its 95% bootstrap interval."""
    base: Estimate
    new: Estimate
    """Each run's median ms/token and its own 95% interval."""
    p_slower: float
    p_faster: float
    p_same: float
    """Holm-adjusted bootstrap p-values of 'slower than the band', 'faster than the band', 'inside the band'."""
    tolerance: float


def _decide(r: Estimate, base: Estimate, new: Estimate, p: tuple[float, float, float], tol: float, alpha: float) -> str:
    p_slower, p_faster, p_same = p
    if r.value > 1 + tol and new.lo > base.hi and p_slower < alpha:
        return "slower"
    if r.value < 1 - tol and new.hi < base.lo and p_faster < alpha:
        return "faster"
    if p_same < alpha:
        return "same"
    return "inconclusive"


def compare(
    base: Mapping[str, CaseSamples],
    new: Mapping[str, CaseSamples],
    policy: Policy,
    boot: Bootstrap,
    tolerance: float | None = None,
) -> list[Comparison]:
    """Every wall-clock case the two runs share, decided together (Holm over all of them).

    ``policy`` and ``boot`` are NEW's; ``tolerance``: a calibrated band that replaces the policy's when wider.
    """
    tol = max(policy.compare_tolerance, tolerance or 0.0)
    measured = []
    for name, case in new.items():
        old = base.get(name)
        if old is None or not case.ms_per_token or not old.ms_per_token:
            continue
        a, b = np.asarray(case.ms_per_token), np.asarray(old.ms_per_token)
        dist = ratio_bootstrap(a, b, resamples=boot.resamples, seed=boot.seed)
        r = Estimate(case.median / old.median, *percentile_interval(dist))
        raw = (
            tail_share(dist, below=1 + tol),
            tail_share(dist, above=1 - tol),
            max(tail_share(dist, above=1 + tol), tail_share(dist, below=1 - tol)),
        )
        measured.append((name, case.kind, r, (old.estimate, case.estimate), raw))
    if not measured:
        return []
    adjusted = [holm([m[4][j] for m in measured]) for j in range(3)]
    out = []
    for i, (name, kind, r, (b_est, n_est), _) in enumerate(measured):
        p = (adjusted[0][i], adjusted[1][i], adjusted[2][i])
        outcome = _decide(r, b_est, n_est, p, tol, policy.compare_alpha)
        out.append(Comparison(name, kind, outcome, r, b_est, n_est, *p, tolerance=tol))
    return out


def compare_records(
    base: Record,
    new: Record,
    policy: Policy | None = None,
    tolerance: float | None = None,
    metric: str = "ms_per_token",
) -> list[Comparison]:
    """:func:`compare` of two loaded records under NEW's policy and bootstrap settings, on one metric."""
    if metric == "ms_per_token":
        base_s, new_s = samples_of(base), samples_of(new)
    else:
        base_s, new_s = cost_samples_of(base, metric), cost_samples_of(new, metric)
    return compare(base_s, new_s, policy or new.config.policy, bootstrap_of(new), tolerance)
