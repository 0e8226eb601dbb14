"""A machine's history as series a change-point search reads: per case and metric, runs ordered by commit.

Records come as cached summaries (never raw records, so a year of them stays cheap). A machine's commits
are ordered by their first run (the order the results tree recorded them in); the runs of one clean commit
are pooled, and a record of no commit or of a dirty tree is a commit of its own. A series holds what can be
compared: one case in one metric over records that share their golden rows (and for timings their timed
region, for instruction counts the valgrind and rows counted); records that changed those start another
series. Each run's variance is its repeats' spread over their count plus the machine's drift, the larger
of the recorded A/A calibration's and the drift the series itself shows between consecutive runs (an A/A
pair is two runs of one job, on one runner; consecutive commits are measured on different ones).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from measure.analysis.calibration import Calibration
from measure.analysis.changepoints import Runs, drift_floor
from measure.analysis.summary import Summary

METRICS = {
    "wall": "ms/token (wall)",
    "cpu": "ms/token (CPU)",
    "first_token_ms": "first token ms",
    "row_p90_ms": "row p90 ms",
    "memory_bytes": "memory",
    "instructions": "instructions/token",
}
"""Each metric a series may be of, in the words the pages use."""
CALIBRATED = frozenset(("wall", "cpu", "instructions"))
"""The metrics an A/A calibration records a drift for (the cost profile's are estimated from the series)."""
VAR_FLOOR = 1e-4**2
"""No run is more precise than 0.01% (a count that repeats exactly would otherwise make any change certain)."""


@dataclass(frozen=True)
class SeriesKey:
    machine: str
    metric: str
    """A key of :data:`METRICS`."""
    case: str
    """A tier, or a speculative pair at one k."""
    basis: str
    """What its records share (golden rows, timed region, instruction key), as a short label."""


@dataclass(frozen=True)
class Commit:
    """One commit of a machine's history and its runs (records), oldest first."""

    commit: str | None
    """The clean commit; None for a record of no commit or a dirty tree (a commit of its own)."""
    runs: tuple[Summary, ...]

    @property
    def first(self) -> Summary:
        return self.runs[0]

    @property
    def short(self) -> str:
        return self.commit[:10] if self.commit else self.first.short_commit


@dataclass(frozen=True)
class Series:
    key: SeriesKey
    commits: tuple[Commit, ...]
    """The commits with a run of this case, in order; ``runs.commit`` numbers them."""
    runs: Runs
    drift: float
    """The drift in every run's variance (sd of the log)."""
    calibrated: bool
    """The drift is the recorded A/A calibration's (else the series' own was larger, or none was recorded)."""


def commits_of(runs: Iterable[Summary]) -> list[Commit]:
    """One machine's complete records grouped by commit, in the order each commit was first measured."""
    groups: dict[str, list[Summary]] = defaultdict(list)
    for r in sorted(runs, key=lambda r: (r.started_at, r.run_id)):
        if r.complete:
            pinned = bool(r.commit) and r.dirty is False
            groups[r.commit if pinned and r.commit else f"run:{r.run_id}"].append(r)
    return [Commit(key if not key.startswith("run:") else None, tuple(g)) for key, g in groups.items()]


def _basis(run: Summary, metric: str) -> str:
    if metric == "instructions":
        return f"golden {run.golden_sha256[:8]}, {run.instructions_key}"
    return f"golden {run.golden_sha256[:8]}, timed from {run.timed}"


def _logs(samples: list[tuple[float, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of the mean of each run's log samples, over its positive, finite ones (NaN mean for a
    run of none; NaN variance for a run of one)."""
    means, own = np.full(len(samples), np.nan), np.full(len(samples), np.nan)
    by_size: dict[int, list[int]] = defaultdict(list)
    for i, s in enumerate(samples):
        by_size[len(s)].append(i)
    for size, at in by_size.items():
        x = np.array([samples[i] for i in at], dtype=float).reshape(len(at), size)
        good = np.all((x > 0) & np.isfinite(x), axis=1)
        logs = np.log(x[good])
        means[np.array(at)[good]] = logs.mean(axis=1) if size else np.nan
        if size > 1:
            own[np.array(at)[good]] = logs.var(axis=1, ddof=1) / size
        for i in np.array(at)[~good]:  # a sample of zero or less (a memory figure below the baseline's)
            kept = np.log([v for v in samples[i] if v > 0 and math.isfinite(v)])
            means[i] = kept.mean() if kept.size else np.nan
            own[i] = kept.var(ddof=1) / kept.size if kept.size > 1 else np.nan
    return means, own


def runs_of(points: list[tuple[int, tuple[float, ...]]], drift: float | None) -> tuple[Runs, list[int], float, bool]:
    """The runs of one series from (commit number, samples) per run, in commit order: the :class:`Runs` (of runs
    with a positive sample), the commit numbers it kept (renumbered 0 ..), and the drift it used and whether that
    was the recorded one (``drift``; None when none is recorded) rather than the series' own, larger one."""
    mean, own = _logs([s for _, s in points])
    keep = np.isfinite(mean)
    numbers = np.array([c for c, _ in points], dtype=int)[keep]
    mean, own = mean[keep], own[keep]
    used = sorted(set(numbers.tolist()))
    known = own[np.isfinite(own)]
    own = np.where(np.isfinite(own), own, float(np.median(known)) if known.size else 0.0)
    floor = drift_floor(mean, own)
    calibrated = drift is not None and drift >= floor
    sd = drift if calibrated and drift is not None else floor
    commit = np.searchsorted(np.array(used, dtype=int), numbers)
    return Runs(mean, np.maximum(own + sd * sd, VAR_FLOOR), commit, len(used)), used, sd, calibrated


def _series(
    key: SeriesKey, points: list[tuple[int, tuple[float, ...]]], commits: list[Commit], drift: float | None
) -> Series:
    runs, used, sd, calibrated = runs_of(points, drift)
    return Series(key, tuple(commits[c] for c in used), runs, sd, calibrated)


def run_samples(run: Summary) -> dict[tuple[str, str, str], tuple[float, ...]]:
    """(metric, case, basis) -> the run's samples, for every series the run has a point on."""
    out = {}
    for metric in METRICS:
        if metric == "instructions" and run.instructions_key is None:
            continue
        basis = _basis(run, metric)
        for case, samples in run.samples_of(metric).items():
            if samples.ms_per_token:
                out[(metric, case, basis)] = samples.ms_per_token
    return out


def drift_of(calibration: Calibration | None, metric: str) -> float | None:
    """The recorded A/A drift of one metric (sd of the log), or None."""
    drift = calibration.drift_of(metric) if calibration is not None and metric in CALIBRATED else None
    return drift.sd if drift is not None else None


def machine_series(machine: str, runs: Iterable[Summary], calibration: Calibration | None) -> list[Series]:
    """Every series of one machine: each case in each metric it was measured in, per basis."""
    commits = commits_of(runs)
    points: dict[tuple[str, str, str], list[tuple[int, tuple[float, ...]]]] = defaultdict(list)
    for number, commit in enumerate(commits):
        for run in commit.runs:
            for key, kept in run_samples(run).items():
                points[key].append((number, kept))
    return [
        _series(SeriesKey(machine, metric, case, basis), found, commits, drift_of(calibration, metric))
        for (metric, case, basis), found in sorted(points.items())
    ]


def new_runs(runs: Iterable[Summary], key: SeriesKey, drift: float) -> tuple[np.ndarray, np.ndarray]:
    """The log means and variances of runs outside a series (a pull request's) on that series' key."""
    samples = [found for r in runs if (found := run_samples(r).get((key.metric, key.case, key.basis)))]
    mean, own = _logs(samples)
    keep = np.isfinite(mean)
    return mean[keep], np.maximum(np.nan_to_num(own[keep]) + drift * drift, VAR_FLOOR)
