"""Regression decisions between two run records: faster / slower / same / inconclusive per case.

Each case is read as one number per repeat (ms/token of wall or CPU time; a
repeat is a fresh session, the unit that carries the noise) and compared on
the log scale, where a slowdown is a shift:

* ``d = mean(log new) - mean(log base)``; the ratio is ``exp(d)`` (a ratio of
  geometric means) and its interval ``exp(d +/- t * se)`` at level ``1 - alpha``
  (95% at the default alpha), the one interval printed and used below;
* ``se^2 = s_base^2 / n_base + s_new^2 / n_new + 2 * drift^2``: Welch's
  variance of the difference, plus the run-to-run drift an A/A calibration
  measured on the machine (:mod:`measure.analysis.calibration`), once per run; degrees
  of freedom by Welch-Satterthwaite, the drift counted with its own;
* **slower** / **faster**: Welch's two-sided p-value of ``d = 0``, Holm-adjusted
  over every case compared, below ``alpha``, *and* the point ratio past the band
  ``1 +/- tolerance``: a change must be both real and large enough to matter;
* **same**: the interval lies inside the band, which is two one-sided tests at
  ``alpha / 2`` each (``p_same`` is the larger of their p-values);
* **inconclusive**: neither.

The band is the policy's ``compare_tolerance`` (a wider one may be given), or
its ``instructions_tolerance`` for callgrind's instruction count, whose runs
agree to a few parts in ten thousand; the calibration's drift widens the
interval, not the band.

Two records paired by repeat (:func:`pairing_of`: the two sides of one
``measure ab`` job, or one run compared with itself) are judged on the
per-repeat differences instead: ``d`` is their mean and ``se`` their standard
error (a paired t with ``n - 1`` degrees of freedom, no drift: both sides saw
the same host at the same time).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from measure.analysis.profile import metric_samples
from measure.analysis.stats import Estimate, holm, mean_var, summarize
from measure.analysis.tdist import t_quantile_many, t_sf_many
from measure.errors import MeasureError
from measure.policy import Policy, tolerance_of
from measure.record.model import Record

OUTCOMES = ("faster", "slower", "same", "inconclusive")
ONE_JOB = "paired by repeat (one job)"
SAME_RUN = "paired by construction (the same run on both sides)"
METRICS = ("wall", "cpu")
"""Per-repeat samples a comparison may read: wall-clock seconds, or process CPU seconds (records that have them)."""
INSTRUCTIONS = "instructions"
"""Per-run samples of callgrind instructions per token, per greedy tier (records that have them), with its own band."""


@dataclass(frozen=True)
class CaseSamples:
    """What a comparison reads of one wall-clock case: its kind and ms/token per repeat."""

    kind: str
    ms_per_token: tuple[float, ...]
    estimate: Estimate
    """The median over repeats and its distribution-free interval (:func:`measure.analysis.stats.median_interval`)."""

    @property
    def median(self) -> float:
        return self.estimate.value


def samples_of(record: Record, metric: str = "wall") -> dict[str, CaseSamples]:
    """Every measured case of a record in one metric, as comparisons and the A/A calibration read it.

    ``metric="cpu"`` skips cases recorded without CPU time (records older than the field).
    """
    if metric not in METRICS:
        raise ValueError(f"metric: expected one of {', '.join(METRICS)}, got {metric!r}")
    if record.wallclock is None:
        return {}
    out = {}
    for name, c in record.wallclock.cases.items():
        if not c.measured:
            continue
        ms = c.per_repeat_ms_per_token if metric == "wall" else c.per_repeat_cpu_ms_per_token
        if ms is None or ms.size == 0 or not np.all(ms > 0):
            continue
        out[name] = CaseSamples(c.kind, tuple(float(x) for x in ms), summarize(ms))
    return out


def cost_samples_of(record: Record, metric: str) -> dict[str, CaseSamples]:
    """One cost-profile metric per tier (:data:`measure.analysis.profile.METRICS`), in the shape a comparison reads.

    The samples travel in ``ms_per_token`` whatever their unit; lower is better for every metric.
    """
    return {
        name: CaseSamples("greedy", tuple(float(x) for x in values), summarize(values))
        for name, values in metric_samples(record, metric).items()
    }


def instruction_samples_of(record: Record) -> dict[str, CaseSamples]:
    """Instructions per output token, one sample per callgrind run, per greedy tier (empty without counts).

    The samples travel in ``ms_per_token`` as the cost metrics' do; lower is better.
    """
    if record.instructions is None:
        return {}
    return {
        name: CaseSamples("greedy", tuple(float(x) for x in t.per_token), summarize(t.per_token))
        for name, t in record.instructions.tiers.items()
        if t.per_token.size and np.all(t.per_token > 0)
    }


@dataclass(frozen=True)
class Drift:
    """Run-to-run drift of one machine on the log scale (an A/A calibration's), and its degrees of freedom."""

    sd: float
    df: float


@dataclass(frozen=True)
class Comparison:
    case: str
    kind: str
    """greedy (a tier) or speculative (a pair at one k)."""
    outcome: str
    """faster, slower, same or inconclusive."""
    ratio: Estimate
    """NEW / BASE ratio of geometric means of ms/token per repeat, with its interval at level ``1 - alpha``."""
    base: Estimate
    new: Estimate
    """Each run's median ms/token and its own distribution-free interval."""
    p_change: float
    """Welch's two-sided p-value of 'no change' on log ms/token, Holm-adjusted over every case compared."""
    p_same: float
    """Two one-sided tests of 'inside the band': the larger p-value (same when below alpha / 2)."""
    tolerance: float
    df: float
    """Welch-Satterthwaite degrees of freedom of the interval (drift included)."""


def _welch(x: np.ndarray, y: np.ndarray, drift: Drift | None) -> tuple[float, float, float]:
    """(d, se, df) of mean(y) - mean(x), with drift's variance added once per run."""
    (mx, vx), (my, vy) = mean_var(x), mean_var(y)
    vx, vy = vx / x.size, vy / y.size
    vd = 2 * drift.sd**2 if drift is not None else 0.0
    se2 = vx + vy + vd
    parts = vx**2 / (x.size - 1) + vy**2 / (y.size - 1) + (vd**2 / drift.df if drift is not None and vd else 0.0)
    df = se2**2 / parts if parts > 0 else math.inf
    return my - mx, math.sqrt(se2), df


def _paired(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(d, se, df) of the mean per-repeat difference: one job, repeat i of BASE and of NEW measured together."""
    diff = y - x
    mean, var = mean_var(diff)
    return mean, math.sqrt(var) / math.sqrt(diff.size), float(diff.size - 1)


@dataclass(frozen=True)
class _Case:
    """One case of one comparison up to its t quantities: the log-scale difference, its se and df."""

    name: str
    kind: str
    base: Estimate
    new: Estimate
    d: float
    se: float
    df: float


def _cases(
    base: Mapping[str, CaseSamples], new: Mapping[str, CaseSamples], drift: Drift | None, paired: bool
) -> list[_Case]:
    out = []
    for name, case in new.items():
        old = base.get(name)
        if old is None or len(case.ms_per_token) < 2 or len(old.ms_per_token) < 2:
            continue
        x, y = np.log(old.ms_per_token), np.log(case.ms_per_token)
        if paired and x.size != y.size:
            continue
        d, se, df = _paired(x, y) if paired else _welch(x, y, drift)
        out.append(_Case(name, case.kind, old.estimate, case.estimate, d, se, df))
    return out


def _band(tol: float) -> tuple[float, float]:
    """The band 1 +/- tol on the log scale: (up, down)."""
    return math.log1p(tol), math.log1p(-tol) if tol < 1 else -math.inf


def _tests(cases: list[list[_Case]], bands: list[float]) -> list[list[tuple[float, float]]]:
    """Per case, (two-sided p of d = 0, TOST p of 'ratio inside 1 +/- tol'): every t tail of every job at once."""
    t: list[float] = []
    df: list[float] = []
    for job, tol in zip(cases, bands, strict=True):
        up, down = _band(tol)
        for c in job:
            if c.se != 0:
                t += [abs(c.d) / c.se, (c.d - down) / c.se, (up - c.d) / c.se]
                df += [c.df] * 3
    tails = iter(t_sf_many(t, df))
    out = []
    for job, tol in zip(cases, bands, strict=True):
        up, down = _band(tol)
        row = []
        for c in job:
            if c.se == 0:
                row.append(((1.0 if c.d == 0 else 0.0), (0.0 if down < c.d < up else 1.0)))
            else:
                change, lower, upper = next(tails), next(tails), next(tails)
                row.append((min(1.0, 2 * change), max(lower, upper)))
        out.append(row)
    return out


def _quantiles(cases: list[list[_Case]], ps: list[float]) -> list[list[float]]:
    """Per case, the t quantile at its job's p and its df: every job's at once, grouped by p."""
    where: dict[float, list[tuple[int, int]]] = {}
    for j, (job, p) in enumerate(zip(cases, ps, strict=True)):
        where.setdefault(p, []).extend((j, k) for k in range(len(job)))
    out = [[0.0] * len(job) for job in cases]
    for p, at in where.items():
        for (j, k), q in zip(at, t_quantile_many(p, [cases[j][k].df for j, k in at]), strict=True):
            out[j][k] = q
    return out


def _decide(
    cases: list[_Case], quantiles: list[float], tests: list[tuple[float, float]], tol: float, alpha: float
) -> list[Comparison]:
    """Each case's interval and outcome, the p-values of 'no change' Holm-adjusted over all of them."""
    if not cases:
        return []
    adjusted = holm([p_change for p_change, _ in tests])
    out = []
    for c, q, (_, p_same), p in zip(cases, quantiles, tests, adjusted, strict=True):
        half = q * c.se
        r = Estimate(math.exp(c.d), math.exp(c.d - half), math.exp(c.d + half), level=1 - alpha)
        if p < alpha and r.value > 1 + tol:
            outcome = "slower"
        elif p < alpha and r.value < 1 - tol:
            outcome = "faster"
        elif p_same < alpha / 2:
            outcome = "same"
        else:
            outcome = "inconclusive"
        out.append(Comparison(c.name, c.kind, outcome, r, c.base, c.new, float(p), float(p_same), tol, float(c.df)))
    return out


def compare(
    base: Mapping[str, CaseSamples],
    new: Mapping[str, CaseSamples],
    policy: Policy,
    tolerance: float | None = None,
    drift: Drift | None = None,
    paired: bool = False,
    metric: str = "wall",
) -> list[Comparison]:
    """Every case the two runs share with two or more repeats each, decided together (Holm over all of them).

    ``policy`` is NEW's; ``tolerance``: a band used when wider than the policy's; ``drift``: the machine's
    A/A drift, added to each comparison's variance. ``paired``: BASE and NEW were measured in one job with
    repeat i of each taken together; the test is then on the per-repeat differences (a paired t, no drift:
    both sides saw the same host), and a case with unequal repeat counts is skipped. ``metric``: whose band
    applies (:func:`measure.policy.tolerance_of`: the instruction count has its own).
    """
    return compare_many([(base, new, policy)], tolerance, drift, paired, metric)[0]


def compare_many(
    jobs: Sequence[tuple[Mapping[str, CaseSamples], Mapping[str, CaseSamples], Policy]],
    tolerance: float | None = None,
    drift: Drift | None = None,
    paired: bool = False,
    metric: str = "wall",
) -> list[list[Comparison]]:
    """:func:`compare` of many (BASE, NEW, NEW's policy), the same lists, with the t quantities of all their
    cases computed together (:func:`~measure.analysis.tdist.t_quantile_many`, ``t_sf_many``): what a history
    of thousands of consecutive records asks for at once."""
    cases = [_cases(base, new, drift, paired) for base, new, _ in jobs]
    bands = [max(tolerance_of(policy, metric), tolerance or 0.0) for _, _, policy in jobs]
    quantiles = _quantiles(cases, [1 - policy.compare_alpha / 2 for _, _, policy in jobs])
    tests = _tests(cases, bands)
    return [
        _decide(c, q, t, tol, policy.compare_alpha)
        for c, q, t, tol, (_, _, policy) in zip(cases, quantiles, tests, bands, jobs, strict=True)
    ]


def _samples(record: Record, metric: str) -> dict[str, CaseSamples]:
    if metric in METRICS:
        return samples_of(record, metric)
    return instruction_samples_of(record) if metric == INSTRUCTIONS else cost_samples_of(record, metric)


def pairing_of(base: Record, new: Record, metric: str = "wall") -> str | None:
    """How BASE and NEW are paired by repeat (:data:`ONE_JOB`, :data:`SAME_RUN`), or None: two separate runs.

    * One job: the two records of one ``measure ab`` job (one pairing id, one side each). Repeat i of a
      case was measured on both sides at once, each on its own fresh sessions, the two decoding each row
      back to back in alternating order, so what the host did meanwhile (a neighbour's load, a frequency
      step) hit both; the per-repeat difference cancels it, while each side's session-to-session variance
      stays in it. Only the suite's per-repeat metrics (wall, cpu) are paired; the cost profile's are not.
    * The same run: one record compared with itself (same machine and run id, every case's samples
      identical). Its two sides are one set of measurements, not two independent draws, so Welch's test,
      which assumes independence, would read the record's own repeat-to-repeat spread as doubt about a
      difference that is exactly zero, and call a noisy case inconclusive. Paired, every repeat's difference
      is 0: d = 0, se = 0, the interval is [1, 1] and every case is "same", the only sound answer to
      "did this measurement change from itself". A record edited after the fact (other samples under the
      same run id) is not the same run and is compared as two runs.
    """
    one, other = base.pairing, new.pairing
    if one is not None and other is not None and one.id == other.id and one.side != other.side and metric in METRICS:
        return ONE_JOB
    if base.run_id == new.run_id and base.machine_id == new.machine_id:
        ours, theirs = _samples(base, metric), _samples(new, metric)
        if {n: s.ms_per_token for n, s in ours.items()} == {n: s.ms_per_token for n, s in theirs.items()}:
            return SAME_RUN
    return None


def compare_records(
    base: Record,
    new: Record,
    policy: Policy | None = None,
    tolerance: float | None = None,
    drift: Drift | None = None,
    metric: str = "wall",
    paired: bool | None = None,
) -> list[Comparison]:
    """:func:`compare` of two loaded records in one metric under NEW's policy.

    ``wall`` and ``cpu`` are ms/token per repeat and ``instructions`` callgrind instructions per token per run
    (an A/A ``drift`` applies to these three; the instruction count is judged in its own band, the policy's
    ``instructions_tolerance``, and only between records that counted the same rows with the same valgrind);
    any other metric is one of the cost profile's (:data:`measure.analysis.profile.METRICS`), per tier. ``paired``: None
    decides by :func:`pairing_of`; the two sides of one job must then have as many repeats of every case they share.
    """
    if metric == INSTRUCTIONS:
        same = base.instructions and new.instructions and base.instructions.key() == new.instructions.key()
        base_s, new_s = (_samples(base, metric), _samples(new, metric)) if same else ({}, {})
    else:
        base_s, new_s = _samples(base, metric), _samples(new, metric)
    if metric not in (*METRICS, INSTRUCTIONS):
        drift = None
    mode = pairing_of(base, new, metric) if paired is None else (ONE_JOB if paired else None)
    if mode == ONE_JOB:
        for name, case in new_s.items():
            old = base_s.get(name)
            if old is not None and len(old.ms_per_token) != len(case.ms_per_token):
                raise MeasureError(
                    f"{new.source}: case {name}: {len(case.ms_per_token)} repeats with {metric} samples, "
                    f"{base.source} has {len(old.ms_per_token)}; the two sides of a paired job need one each per repeat"
                )
    policy = policy or new.config.policy
    return compare(base_s, new_s, policy, tolerance, drift, paired=mode is not None, metric=metric)
