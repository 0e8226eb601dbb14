"""The wall-clock part a run writes: cases and their samples, the cost profile, call costs and layouts.

Spelled here beside their reader (:mod:`measure.record.model.read_wallclock`), in the record's key order.
A run appends to these parts in place and saves after every pass, so they are plain dicts at this edge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Part = dict[str, Any]

GREEDY = "greedy"
SPECULATIVE = "speculative"
"""A wall-clock case's ``kind``."""


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
