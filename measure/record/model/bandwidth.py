"""The memory-bandwidth facts a record keeps: the machine's probed read bandwidth and each tier's bytes per step.

Both are written and read here, beside their views: the probe's part (``wallclock.profile.bandwidth``, built
by :func:`bandwidth_part` for :mod:`measure.suites.bandwidth`) and a tier's ``traffic`` (the engine's count,
stored as it is by :func:`measure.record.model.write.tier_part`). Raw seconds per pass only: the bandwidth,
the bound and the efficiency are derived (:mod:`measure.analysis.roofline`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.record.model.convert import vector

Part = dict[str, Any]


# ------------------------------------------------------------------ the machine's read bandwidth


@dataclass(frozen=True)
class CacheLevel:
    level: int
    type: str
    """Data, Instruction or Unified."""
    bytes: int
    """One instance's size."""
    instances: int

    def to_dict(self) -> Part:
        return {"level": self.level, "type": self.type, "bytes": self.bytes, "instances": self.instances}


@dataclass(frozen=True)
class Caches:
    """The CPU's caches and where they were read (``sysfs``, ``lscpu``, ``sysctl`` or ``unknown``)."""

    source: str
    levels: tuple[CacheLevel, ...]

    @property
    def last_level_bytes(self) -> int | None:
        """The largest data-holding level over every instance (None when no level is known)."""
        held = [c for c in self.levels if c.type != "Instruction" and c.bytes]
        if not held:
            return None
        top = max(c.level for c in held)
        return sum(c.bytes * c.instances for c in held if c.level == top)

    def to_dict(self) -> Part:
        return {
            "source": self.source,
            "levels": [c.to_dict() for c in self.levels],
            "last_level_bytes": self.last_level_bytes,
        }


def bandwidth_part(method: str, buffer_bytes: int, runs: dict[int, list[float]], caches: Caches, platform: str) -> Part:
    """The probe's part: per thread count (the run's first) its seconds per pass over ``buffer_bytes``."""
    return {
        "method": method,
        "buffer_bytes": buffer_bytes,
        "runs": [{"threads": n, "read_s": samples} for n, samples in runs.items()],
        "caches": caches.to_dict(),
        "platform": platform,
    }


@dataclass(frozen=True)
class BandwidthProbe:
    """The probe as the record keeps it: seconds per pass at each thread count, and the caches beside them."""

    method: str
    buffer_bytes: int
    read_s: dict[int, np.ndarray]
    """Thread count -> seconds per pass; the run's thread count is the first key."""
    caches: Caches
    last_level_bytes: int | None
    platform: str

    @property
    def threads(self) -> int:
        """The run's intra-op thread count, at which the decode ran."""
        return next(iter(self.read_s))

    def bytes_per_s(self, threads: int | None = None) -> float | None:
        """The median pass's read bandwidth at ``threads`` (the run's count by default); None where not probed."""
        samples = self.read_s.get(self.threads if threads is None else threads)
        if samples is None or not samples.size:
            return None
        return self.buffer_bytes / float(np.median(samples))


def bandwidth_of(p: Part | None) -> BandwidthProbe | None:
    if not p:
        return None
    c = p["caches"]
    levels = tuple(CacheLevel(int(x["level"]), x["type"], int(x["bytes"]), int(x["instances"])) for x in c["levels"])
    return BandwidthProbe(
        method=p["method"],
        buffer_bytes=int(p["buffer_bytes"]),
        read_s={int(r["threads"]): vector(r["read_s"]) for r in p["runs"]},
        caches=Caches(c["source"], levels),
        last_level_bytes=c.get("last_level_bytes"),
        platform=p.get("platform", ""),
    )


# ------------------------------------------------------------------ a tier's bytes per decode step


@dataclass(frozen=True)
class Traffic:
    """What one decode step of a tier reads, by part, as its graph was counted when the tier was measured."""

    graph: str
    weights_bytes: int
    """Matrix-multiplying operators' initializers (scales, zero points, the LM head whole)."""
    embedding_bytes: int
    """One row of each gathered embedding table not tied to the head."""
    kv_bytes_per_position: int
    cross_bytes_per_source_token: int
    """Encoder-decoder tiers: the encoder's output read per source token each step; 0 for decoder-only."""
    weights: int

    def bytes_at(self, positions: float, source_tokens: float = 0.0) -> float:
        """A step's bytes with ``positions`` cached positions (``source_tokens``: an encoder-decoder's source)."""
        kv = self.kv_bytes_per_position * positions + self.cross_bytes_per_source_token * source_tokens
        return self.weights_bytes + self.embedding_bytes + kv


def traffic_of(t: Part | None) -> Traffic | None:
    if not t:
        return None
    return Traffic(
        graph=t["graph"],
        weights_bytes=int(t["weights_bytes"]),
        embedding_bytes=int(t["embedding_bytes"]),
        kv_bytes_per_position=int(t["kv_bytes_per_position"]),
        cross_bytes_per_source_token=int(t.get("cross_bytes_per_source_token", 0)),
        weights=int(t.get("weights", 0)),
    )


# ------------------------------------------------------------------ a tier's kernels timed alone


@dataclass(frozen=True)
class KernelTiming:
    """One operator of a tier's step graph with its most-read weight shape, timed alone at batch 1."""

    op: str
    attributes: dict[str, int]
    """bits, block_size, accuracy_level (0: unset), K, N where the node has them."""
    nodes: int
    weights_bytes: int
    """Bytes one call reads of its weights."""
    copies: int
    call_s: np.ndarray
    """Seconds of one call, per pass."""
    op_bytes: int = 0
    """Bytes every node of this operator in the step graph reads (0 in records before it)."""

    @property
    def bytes_per_s(self) -> float | None:
        """The median call's read rate of its weights."""
        return self.weights_bytes / float(np.median(self.call_s)) if self.call_s.size else None


def kernels_of(p: Part | None) -> dict[str, tuple[KernelTiming, ...]]:
    if not p:
        return {}
    return {
        name: tuple(
            KernelTiming(
                k["op"],
                {a: int(v) for a, v in k.get("attributes", {}).items()},
                int(k["nodes"]),
                int(k["weights_bytes"]),
                int(k["copies"]),
                vector(k["call_s"]),
                int(k.get("op_bytes", 0)),
            )
            for k in found
        )
        for name, found in p["tiers"].items()
    }
