"""Each tier's decode against the machine's memory-bandwidth bound, and which effect decides its speed.

At batch 1 a decode step reads every weight once and the cache it has, so its time is bounded below by
*bytes per step / read bandwidth*. The bytes are the record's count from the tier's step graph
(:class:`~measure.record.model.Traffic`) with the cache at the mean number of positions the run's decode steps
had (prompt or start token plus the outputs so far, from the wall-clock case's calls and prompts); the
bandwidth is the cost profile's probe at the run's thread count (:class:`~measure.record.model.BandwidthProbe`).
The measured time is a decode step's: the wall clock after each row's first token over the calls after the
first (the prompt's call reads the same weights but computes far more).

*efficiency* = bound / measured. Near its bound (:data:`NEAR_BOUND` or more), a tier is as fast as its bytes
allow: only fewer bytes, a lower precision, make it faster. Far from it, its kernels are the limit (int4 at
accuracy level 0 dequantizes to fp32 and multiplies there): a setting or a runtime change makes it faster.
A tier whose bytes fit in the last-level cache is not bound by memory at all, and is said so, not given a
ratio. Pure functions of the record.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from measure.analysis.stats import Estimate, summarize
from measure.record.model import BandwidthProbe, CacheLevel, Case, KernelTiming, Record, TierEntry, Traffic

NEAR_BOUND = 0.5
"""At this share of its bound or more, memory traffic is most of a step's time: bytes decide, not kernels."""
MB = 1e6


@dataclass(frozen=True)
class MachineBandwidth:
    """The probe's figures: median read bandwidth at the run's thread count and at one, and the caches."""

    bytes_per_s: float
    threads: int
    single_thread_bytes_per_s: float | None
    buffer_bytes: int
    passes: int
    method: str
    last_level_bytes: int | None
    cache_source: str
    """sysfs, lscpu, sysctl or unknown."""
    caches: tuple[CacheLevel, ...]


@dataclass(frozen=True)
class KernelRate:
    """One operator of a tier timed alone: the rate it reads its weights at, against the probe's bandwidth."""

    op: str
    label: str
    """``MatMulNBits (int4, block 32, accuracy level 0)``: the operator with what decides its kernel."""
    bytes_per_s: float
    share: float | None
    """Of the probe's bandwidth; None without a probe."""
    op_bytes: int
    """Bytes every node of this operator in the tier's step reads."""


@dataclass(frozen=True)
class TierBound:
    """One tier's bytes per decode step, its bound, its measured step time and what decides it."""

    tier: str
    precision: str
    weights_bytes: int
    embedding_bytes: int
    kv_bytes: float
    """The cache a mean step reads (self-attention, and an encoder-decoder's source side)."""
    positions: float
    """Mean cached positions a decode step reads (prompt or start token plus outputs so far)."""
    bytes_per_token: float
    ms_per_token: Estimate | None
    """A decode step's measured time (calls after each row's first); None where the tier was not timed."""
    bound_ms_per_token: float | None
    """bytes / the probe's bandwidth; None without a probe."""
    efficiency: float | None
    """bound / measured; None where the bound does not apply or either side is missing."""
    limit: str
    """memory (near its bound), kernels (far from it), beyond (faster than its bound), cache (its bytes fit in
    the last-level cache), unmeasured (no timing) or unprobed (no bandwidth)."""
    finding: str
    """The sentence that says which effect decides, with its figures."""
    kernels: tuple[KernelRate, ...] = ()
    """Its matrix kernels timed alone (tiers beyond the last-level cache, records that timed them)."""
    kernel_ms_per_token: float | None = None
    """A step at its kernels' own rates: each timed operator's bytes at its rate, the rest at the bandwidth."""

    @property
    def applies(self) -> bool:
        """Whether the memory bound says anything about this tier (its bytes do not fit in the cache)."""
        return self.limit not in ("cache", "unprobed")


@dataclass(frozen=True)
class Roofline:
    bandwidth: MachineBandwidth | None
    tiers: tuple[TierBound, ...]

    def of(self, tier: str) -> TierBound | None:
        return next((t for t in self.tiers if t.tier == tier), None)


def machine_bandwidth(probe: BandwidthProbe) -> MachineBandwidth | None:
    found = probe.bytes_per_s()
    if found is None:
        return None
    return MachineBandwidth(
        bytes_per_s=found,
        threads=probe.threads,
        single_thread_bytes_per_s=probe.bytes_per_s(1) if probe.threads != 1 else found,
        buffer_bytes=probe.buffer_bytes,
        passes=int(probe.read_s[probe.threads].size),
        method=probe.method,
        last_level_bytes=probe.last_level_bytes,
        cache_source=probe.caches.source,
        caches=probe.caches.levels,
    )


def mean_positions(kind: str, calls: tuple[int, ...], source_tokens: tuple[int, ...]) -> tuple[float, float]:
    """(cached positions, source tokens) a decode step reads, averaged over every step after a row's first call.

    Decoder-only: step j of a row with prompt P reads P + j positions. Encoder-decoder: j + 1 (the start
    token's), and the row's source each step."""
    prompts = source_tokens if len(source_tokens) == len(calls) else (0,) * len(calls)
    steps = [max(0, c - 1) for c in calls]
    total = sum(steps)
    if not total:
        return 0.0, 0.0
    if kind == "causal":
        positions = sum(m * p + m * (m + 1) / 2 for m, p in zip(steps, prompts, strict=True))
        return positions / total, 0.0
    positions = sum(m * (m + 1) / 2 + m for m in steps)
    return positions / total, sum(m * s for m, s in zip(steps, prompts, strict=True)) / total


def decode_ms_per_token(case: Case) -> Estimate | None:
    """A decode step's time: per repeat, the rows' wall clock after their first token over their later calls
    (the whole decode over its tokens where the record has no first-token samples)."""
    if not case.measured:
        return None
    first, steps = case.first_token_s, sum(max(0, c - 1) for c in case.calls)
    if first is None or first.shape != case.wall_s.shape or not steps:
        return summarize(case.per_repeat_ms_per_token)
    return summarize(1000 * np.maximum((case.wall_s - first).sum(axis=1), 0.0) / steps)


def _mb(x: float) -> str:
    return f"{x / MB:.1f} MB" if x >= MB else f"{x / 1e3:.0f} kB"


def _nbits_note(entry: TierEntry) -> str:
    n = entry.nbits
    if n is None or n.accuracy_level == 4:
        return ""
    return f" (at accuracy level {n.accuracy_level} it dequantizes to {n.computes}; level 4 multiplies in int8)"


def _timed(entry: TierEntry, kernels: tuple[KernelRate, ...]) -> str:
    """What the kernels timed alone say: one reads far below the bandwidth, or all read near it."""
    known = [k for k in kernels if k.share is not None]
    slowest = min(known, key=lambda k: k.share or 0.0)
    if (slowest.share or 0.0) < NEAR_BOUND:
        note = _nbits_note(entry) if slowest.op == "MatMulNBits" else ""
        return (
            f"its {slowest.label} alone reads its weights at {slowest.bytes_per_s / 1e9:.1f} GB/s, "
            f"{slowest.share:.0%} of the machine's bandwidth{note}: that kernel is the limit"
        )
    rates = sorted(k.bytes_per_s / 1e9 for k in known)
    span = f"{rates[0]:.1f}" if len(rates) == 1 else f"{rates[0]:.1f}–{rates[-1]:.1f}"
    return (
        f"its matrix kernels alone read at {span} GB/s, near the machine's bandwidth: the time goes between "
        "them (activation quantizing, attention, the work around the calls)"
    )


def _kernel(entry: TierEntry) -> str:
    """What is slow in a tier's kernels, as far as its graph says."""
    n = entry.nbits
    if n is not None and n.accuracy_level != 4:
        return (
            f"its MatMulNBits kernel at accuracy level {n.accuracy_level} dequantizes the int{n.bits} weights to "
            f"{n.computes} and multiplies there (accuracy level 4 multiplies in int8)"
        )
    if "int8" in entry.precision:
        return "its int8 kernels (quantizing each activation, multiplying, scaling back) are the limit"
    return "its kernels, or the work between them, are the limit"


def _finding(name: str, entry: TierEntry, bound: TierBound) -> str:
    """The sentence for one tier, by its limit (the figures already computed)."""
    size = _mb(bound.bytes_per_token)
    if bound.limit == "unprobed":
        return f"{name} reads {size} per token; the run probed no bandwidth, so no bound is computed."
    if bound.limit == "cache":
        return (
            f"{name} reads {size} per token, which fits in the last-level cache: the memory-bandwidth bound "
            "does not apply (its weights stay in cache between steps)."
        )
    if bound.limit == "unmeasured":
        return (
            f"{name} reads {size} per token, bound {bound.bound_ms_per_token:.3f} ms/token; its decode was not timed."
        )
    share, at = bound.efficiency or 0.0, f"{bound.bound_ms_per_token:.3f} ms/token"
    if bound.limit == "beyond":
        return (
            f"{name} ran faster than its bound ({share:.0%} of it; {at} for {size} per token): part of its bytes "
            "stay in the last-level cache between steps, or the probe read below the machine's bandwidth."
        )
    if bound.limit == "memory":
        return (
            f"{name} runs at {share:.0%} of its memory-bandwidth bound ({at} for {size} per token): only fewer "
            "bytes per token (a lower precision) make it faster."
        )
    why = _timed(entry, bound.kernels) if any(k.share is not None for k in bound.kernels) else _kernel(entry)
    return (
        f"{name} runs at {share:.0%} of its memory-bandwidth bound ({at} for {size} per token): memory is not "
        f"its limit; {why}: a setting or a runtime change, not fewer bytes, makes it faster."
    )


def _label(k: KernelTiming) -> str:
    a = k.attributes
    if k.op == "MatMulNBits":
        bits, block, level = a.get("bits", 4), a.get("block_size", 0), a.get("accuracy_level", 0)
        return f"MatMulNBits (int{bits}, block {block}, accuracy level {level})"
    return k.op


def kernel_rates(timings: tuple[KernelTiming, ...], bw: MachineBandwidth | None) -> tuple[KernelRate, ...]:
    out = []
    for k in timings:
        rate = k.bytes_per_s
        if rate:
            share = rate / bw.bytes_per_s if bw is not None else None
            out.append(KernelRate(k.op, _label(k), rate, share, k.op_bytes))
    return tuple(out)


def kernel_ms(total: float, kernels: tuple[KernelRate, ...], bw: MachineBandwidth | None) -> float | None:
    """A step's time at its kernels' own rates: each timed operator's bytes at its rate, the rest at the
    bandwidth (None without both)."""
    if not kernels or bw is None:
        return None
    timed = sum(k.op_bytes for k in kernels)
    return 1000 * (sum(k.op_bytes / k.bytes_per_s for k in kernels) + max(0.0, total - timed) / bw.bytes_per_s)


def tier_bound(
    name: str,
    entry: TierEntry,
    traffic: Traffic,
    case: Case | None,
    bw: MachineBandwidth | None,
    timings: tuple[KernelTiming, ...] = (),
) -> TierBound:
    """One tier's figures and its sentence."""
    positions, source = mean_positions(entry.kind, case.calls, case.source_tokens) if case else (0.0, 0.0)
    kv = traffic.kv_bytes_per_position * positions + traffic.cross_bytes_per_source_token * source
    total = traffic.bytes_at(positions, source)
    measured = decode_ms_per_token(case) if case is not None else None
    bound = 1000 * total / bw.bytes_per_s if bw is not None else None
    efficiency, limit = None, "unprobed"
    if bw is not None and bw.last_level_bytes is not None and total <= bw.last_level_bytes:
        limit = "cache"
    elif bound is not None and (measured is None or measured.value <= 0):
        limit = "unmeasured"
    elif bound is not None and measured is not None:
        efficiency = bound / measured.value
        limit = "beyond" if efficiency > 1 else "memory" if efficiency >= NEAR_BOUND else "kernels"
    kernels = kernel_rates(timings, bw)
    found = TierBound(
        name,
        entry.precision,
        traffic.weights_bytes,
        traffic.embedding_bytes,
        kv,
        positions,
        total,
        measured,
        bound,
        efficiency,
        limit,
        "",
        kernels,
        kernel_ms(total, kernels, bw),
    )
    return replace(found, finding=_finding(name, entry, found))


def roofline(record: Record) -> Roofline | None:
    """Every tier with a step count, against the record's probe; None where no tier has its bytes counted."""
    counted = {name: t for name, t in record.tiers.items() if t.traffic is not None}
    if not counted:
        return None
    wc = record.wallclock
    probe = wc.profile.bandwidth if wc is not None and wc.profile is not None else None
    bw = machine_bandwidth(probe) if probe is not None else None
    cases = {c.name: c for c in wc.greedy()} if wc is not None else {}
    timed = wc.profile.kernels if wc is not None and wc.profile is not None else {}
    tiers = tuple(
        tier_bound(name, entry, entry.traffic, cases.get(name), bw, timed.get(name, ()))  # type: ignore[arg-type]
        for name, entry in counted.items()
    )
    return Roofline(bw, tiers)


def _binary(size: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size} B"


def machine_line(bw: MachineBandwidth) -> str:
    """The machine's figures in one sentence, as ``show`` and the pages state them beside a bound."""
    one = ""
    if bw.threads != 1 and bw.single_thread_bytes_per_s is not None:
        one = f" ({bw.single_thread_bytes_per_s / 1e9:.1f} GB/s on one thread)"
    names = {"Data": "d", "Instruction": "i"}
    levels = ", ".join(
        f"L{c.level}{names.get(c.type, '')} {_binary(c.bytes)}" + (f" ×{c.instances}" if c.instances > 1 else "")
        for c in bw.caches
    )
    caches = f"caches ({bw.cache_source}): {levels}" if levels else "cache sizes unknown"
    return (
        f"read bandwidth {bw.bytes_per_s / 1e9:.1f} GB/s on {bw.threads} thread(s){one}, the median of {bw.passes} "
        f"passes over {_binary(bw.buffer_bytes)}; {caches}"
    )
