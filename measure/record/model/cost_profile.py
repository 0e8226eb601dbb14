"""The wall-clock section's cost profile (``wallclock.profile``): load time and peak memory per tier, the optional
thread sweep; read here (:meth:`Profile.from_dict`) beside the builders :mod:`measure.suites.profile` fills."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from measure.record.model.bandwidth import BandwidthProbe, KernelTiming, bandwidth_of, kernels_of
from measure.record.model.convert import array, ints, vector

Part = dict[str, Any]


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

    @classmethod
    def from_dict(cls, p: Part | None) -> Profile | None:
        """Its ``memory`` and ``baseline`` objects are read flat (``memory_source``, ``baseline_imports``, ...)."""
        if not p:
            return None
        memory, baseline, sweep = p.get("memory") or {}, p.get("baseline") or {}, p.get("threads")
        threads = None
        if sweep:
            threads = {
                name: ThreadSweep(
                    tokens=ints(t["tokens"]),
                    wall_s={int(r["intra_op_threads"]): array(r["wall_s"]) for r in t["runs"]},
                    fastest=int(t["fastest"]),
                )
                for name, t in sweep["tiers"].items()
            }
        return cls(
            workers=int(p.get("workers", 0)),
            warm_loads=int(p.get("warm_loads", 0)),
            rows=int(p.get("rows", 0)),
            memory_source=memory.get("source"),
            memory_unit_bytes=memory.get("unit_bytes"),
            platform=memory.get("platform"),
            baseline_imports=baseline.get("imports", ""),
            baseline_peak_rss_bytes=vector(baseline.get("peak_rss_bytes")),
            tiers={
                name: WorkerSamples(vector(t["load_cold_s"]), vector(t["load_warm_s"]), vector(t["peak_rss_bytes"]))
                for name, t in (p.get("tiers") or {}).items()
            },
            thread_counts=ints(sweep["counts"]) if sweep else (),
            threads=threads,
            bandwidth=bandwidth_of(p.get("bandwidth")),
            kernels=kernels_of(p.get("kernels")),
        )


def profile_part(workers: int, warm_loads: int, rows: int, baseline_imports: str, tiers: Iterable[str]) -> Part:
    """The cost profile as it starts: each tier's worker samples empty, filled worker by worker."""
    return {
        "workers": workers,
        "warm_loads": warm_loads,
        "rows": rows,
        "baseline": {"imports": baseline_imports, "peak_rss_bytes": []},
        "tiers": {name: {"load_cold_s": [], "load_warm_s": [], "peak_rss_bytes": []} for name in tiers},
    }


def add_baseline_worker(profile: Part, peak_rss: Part) -> None:
    """One baseline worker's peak, and how the workers read their peaks (``memory``)."""
    profile["memory"] = {k: peak_rss[k] for k in ("source", "unit_bytes", "platform")}
    profile["baseline"]["peak_rss_bytes"].append(peak_rss["bytes"])


def add_tier_worker(profile: Part, tier: str, load_cold_s: float, load_warm_s: list[float], peak_bytes: int) -> None:
    entry = profile["tiers"][tier]
    entry["load_cold_s"].append(load_cold_s)
    entry["load_warm_s"].extend(load_warm_s)
    entry["peak_rss_bytes"].append(peak_bytes)


def thread_sweep_part(counts: list[int], repeats: int, rows: int) -> Part:
    return {"counts": counts, "repeats": repeats, "rows": rows, "tiers": {}}


def thread_sweep_tier(tokens: list[int], wall_s: dict[int, list[list[float]]], fastest: int) -> Part:
    """One tier's sweep: ``wall_s`` per thread count (repeats x rows), in the order the counts were given."""
    return {
        "tokens": tokens,
        "runs": [{"intra_op_threads": n, "wall_s": samples} for n, samples in wall_s.items()],
        "fastest": fastest,
    }
