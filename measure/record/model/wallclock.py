"""Wall-clock cases: raw samples (repeats x rows) and the sums every reader takes of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from measure.record.model.bandwidth import BandwidthProbe, KernelTiming


@dataclass(frozen=True)
class Case:
    """One wall-clock case: a greedy tier, or a speculative pair at one k. Samples are repeats x rows."""

    name: str
    kind: str
    """greedy or speculative."""
    tokens: tuple[int, ...]
    """Output tokens per golden row (one pass)."""
    calls: tuple[int, ...]
    outputs_stable: bool
    wall_s: np.ndarray
    run_s: np.ndarray
    tier: str | None = None
    """The greedy case's tier."""
    pair: str | None = None
    drafter: str | None = None
    verifier: str | None = None
    k: int | None = None
    proposed: tuple[int, ...] = ()
    accepted: tuple[int, ...] = ()
    rounds: tuple[int, ...] = ()
    bonus: tuple[int, ...] = ()
    drafter_calls: tuple[int, ...] = ()
    verifier_calls: tuple[int, ...] = ()
    proposed_by_position: tuple[int, ...] = ()
    accepted_by_position: tuple[int, ...] = ()
    drafter_run_s: np.ndarray | None = None
    verifier_run_s: np.ndarray | None = None
    first_token_s: np.ndarray | None = None
    """Greedy cases from the cost profile on: source in -> first output token, repeats x rows (from the
    source ids where ``Wallclock.timed`` is ``ids``, else from its text)."""
    cpu_s: np.ndarray | None = None
    """Process CPU seconds of each row's decode (repeats x rows); None in records older than the field."""
    tokenize_s: np.ndarray | None = None
    """Seconds tokenizing each row outside the timed region (source encode + output decode), repeats x rows;
    None where ``Wallclock.timed`` is ``text`` (tokenizing was inside ``wall_s``)."""
    source_tokens: tuple[int, ...] = ()
    """The ids each row's timed region took (a decoder-only tier's prompt); empty in records older than the field."""

    @property
    def tokenize_us_per_row(self) -> float | None:
        """Median over repeats and rows of one row's tokenizing, in microseconds; None without samples."""
        if self.tokenize_s is None or not self.tokenize_s.size:
            return None
        return 1e6 * float(np.median(self.tokenize_s))

    @property
    def measured(self) -> bool:
        return self.wall_s.size > 0

    @property
    def repeats(self) -> int:
        return int(self.wall_s.shape[0])

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)

    @cached_property
    def per_repeat_totals(self) -> np.ndarray:
        """Total wall seconds over the golden rows, one value per repeat."""
        return self.wall_s.sum(axis=1)

    @cached_property
    def per_repeat_ms_per_token(self) -> np.ndarray:
        return 1000 * self.per_repeat_totals / max(1, self.total_tokens)

    @cached_property
    def per_repeat_cpu_ms_per_token(self) -> np.ndarray | None:
        """CPU ms per output token, one value per repeat; None when the record has no CPU samples."""
        if self.cpu_s is None or self.cpu_s.shape != self.wall_s.shape:
            return None
        return 1000 * self.cpu_s.sum(axis=1) / max(1, self.total_tokens)

    @cached_property
    def median_ms_per_token(self) -> float:
        """The point value every ratio between runs is taken of (compare, A/A calibration, History)."""
        return float(np.median(self.per_repeat_ms_per_token))

    @property
    def overhead(self) -> float:
        """Share of wall time outside session.run."""
        wall = float(self.wall_s.sum())
        return 1 - float(self.run_s.sum()) / wall if wall else 0.0


@dataclass(frozen=True)
class WorkerSamples:
    """One tier's worker-process samples: one cold load and one peak per worker, the warm loads of all."""

    load_cold_s: np.ndarray
    load_warm_s: np.ndarray
    peak_rss_bytes: np.ndarray


@dataclass(frozen=True)
class ThreadSweep:
    """One greedy tier timed at each intra-op thread count; ``wall_s[n]`` is repeats x rows."""

    tokens: tuple[int, ...]
    wall_s: dict[int, np.ndarray]
    fastest: int
    """The count with the least median total, as the run saw it (analysis recomputes it with intervals)."""


@dataclass(frozen=True)
class Profile:
    """The cost profile's raw samples: load time and peak memory per tier, and the optional thread sweep."""

    workers: int
    warm_loads: int
    rows: int
    memory_source: str | None
    """VmHWM (Linux) or ru_maxrss (getrusage), as the workers read their peak."""
    memory_unit_bytes: int | None
    platform: str | None
    baseline_imports: str
    baseline_peak_rss_bytes: np.ndarray
    """Workers that import what a tier worker imports and load nothing."""
    tiers: dict[str, WorkerSamples]
    thread_counts: tuple[int, ...] = ()
    threads: dict[str, ThreadSweep] | None = None
    bandwidth: BandwidthProbe | None = None
    """The machine's memory read bandwidth, probed before the workers; None in records before the probe."""
    kernels: dict[str, tuple[KernelTiming, ...]] = field(default_factory=dict)
    """Per tier beyond the last-level cache, its matrix kernels timed alone (empty in records before them)."""


@dataclass(frozen=True)
class TierCalls:
    """One tier's single calls timed on their own: ``call_s`` is repeats x widths x rows, seconds of one call."""

    n: tuple[int, ...]
    """Tokens per call, one column of ``call_s`` each."""
    cache_tokens: tuple[int, ...]
    """Per golden row, the cached positions the calls ran on top of."""
    call_s: np.ndarray

    @cached_property
    def per_repeat_s(self) -> np.ndarray:
        """Repeats x widths: the median over rows of one call's seconds (a call preempted on a shared
        machine moves a median over rows far less than a mean)."""
        a = np.median(self.call_s, axis=2) if self.call_s.size else np.zeros((0, len(self.n)))
        a.flags.writeable = False
        return a

    def samples(self, n: int) -> np.ndarray | None:
        """The per-repeat seconds of one call of ``n`` tokens; None where that width was not timed."""
        return self.per_repeat_s[:, self.n.index(n)] if n in self.n and self.per_repeat_s.size else None


@dataclass(frozen=True)
class CallTimings:
    """The cost model's raw samples: per tier, calls of each width on top of a mid-row cache."""

    rows: int
    repeats: int
    fresh_sessions: bool | None
    tiers: dict[str, TierCalls]


@dataclass(frozen=True)
class LayoutVariant:
    """One layout's greedy decode of the golden rows; samples are repeats x rows."""

    path: str
    layout: str
    tokens: tuple[int, ...]
    calls: tuple[int, ...]
    wall_s: np.ndarray
    run_s: np.ndarray

    @property
    def per_repeat_ms_per_token(self) -> np.ndarray:
        return 1000 * self.wall_s.sum(axis=1) / max(1, sum(self.tokens))

    @property
    def run_s_per_call(self) -> float:
        """Seconds inside session.run per call, every repeat together."""
        calls = sum(self.calls) * self.wall_s.shape[0]
        return float(self.run_s.sum()) / calls if calls else float("nan")


@dataclass(frozen=True)
class LayoutPair:
    """One model's merged and split decoder layouts on the same weights, repeats interleaved."""

    name: str
    same_outputs: bool
    merged: LayoutVariant
    split: LayoutVariant


@dataclass(frozen=True)
class Wallclock:
    warmup: int
    repeats: int
    repeats_done: int
    fresh_sessions: bool | None
    cases: dict[str, Case]
    profile: Profile | None = None
    """Records from before the cost profile, and runs with ``profile = false`` and no sweep, have none."""
    call_costs: CallTimings | None = None
    """Records from before the cost model, and runs with ``call_costs = false`` or no pairs, have none."""
    layouts: tuple[LayoutPair, ...] = ()
    """Runs with no ``[[layouts]]`` have none."""
    timed: str = "text"
    """The region ``wall_s`` spans: ``ids`` (ids in -> ids out, tokenizing in ``Case.tokenize_s``) or ``text``
    (source text in, tokenizing included: every record older than the field)."""
    resolution_s: float = 1e-9
    """What every sample is recorded to: 1e-6 (a microsecond) since 2026-12; a nanosecond in older records."""

    def greedy(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "greedy" and c.measured]

    def speculative(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "speculative" and c.measured]
