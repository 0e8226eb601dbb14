"""The cost profile derived from a record: size, load time, peak memory, first token, latency percentiles, threads.

Pure functions of a record's raw samples (the wall-clock suite's ``profile``
section and its greedy cases' ``first_token_s``), with the bootstrap
settings the record carries. Records from before the profile give ``None``
wherever a sample is missing, never an error. Memory is the increase of a
one-tier worker's peak over the median peak of the baseline workers (which
import the same modules and load nothing), so it is the tier's footprint,
not the interpreter's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.analysis.resample import resample_indices, sorted_resamples
from measure.analysis.stats import Estimate, median, percentile_interval, ratio_of_medians, summarize
from measure.analysis.timings import Bootstrap, bootstrap_of
from measure.record.model import Case, Record

QUANTILES = (0.50, 0.90, 0.99)
PERCENTILE_RESAMPLES = 1000
"""Cap on the bootstrap of a percentile: each resample sorts every row sample of the tier."""


@dataclass(frozen=True)
class Percentiles:
    """p50, p90 and p99 of one latency over every row sample (repeats x rows), each with a 95% interval."""

    p50: Estimate
    p90: Estimate
    p99: Estimate
    samples: int

    def to_dict(self) -> dict[str, dict[str, float | None] | int]:
        return {
            "p50": self.p50.to_dict(),
            "p90": self.p90.to_dict(),
            "p99": self.p99.to_dict(),
            "samples": self.samples,
        }


@dataclass(frozen=True)
class TierProfile:
    tier: str
    role: str
    precision: str
    bytes: int
    """Bytes on disk of every file in the tier folder (the fingerprint's total)."""
    load_cold_ms: Estimate | None
    """Creating the tier's sessions first thing in a fresh worker process."""
    load_warm_ms: Estimate | None
    """The same again in the same worker."""
    peak_rss_bytes: Estimate | None
    """Peak resident set of a worker that loads and decodes only this tier."""
    memory_bytes: Estimate | None
    """That peak less the median peak of the baseline workers: the tier's own footprint."""
    first_token_ms: Estimate | None
    """Source text in -> first output token (tokenize, encoder, first decoder call), per row."""
    next_token_ms: Estimate | None
    """Per decoder step after the first: (row time - first token) / output tokens, per row."""
    row_ms: Percentiles | None
    token_ms: Percentiles | None
    """Per row ms/token (row time / output tokens)."""
    threads_ms_per_token: dict[int, Estimate]
    """Intra-op thread count -> ms/token over the sweep's rows (empty without a sweep)."""
    fastest_threads: int | None
    size_vs_plain: float | None
    load_vs_plain: Estimate | None
    """Cold load time / the plain tier's."""
    memory_vs_plain: Estimate | None
    """Memory (increase over the baseline) / the plain tier's."""
    first_token_vs_plain: Estimate | None


@dataclass(frozen=True)
class ProfileRatios:
    """What the verdicts read: one tier's size, memory and cold load against the plain tier's."""

    tier: str
    role: str
    size: float | None
    memory: Estimate | None
    load: Estimate | None


def percentiles(values: np.ndarray, b: Bootstrap) -> Percentiles | None:
    """p50/p90/p99 of the samples, each interval a percentile bootstrap of that quantile (one sort for all three)."""
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        return None
    idx = resample_indices(b.seed, min(b.resamples, PERCENTILE_RESAMPLES), x.size)  # default_rng(seed)'s one draw
    pos = np.asarray(QUANTILES) * (x.size - 1)
    lo_i, hi_i = np.floor(pos).astype(int), np.minimum(np.floor(pos).astype(int) + 1, x.size - 1)
    both = sorted_resamples(x, idx, [*lo_i.tolist(), *hi_i.tolist()])  # np.sort(x[idx], axis=1)[:, lo_i + hi_i]
    lo, hi = both[:, : len(QUANTILES)], both[:, len(QUANTILES) :]
    at = lo + (hi - lo) * (pos - lo_i)
    point = np.quantile(x, QUANTILES)
    est = [Estimate(float(point[j]), *percentile_interval(at[:, j])) for j in range(len(QUANTILES))]
    return Percentiles(est[0], est[1], est[2], int(x.size))


def _summary(values: np.ndarray | None, scale: float = 1.0) -> Estimate | None:
    if values is None:
        return None
    x = np.asarray(values, dtype=float).ravel() * scale
    x = x[np.isfinite(x)]
    return summarize(x) if x.size else None


def _ratio(num: np.ndarray | None, den: np.ndarray | None, b: Bootstrap) -> Estimate | None:
    if num is None or den is None or num.size == 0 or den.size == 0 or median(den) <= 0:
        return None
    return ratio_of_medians(np.ravel(num), np.ravel(den), resamples=b.resamples, seed=b.seed)


def _memory(record: Record, tier: str) -> np.ndarray | None:
    p = record.wallclock.profile if record.wallclock else None
    if p is None or tier not in p.tiers or p.tiers[tier].peak_rss_bytes.size == 0:
        return None
    base = median(p.baseline_peak_rss_bytes) if p.baseline_peak_rss_bytes.size else 0.0
    return p.tiers[tier].peak_rss_bytes - base


def _cold(record: Record, tier: str) -> np.ndarray | None:
    p = record.wallclock.profile if record.wallclock else None
    if p is None or tier not in p.tiers or p.tiers[tier].load_cold_s.size == 0:
        return None
    return p.tiers[tier].load_cold_s


def cold_load_ratio(record: Record, tier: str, against: str) -> Estimate | None:
    """``tier``'s cold load time over ``against``'s (ratio of medians, bootstrap interval); None unless both were
    profiled. What a ship line states beside the speed it gains."""
    return _ratio(_cold(record, tier), _cold(record, against), bootstrap_of(record))


def _per_token(case: Case) -> tuple[np.ndarray, np.ndarray | None]:
    """Per row ms/token, and per step after the first token, over rows with at least one output token."""
    tokens = np.asarray(case.tokens, dtype=float)
    keep = tokens > 0
    token_ms = 1000 * case.wall_s[:, keep] / tokens[keep]
    next_ms = None
    if case.first_token_s is not None and case.first_token_s.shape == case.wall_s.shape:
        next_ms = 1000 * (case.wall_s - case.first_token_s)[:, keep] / tokens[keep]
    return token_ms, next_ms


def profile_ratios(record: Record) -> list[ProfileRatios]:
    """Every non-plain tier against the plain one: the cheap part the verdicts need, no percentiles."""
    plain = record.plain
    if plain is None or plain not in record.tiers:
        return []
    b = bootstrap_of(record)
    out = []
    for name, tier in record.tiers.items():
        if name == plain:
            continue
        size = tier.total_bytes / record.tiers[plain].total_bytes if record.tiers[plain].total_bytes else None
        out.append(
            ProfileRatios(
                name,
                tier.role,
                size,
                _ratio(_memory(record, name), _memory(record, plain), b),
                _ratio(_cold(record, name), _cold(record, plain), b),
            )
        )
    return out


def _threads(sweep: Any) -> dict[int, Estimate]:
    """ms/token at each intra-op thread count of a thread sweep (the counts that measured something)."""
    threads: dict[int, Estimate] = {}
    if sweep is not None:
        total_tokens = max(1, sum(sweep.tokens))
        for n, wall in sorted(sweep.wall_s.items()):
            if wall.size:
                threads[n] = summarize(1000 * wall.sum(axis=1) / total_tokens)
    return threads


def _loads(samples: Any) -> tuple[Estimate | None, Estimate | None, Estimate | None]:
    """Cold and warm load ms and the worker's peak resident bytes, where the profile measured them."""
    if samples is None:
        return None, None, None
    return _summary(samples.load_cold_s, 1000), _summary(samples.load_warm_s, 1000), _summary(samples.peak_rss_bytes)


def _greedy_figures(
    case: Case | None, b: Bootstrap
) -> tuple[np.ndarray | None, Estimate | None, Percentiles | None, Percentiles | None]:
    """A tier's greedy case: its first-token seconds, next-token ms, and row and token ms percentiles (all None
    where the tier has no greedy case)."""
    if case is None:
        return None, None, None, None
    token_ms, next_ms = _per_token(case)
    return case.first_token_s, _summary(next_ms), percentiles(1000 * case.wall_s, b), percentiles(token_ms, b)


def tier_costs(record: Record, ratios: Sequence[ProfileRatios] | None = None) -> list[TierProfile]:
    """The cost profile of every tier the record names, as far as the record measured it; ``ratios``: the
    record's :func:`profile_ratios` when the caller has them already (the verdicts read them too)."""
    b = bootstrap_of(record)
    wc = record.wallclock
    profile = wc.profile if wc else None
    cases = {c.name: c for c in wc.greedy()} if wc else {}
    plain = record.plain
    by_tier = {r.tier: r for r in (profile_ratios(record) if ratios is None else ratios)}
    plain_first = cases[plain].first_token_s if plain in cases else None
    out = []
    for name, tier in record.tiers.items():
        first, next_ms, row_ms, token_ms = _greedy_figures(cases.get(name), b)
        threads = _threads((profile.threads or {}).get(name) if profile else None)
        cold, warm, peak = _loads(profile.tiers.get(name) if profile else None)
        r = by_tier.get(name)
        out.append(
            TierProfile(
                tier=name,
                role=tier.role,
                precision=tier.precision,
                bytes=tier.total_bytes,
                load_cold_ms=cold,
                load_warm_ms=warm,
                peak_rss_bytes=peak,
                memory_bytes=_summary(_memory(record, name)),
                first_token_ms=_summary(first, 1000),
                next_token_ms=next_ms,
                row_ms=row_ms,
                token_ms=token_ms,
                threads_ms_per_token=threads,
                fastest_threads=min(threads, key=lambda n: threads[n].value) if threads else None,
                size_vs_plain=1.0 if name == plain else (r.size if r else None),
                load_vs_plain=r.load if r else None,
                memory_vs_plain=r.memory if r else None,
                first_token_vs_plain=_ratio(first, plain_first, b) if name != plain else None,
            )
        )
    return out


def has_profile(costs: list[TierProfile] | tuple[TierProfile, ...]) -> bool:
    """Whether any tier has a profile figure beyond its size (records from before the profile have none)."""
    return any(c.load_cold_ms or c.first_token_ms or c.threads_ms_per_token for c in costs)


METRICS = {
    "ms_per_token": "ms/token per repeat (every wall-clock case)",
    "first_token_ms": "first-token ms, median over rows per repeat (greedy tiers)",
    "row_p90_ms": "row ms p90 over rows per repeat (greedy tiers)",
    "row_p99_ms": "row ms p99 over rows per repeat (greedy tiers)",
    "load_cold_ms": "cold load ms, one per worker process",
    "load_warm_ms": "warm load ms, every warm load",
    "memory_bytes": "worker peak over the baseline's, one per worker process",
}
"""What ``measure compare --metric`` can gate on; lower is better for all of them."""


def metric_samples(record: Record, metric: str) -> dict[str, np.ndarray]:
    """Per tier, the samples of one cost-profile metric a comparison resamples (empty where not measured)."""
    if metric not in METRICS or metric == "ms_per_token":
        raise ValueError(f"unknown cost metric {metric!r}; expected one of {', '.join(METRICS)}")
    wc = record.wallclock
    if wc is None:
        return {}
    out: dict[str, np.ndarray] = {}
    for case in wc.greedy():
        if metric == "first_token_ms" and case.first_token_s is not None:
            out[case.name] = 1000 * np.median(case.first_token_s, axis=1)
        elif metric in ("row_p90_ms", "row_p99_ms"):
            out[case.name] = 1000 * np.quantile(case.wall_s, 0.90 if metric == "row_p90_ms" else 0.99, axis=1)
    if wc.profile is not None and metric in ("load_cold_ms", "load_warm_ms", "memory_bytes"):
        for name, t in wc.profile.tiers.items():
            values: dict[str, np.ndarray | None] = {
                "load_cold_ms": 1000 * t.load_cold_s,
                "load_warm_ms": 1000 * t.load_warm_s,
                "memory_bytes": _memory(record, name),
            }
            got = values[metric]
            if got is not None and got.size:
                out[name] = got
    return out
