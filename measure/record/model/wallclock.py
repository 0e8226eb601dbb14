"""The wall-clock section: cases and their raw samples (repeats x rows), the cost profile, call costs and layouts.

Each class reads itself (``from_dict``) beside the sums every reader takes of it; the builders the suites fill
in place (a run saves after every pass, so they are plain dicts at this edge) follow, in the record's key order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from measure.record.model.bandwidth import BandwidthProbe, KernelTiming, bandwidth_of, kernels_of
from measure.record.model.convert import array, cube, ints, present, table, vector
from measure.record.model.section import filed_under

Part = dict[str, Any]

GREEDY = "greedy"
SPECULATIVE = "speculative"
"""A wall-clock case's ``kind``."""


@dataclass(frozen=True)
class Case:
    """One wall-clock case: a greedy tier, or a speculative pair at one k. Samples are repeats x rows."""

    name: str = filed_under()
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

    @classmethod
    def from_dict(cls, name: str, c: Part) -> Case:
        spec = c["kind"] == SPECULATIVE
        return cls(
            name=name,
            kind=c["kind"],
            tokens=ints(c["tokens"]),
            calls=ints(c.get("calls")),
            outputs_stable=bool(c.get("outputs_stable", True)),
            wall_s=array(c["wall_s"]),
            run_s=array(c["run_s"]),
            cpu_s=array(c["cpu_s"]) if "cpu_s" in c else None,
            tokenize_s=array(c["tokenize_s"]) if "tokenize_s" in c else None,
            tier=c.get("tier"),
            pair=c.get("pair"),
            drafter=c.get("drafter"),
            verifier=c.get("verifier"),
            k=c.get("k"),
            proposed=ints(c.get("proposed")),
            accepted=ints(c.get("accepted")),
            rounds=ints(c.get("rounds")),
            bonus=ints(c.get("bonus")),
            drafter_calls=ints(c.get("drafter_calls")),
            verifier_calls=ints(c.get("verifier_calls")),
            proposed_by_position=ints(c.get("proposed_by_position")),
            accepted_by_position=ints(c.get("accepted_by_position")),
            drafter_run_s=array(c["drafter_run_s"]) if spec and "drafter_run_s" in c else None,
            verifier_run_s=array(c["verifier_run_s"]) if spec and "verifier_run_s" in c else None,
            first_token_s=array(c["first_token_s"]) if present(c.get("first_token_s")) else None,
            source_tokens=ints(c.get("source_tokens")),
        )


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

    @classmethod
    def from_dict(cls, t: Part, rows: int) -> TierCalls:
        return cls(ints(t["n"]), ints(t["cache_tokens"]), cube(t["call_s"], len(t["n"]), rows))


@dataclass(frozen=True)
class CallTimings:
    """The cost model's raw samples: per tier, calls of each width on top of a mid-row cache."""

    rows: int
    repeats: int
    tiers: dict[str, TierCalls]
    fresh_sessions: bool | None = None
    """Records before the field do not say."""

    @classmethod
    def from_dict(cls, c: Part | None) -> CallTimings | None:
        if not c:
            return None
        rows = int(c["rows"])
        return cls(
            rows=rows,
            repeats=int(c["repeats"]),
            tiers={name: TierCalls.from_dict(t, rows) for name, t in c["tiers"].items()},
            fresh_sessions=c.get("fresh_sessions"),
        )


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

    @classmethod
    def from_dict(cls, v: Part) -> LayoutVariant:
        width = len(v["tokens"])
        return cls(
            v["path"],
            v["layout"],
            ints(v["tokens"]),
            ints(v["calls"]),
            table(v["wall_s"], width),
            table(v["run_s"], width),
        )


@dataclass(frozen=True)
class LayoutPair:
    """One model's merged and split decoder layouts on the same weights, repeats interleaved."""

    name: str = filed_under()
    same_outputs: bool
    merged: LayoutVariant
    split: LayoutVariant
    repeats: int = 0
    """Repeats both layouts have (each saved as one)."""

    @classmethod
    def from_dict(cls, name: str, x: Part) -> LayoutPair:
        merged, split = LayoutVariant.from_dict(x["merged"]), LayoutVariant.from_dict(x["split"])
        return cls(name, bool(x["same_outputs"]), merged, split, int(x.get("repeats", 0)))


@dataclass(frozen=True)
class Wallclock:
    warmup: int
    repeats: int
    order: str
    """How the cases' repeats run: ``interleaved`` (one pass of every case, then the next repeat)."""
    repeats_done: int
    cases: dict[str, Case]
    fresh_sessions: bool | None = None
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
    warmup_s: float = 0.0
    """The warm-up's least seconds (beside its least passes, ``warmup``); 0 in records before it."""
    warmup_passes: int | None = None
    """The untimed passes the warm-up took; None until it ends, and in records before the field."""

    def greedy(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "greedy" and c.measured]

    def speculative(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "speculative" and c.measured]

    @classmethod
    def from_dict(cls, wc: Part | None) -> Wallclock | None:
        """The ``wallclock`` part: cases, and the cost profile, call costs and layouts where the run measured them."""
        if not wc:
            return None
        passes = wc.get("warmup_passes")
        return cls(
            warmup=int(wc.get("warmup", 0)),
            repeats=int(wc.get("repeats", 0)),
            order=str(wc.get("order", "interleaved")),
            repeats_done=int(wc.get("repeats_done", 0)),
            cases={name: Case.from_dict(name, c) for name, c in wc.get("cases", {}).items()},
            fresh_sessions=wc.get("fresh_sessions"),
            profile=Profile.from_dict(wc.get("profile")),
            call_costs=CallTimings.from_dict(wc.get("call_costs")),
            layouts=tuple(LayoutPair.from_dict(name, x) for name, x in (wc.get("layouts") or {}).items()),
            timed=str(wc.get("timed", "text")),
            resolution_s=float(wc.get("resolution_s", 1e-9)),
            warmup_s=float(wc.get("warmup_s", 0.0)),
            warmup_passes=None if passes is None else int(passes),
        )


# ------------------------------------------------------------------ the parts a run fills in place


def wallclock_header(
    warmup: int, warmup_s: float, repeats: int, timed: str, fresh_sessions: bool, resolution_s: float
) -> Part:
    """The wall-clock section as it starts: how it is measured, no case yet."""
    return {
        "warmup": warmup,
        "warmup_s": warmup_s,
        "repeats": repeats,
        "order": "interleaved",
        "timed": timed,
        "fresh_sessions": fresh_sessions,
        "resolution_s": resolution_s,
        "repeats_done": 0,
        "cases": {},
    }


def warmed_up(part: Part, passes: int) -> None:
    """The untimed passes the warm-up took (at least ``warmup``, and ``warmup_s`` seconds)."""
    part["warmup_passes"] = passes


def repeat_done(part: Part, repeats: int) -> None:
    """Every case has this many timed repeats: saved so, an interrupted run says how far it got."""
    part["repeats_done"] = repeats


def greedy_facts(tier: str) -> Part:
    """What a greedy case measures (the case's key is the tier's name)."""
    return {"kind": GREEDY, "tier": tier}


def speculative_facts(pair: str, drafter: str, verifier: str, k: int) -> Part:
    """What a speculative case measures (keyed ``<pair>@k<k>``)."""
    return {"kind": SPECULATIVE, "pair": pair, "drafter": drafter, "verifier": verifier, "k": k}


@dataclass(frozen=True)
class SpeculativeCounts:
    """A speculative case's per-row counts of one pass, and its acceptance by draft position (k each)."""

    proposed: list[int]
    accepted: list[int]
    rounds: list[int]
    bonus: list[int]
    drafter_calls: list[int]
    verifier_calls: list[int]
    proposed_by_position: list[int]
    accepted_by_position: list[int]

    def to_dict(self) -> Part:
        return {
            "proposed": self.proposed,
            "accepted": self.accepted,
            "rounds": self.rounds,
            "bonus": self.bonus,
            "drafter_calls": self.drafter_calls,
            "verifier_calls": self.verifier_calls,
            "proposed_by_position": self.proposed_by_position,
            "accepted_by_position": self.accepted_by_position,
        }


@dataclass(frozen=True)
class CasePass:
    """One timed pass of a case over the golden rows: one value per row of each sample.

    ``drafter_run_s`` and ``verifier_run_s`` belong to speculative cases, ``first_token_s`` to greedy ones and to
    decoder-only speculative ones (the verifier's prefill decides the first token). ``source_tokens``: the ids
    each row's timed region takes (prompt or source), so prefill time per prompt token can be read.
    """

    tokens: list[int]
    calls: list[int]
    wall_s: list[float]
    run_s: list[float]
    cpu_s: list[float]
    tokenize_s: list[float]
    drafter_run_s: list[float] | None = None
    verifier_run_s: list[float] | None = None
    first_token_s: list[float] | None = None
    source_tokens: list[int] | None = None

    @property
    def speculative(self) -> bool:
        return self.drafter_run_s is not None


def case_entry(facts: Part, first: CasePass, counts: SpeculativeCounts | None) -> Part:
    """A case's entry as its first pass makes it: what it measures, the per-row counts, empty sample lists."""
    entry = facts | {"tokens": first.tokens, "calls": first.calls}
    if first.source_tokens is not None:
        entry["source_tokens"] = first.source_tokens
    entry["outputs_stable"] = True
    if counts is not None:
        entry |= counts.to_dict()
    entry |= {"wall_s": [], "run_s": [], "cpu_s": [], "tokenize_s": []}
    if first.speculative:
        entry |= {"drafter_run_s": [], "verifier_run_s": []}
    if first.first_token_s is not None:
        entry["first_token_s"] = []
    return entry


def append_pass(entry: Part, p: CasePass) -> None:
    """Add one pass's samples to a case's entry; a pass whose token counts differ marks its outputs unstable."""
    if p.tokens != entry["tokens"]:
        entry["outputs_stable"] = False
    for key in ("wall_s", "run_s", "cpu_s", "tokenize_s"):
        entry[key].append(getattr(p, key))
    optional = ("drafter_run_s", "verifier_run_s") if p.speculative else ()
    for key in (*optional, "first_token_s"):
        if key in entry and getattr(p, key) is not None:
            entry[key].append(getattr(p, key))


# ------------------------------------------------------------------ cost profile


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


# ------------------------------------------------------------------ call costs and layouts


def call_costs_part(rows: int, fresh_sessions: bool, tiers: dict[str, tuple[list[int], list[int]]]) -> Part:
    """The call costs as they start: per tier its widths ``n`` and per row the cached tokens, no repeat yet."""
    return {
        "rows": rows,
        "repeats": 0,
        "fresh_sessions": fresh_sessions,
        "tiers": {name: {"n": n, "cache_tokens": cache, "call_s": []} for name, (n, cache) in tiers.items()},
    }


def add_call_repeat(costs: Part, samples: dict[str, list[list[float]]], repeats: int) -> None:
    """One repeat's seconds per tier (per width, per row), and the repeats now done."""
    for name, found in samples.items():
        costs["tiers"][name]["call_s"].append(found)
    costs["repeats"] = repeats


def layout_variant(path: str, layout: str, tokens: list[int], calls: list[int]) -> Part:
    """One layout's side of a comparison as it starts: its per-row counts, no timed repeat yet."""
    return {"path": path, "layout": layout, "tokens": tokens, "calls": calls, "wall_s": [], "run_s": []}


def layout_pair(same_outputs: bool, merged: Part, split: Part) -> Part:
    return {"same_outputs": same_outputs, "repeats": 0, "merged": merged, "split": split}


def add_layout_repeat(pair: Part, samples: dict[str, tuple[list[float], list[float]]], repeats: int) -> None:
    """One repeat of both layouts at once, ``(wall_s, run_s)`` per side, so a stopped run keeps paired repeats."""
    for side, (wall_s, run_s) in samples.items():
        pair[side]["wall_s"].append(wall_s)
        pair[side]["run_s"].append(run_s)
    pair["repeats"] = repeats
