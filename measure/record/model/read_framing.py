"""The ``framing`` part of a migrated, schema-valid document as its typed views (legs, tiers, acceptance)."""

from __future__ import annotations

from typing import Any

from measure.record.model.framing import (
    Acceptance,
    Adapter,
    Block,
    Counts,
    Differing,
    Divergence,
    Execution,
    Framing,
    FramingTier,
    LayerDiff,
    Leg,
    LegTiming,
    Miss,
    Quality,
)
from measure.record.model.genai import GenaiPair, GenaiTier, Spread


def _block(b: dict[str, Any]) -> Block:
    return Block(
        block=b["block"],
        present_max_abs_diff=float(b["present_max_abs_diff"]),
        logits_max_abs_diff=float(b["logits_max_abs_diff"]),
        argmax_agree=int(b["argmax_agree"]),
        argmax_total=int(b["argmax_total"]),
        first_divergent_step=tuple(b["first_divergent_step"]),
        layers=tuple(
            LayerDiff(
                int(x["layer"]),
                float(x.get("key_mean_abs_diff", 0.0)),
                float(x.get("value_mean_abs_diff", 0.0)),
                float(x.get("key_max_abs_diff", 0.0)),
                float(x.get("value_max_abs_diff", 0.0)),
            )
            for x in b.get("layers", ())
        ),
    )


def _quality(q: dict[str, Any] | None) -> Quality | None:
    if q is None:
        return None
    misses = tuple(Miss(int(m["line"]), m["input"], m["expected"], m["output"]) for m in q.get("misses", ()))
    return Quality(int(q["rows"]), int(q["exact"]), float(q["cer_mean"]), misses)


def _framing_tier(t: dict[str, Any]) -> FramingTier:
    ids = t.get("output_ids")
    return FramingTier(
        tier=t["tier"],
        precision=t.get("precision", "?"),
        status=t.get("status", "measured"),
        reason=t.get("reason", ""),
        blocks=tuple(_block(b) for b in t.get("blocks", ())),
        outputs=tuple(t.get("outputs", ())),
        output_ids=None if ids is None else tuple(map(tuple, ids)),
        quality=_quality(t.get("quality")),
        divergence=tuple(_divergence(d) for d in t.get("divergence", ())),
        timing=_leg_timing(t.get("timing")),
        prefill=tuple(_block(b) for b in t.get("prefill", ())),
        genai=_genai(t.get("genai")),
    )


def _spread(s: dict[str, Any] | None) -> Spread:
    s = s or {}
    m = s.get("median")
    return Spread(None if m is None else float(m), tuple(float(x) for x in s.get("samples", ())))


def _genai(g: dict[str, Any] | None) -> GenaiTier | None:
    if not g:
        return None
    return GenaiTier(
        config=g["config"],
        share_buffer=bool((g.get("cache") or {}).get("past_present_share_buffer", False)),
        equal_rows=int(g["equal_rows"]),
        logits_max_abs_diff=float(g["logits_max_abs_diff"]),
        steps=int(g["steps"]),
        measure_steps=int(g["measure_steps"]),
        ms_per_step=_spread(g.get("ms_per_step")),
        measure_ms_per_step=_spread(g.get("measure_ms_per_step")),
        measure_over_og=_spread(g.get("measure_over_og")),
    )


def _counts(c: dict[str, Any] | None) -> Counts:
    return Counts(int((c or {}).get("accepted", 0)), int((c or {}).get("proposed", 0)))


def _genai_pair(p: dict[str, Any]) -> GenaiPair:
    ours = p.get("measure") or {}
    return GenaiPair(
        drafter=p["drafter"],
        verifier=p["verifier"],
        k=int(p["k"]),
        status=p["status"],
        reason=p.get("reason", ""),
        rows=int(p.get("rows", 0)),
        acceptance=_counts(p.get("acceptance")),
        speedup=p.get("speedup"),
        equal_greedy_rows=int(p.get("equal_greedy_rows", 0)),
        measure_acceptance=_counts(ours.get("acceptance")),
        measure_speedup=ours.get("speedup"),
        measure_equal_greedy_rows=int(ours.get("equal_greedy_rows", 0)),
    )


def _divergence(d: dict[str, Any]) -> Divergence:
    python = d.get("python_margin")
    return Divergence(
        row=int(d["row"]),
        line=d.get("line"),
        step=int(d["step"]),
        token=int(d["token"]),
        expected=int(d["expected"]),
        margin=float(d["margin"]),
        python_margin=None if python is None else float(python),
    )


def _leg_timing(t: dict[str, Any] | None) -> LegTiming | None:
    if not t:
        return None
    return LegTiming(tuple(float(ms) for ms in t["greedy_ms"]), int(t["tokens"]))


def _execution(e: dict[str, Any] | None) -> Execution | None:
    if not e:
        return None
    return Execution(
        provider=e["provider"],
        threads=int(e["threads"]),
        threads_requested=e.get("threads_requested"),
        cross_origin_isolated=bool(e["cross_origin_isolated"]),
        simd=bool(e["simd"]),
        hardware_concurrency=e.get("hardware_concurrency"),
        adapter=_adapter(e.get("adapter")),
    )


def _adapter(a: dict[str, Any] | None) -> Adapter | None:
    if not a:
        return None
    return Adapter(
        vendor=a["vendor"],
        architecture=a["architecture"],
        device=a.get("device", ""),
        description=a.get("description", ""),
        fallback=bool(a["fallback"]),
        software=bool(a["software"]),
    )


def _acceptance(a: dict[str, Any]) -> Acceptance:
    return Acceptance(
        drafter=a["drafter"],
        verifier=a["verifier"],
        self_pair=bool(a["self"]),
        k=int(a["k"]),
        probe=Counts(int(a["probe"]["accepted"]), int(a["probe"]["proposed"])),
        runtime=Counts(int(a["runtime"]["accepted"]), int(a["runtime"]["proposed"])),
        rows=int(a["rows"]),
        preserved=int(a["preserved"]),
        differing=tuple(Differing(int(d["line"]), d["input"], d["speculative"], d["greedy"]) for d in a["differing"]),
    )


def framing(fr: dict[str, Any] | None) -> Framing | None:
    """The ``framing`` part: the blocks, each runtime's leg with its tiers, and the acceptance facts."""
    if not fr:
        return None
    legs = tuple(
        Leg(
            runtime=leg["runtime"],
            language=leg["language"],
            version=leg.get("version"),
            host=leg.get("host"),
            status=leg["status"],
            reason=leg.get("reason", ""),
            tiers=tuple(_framing_tier(t) for t in leg.get("tiers", ())),
            execution=_execution(leg.get("execution")),
            speculative=tuple(_genai_pair(p) for p in leg.get("speculative", ())),
            provider=leg.get("provider"),
        )
        for leg in fr.get("legs", ())
    )
    return Framing(tuple(fr.get("blocks", ())), legs, tuple(_acceptance(a) for a in fr.get("acceptance", ())))
