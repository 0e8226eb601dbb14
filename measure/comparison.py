"""Regression decisions between two run records: faster / slower / same / inconclusive per metric.

A metric is one wall-clock case's ms/token. Each decision needs all of:

* the point ratio (NEW / BASE) past the tolerance band ``1 +/- tolerance``;
* the two runs' 95% intervals apart (each median's own bootstrap interval);
* a bootstrap p-value below ``alpha`` after Holm's correction over every
  metric compared, so comparing twenty cases does not buy twenty chances
  of a false call.

"same" is an equivalence claim (two one-sided tests against the band edges,
Holm-corrected too); whatever is neither is "inconclusive". On shared CI
runners the tolerance comes from an A/A calibration (:mod:`measure.calibration`)
when one is recorded, never narrower than the policy states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.analysis import bootstrap_of, median_ms_per_token, per_repeat_ms_per_token
from measure.policy import Policy, policy_from
from measure.stats import Estimate, holm, percentile_interval, ratio_bootstrap, summarize, tail_share

OUTCOMES = ("faster", "slower", "same", "inconclusive")


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


Medians = dict[tuple[int, str, int, int], Estimate]
"""(id of the record dict, case, resamples, seed) -> that record's median ms/token and interval."""


def compare(
    base: dict[str, Any],
    new: dict[str, Any],
    policy: Policy | None = None,
    tolerance: float | None = None,
    medians: Medians | None = None,
) -> list[Comparison]:
    """Every wall-clock case the two records share, decided together (Holm over all of them).

    ``tolerance``: a calibrated band that replaces the policy's when wider.
    ``medians``: a cache the caller keeps across calls while its record dicts stay alive and
    unchanged, so comparing a series of records summarizes each one once.
    """

    def median_of(doc: dict[str, Any], name: str, values: np.ndarray) -> Estimate:
        if medians is None:
            return summarize(values, resamples=boot.resamples, seed=boot.seed)
        key = (id(doc), name, boot.resamples, boot.seed)
        if key not in medians:
            medians[key] = summarize(values, resamples=boot.resamples, seed=boot.seed)
        return medians[key]

    policy = policy or policy_from(new["config"].get("policy"))
    tol = max(policy.compare_tolerance, tolerance or 0.0)
    boot = bootstrap_of(new)
    base_cases = (base.get("wallclock") or {}).get("cases", {})
    measured = []
    for name, case in ((new.get("wallclock") or {}).get("cases", {})).items():
        old = base_cases.get(name)
        if old is None or not case["wall_s"] or not old["wall_s"]:
            continue
        a, b = per_repeat_ms_per_token(case), per_repeat_ms_per_token(old)
        dist = ratio_bootstrap(a, b, resamples=boot.resamples, seed=boot.seed)
        r = Estimate(median_ms_per_token(case) / median_ms_per_token(old), *percentile_interval(dist))
        raw = (
            tail_share(dist, below=1 + tol),
            tail_share(dist, above=1 - tol),
            max(tail_share(dist, above=1 + tol), tail_share(dist, below=1 - tol)),
        )
        sides = (median_of(base, name, b), median_of(new, name, a))
        measured.append((name, case["kind"], r, sides, raw))
    if not measured:
        return []
    adjusted = [holm([m[4][j] for m in measured]) for j in range(3)]
    out = []
    for i, (name, kind, r, (b_est, n_est), _) in enumerate(measured):
        p = (adjusted[0][i], adjusted[1][i], adjusted[2][i])
        outcome = _decide(r, b_est, n_est, p, tol, policy.compare_alpha)
        out.append(Comparison(name, kind, outcome, r, b_est, n_est, *p, tolerance=tol))
    return out
