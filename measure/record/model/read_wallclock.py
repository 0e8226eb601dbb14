"""The ``wallclock`` part of a migrated, schema-valid document as its typed views (cases, profile, call costs)."""

from __future__ import annotations

from typing import Any

from measure.record.model.bandwidth import bandwidth_of, kernels_of
from measure.record.model.convert import array, cube, ints, present, table, vector
from measure.record.model.wallclock import (
    CallTimings,
    Case,
    LayoutPair,
    LayoutVariant,
    Profile,
    ThreadSweep,
    TierCalls,
    Wallclock,
    WorkerSamples,
)


def _case(name: str, c: dict[str, Any]) -> Case:
    spec = c["kind"] == "speculative"
    return Case(
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


def _profile(p: dict[str, Any] | None) -> Profile | None:
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
    return Profile(
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


def _call_costs(c: dict[str, Any] | None) -> CallTimings | None:
    if not c:
        return None
    return CallTimings(
        rows=int(c["rows"]),
        repeats=int(c["repeats"]),
        fresh_sessions=c.get("fresh_sessions"),
        tiers={
            name: TierCalls(ints(t["n"]), ints(t["cache_tokens"]), cube(t["call_s"], len(t["n"]), int(c["rows"])))
            for name, t in c["tiers"].items()
        },
    )


def _layout_variant(v: dict[str, Any]) -> LayoutVariant:
    return LayoutVariant(
        v["path"],
        v["layout"],
        ints(v["tokens"]),
        ints(v["calls"]),
        table(v["wall_s"], len(v["tokens"])),
        table(v["run_s"], len(v["tokens"])),
    )


def _layouts(found: dict[str, Any] | None) -> tuple[LayoutPair, ...]:
    return tuple(
        LayoutPair(name, bool(x["same_outputs"]), _layout_variant(x["merged"]), _layout_variant(x["split"]))
        for name, x in (found or {}).items()
    )


def wallclock(wc: dict[str, Any] | None) -> Wallclock | None:
    """The ``wallclock`` part: cases, and the cost profile, call costs and layouts where the run measured them."""
    if not wc:
        return None
    return Wallclock(
        warmup=int(wc.get("warmup", 0)),
        repeats=int(wc.get("repeats", 0)),
        repeats_done=int(wc.get("repeats_done", 0)),
        fresh_sessions=wc.get("fresh_sessions"),
        cases={name: _case(name, c) for name, c in wc.get("cases", {}).items()},
        profile=_profile(wc.get("profile")),
        call_costs=_call_costs(wc.get("call_costs")),
        layouts=_layouts(wc.get("layouts")),
        timed=str(wc.get("timed", "text")),
        resolution_s=float(wc.get("resolution_s", 1e-9)),
    )
