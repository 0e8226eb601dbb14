"""metrics.json: the headline numbers of each machine's current state, for scripts that read the site.

A rendering of each machine's :class:`~measure.analysis.record_analysis.Analysis`, as the pages are: plain numbers
(times in ms, memory in bytes), no markup.
"""

from __future__ import annotations

from typing import Any

from measure.analysis.cost_model import CostModel
from measure.analysis.current import Current
from measure.analysis.judgments import judgments
from measure.analysis.profile import TierProfile
from measure.analysis.record_analysis import Analysis


def _estimate(e: Any) -> dict[str, Any] | None:
    return None if e is None else e.to_dict()


def cost_metrics(c: TierProfile) -> dict[str, Any]:
    """One tier's cost profile as metrics.json states it (times in ms, memory in bytes; None where not measured)."""
    return {
        "bytes": c.bytes,
        "load_cold_ms": _estimate(c.load_cold_ms),
        "load_warm_ms": _estimate(c.load_warm_ms),
        "peak_rss_bytes": _estimate(c.peak_rss_bytes),
        "memory_bytes": _estimate(c.memory_bytes),
        "first_token_ms": _estimate(c.first_token_ms),
        "next_token_ms": _estimate(c.next_token_ms),
        "row_ms": _estimate(c.row_ms),
        "token_ms": _estimate(c.token_ms),
        "threads_ms_per_token": {str(n): e.to_dict() for n, e in c.threads_ms_per_token.items()},
        "fastest_threads": c.fastest_threads,
        "size_vs_plain": c.size_vs_plain,
        "load_vs_plain": _estimate(c.load_vs_plain),
        "memory_vs_plain": _estimate(c.memory_vs_plain),
        "first_token_vs_plain": _estimate(c.first_token_vs_plain),
    }


def _cost_metrics(m: CostModel | None) -> dict[str, Any]:
    """The measured cost model as metrics.json states it; nothing for records without it."""
    if m is None:
        return {}
    return {
        "cost_model": {
            r.case: {
                "leviathan": r.prediction.leviathan,
                "measured_cost": r.prediction.measured_cost,
                "batch_ratio": r.prediction.batch_ratio,
                "efficiency": r.efficiency.to_dict(),
                "inside_onnxruntime": None if r.inside is None else r.inside.to_dict(),
                "calls_in_loop_over_alone": r.in_loop,
                "harness": r.harness,
            }
            for r in m.pairs
        },
        "layouts": {
            f.name: {"merged_over_split": f.ratio.to_dict(), "same_outputs": f.same_outputs} for f in m.layouts
        },
    }


def _decoder_only_metrics(a: Analysis) -> dict[str, Any]:
    """Decoder-only tiers' prompt and generation phases; nothing for a record without them."""
    if not a.causal:
        return {}
    return {
        "decoder_only": {
            c.tier: {
                "prompt_tokens": c.prompt_tokens,
                "decode_calls": c.decode_calls,
                "first_token_ms": c.first_token_ms.to_dict(),
                "prefill_ms_per_prompt_token": c.prefill_ms_per_prompt_token.to_dict(),
                "decode_ms_per_token": _estimate(c.decode_ms_per_token),
            }
            for c in a.causal
        }
    }


def _framing_metrics(a: Analysis) -> dict[str, Any]:
    """Per tier: argmax agreement and the worst present difference; a decoder-only tier's prompt framings too."""
    out: dict[str, Any] = {}
    for t in a.record.python_tiers:
        out[t.tier] = {
            "argmax_agree": t.argmax_agree,
            "argmax_total": t.argmax_total,
            "present_max_abs_diff": t.present_max_abs_diff,
        }
        if t.prefill:
            out[t.tier]["prefill"] = {
                "argmax_agree": sum(b.argmax_agree for b in t.prefill),
                "argmax_total": sum(b.argmax_total for b in t.prefill),
                "present_max_abs_diff": max(b.present_max_abs_diff for b in t.prefill),
            }
    return out


def _fidelity_metrics(a: Analysis) -> dict[str, Any]:
    """Each judged tier against its reference: mean KLD, same top-1 and PPL ratio with their intervals."""
    return {
        f.tier: {
            "reference": f.reference,
            "positions": f.greedy.positions,
            "kld_mean": f.greedy.kld_mean.to_dict(),
            "kld_quantiles": {str(q): v for q, v in f.greedy.kld_quantiles.items()},
            "same_top1": f.greedy.same_top1.to_dict(),
            "rms_dp": f.greedy.rms_dp,
            "ppl_ratio": f.ppl_ratio.to_dict(),
        }
        for f in a.fidelity
    }


VERDICT_KEYS = ("topic", "question", "subject", "key", "outcome", "answer", "measured", "value", "lo", "hi")
"""What metrics.json keeps of each judgment: its reference and interval level are in ``measured``, as pages say it."""


def metrics(
    latest: dict[str, Analysis], states: dict[str, Current] | None = None, reference: str | None = None
) -> dict[str, Any]:
    """The headline numbers of each machine's current state, for metrics.json.

    ``states``: where each machine's parts come from (``parts``: run id and date per part; ``builds_differ``:
    how their builds differ, empty for one build); ``reference``: the machine the Overview answers for.
    """
    out: dict[str, Any] = {"reference_machine": reference, "machines": {}}
    for machine, a in sorted(latest.items()):
        state = (states or {}).get(machine)
        sources = state.sources if state else dict.fromkeys(a.record.parts, a.record)
        out["machines"][machine] = {
            "run_id": a.record.run_id,
            "date": a.record.date,
            "parts": {p: {"run_id": r.run_id, "date": r.date} for p, r in sources.items()},
            "builds_differ": list(state.differences()) if state else [],
            "tiers": {
                t.tier: {
                    "ms_per_token": t.ms_per_token.to_dict(),
                    "ratio_vs_plain": t.ratio_vs_plain.to_dict() if t.ratio_vs_plain else None,
                    "exponent": t.exponent.to_dict() if t.exponent else None,
                    "overhead": t.overhead,
                }
                for t in a.tiers
            },
            "profile": {c.tier: cost_metrics(c) for c in a.costs},
            "pairs": {
                p.case: {
                    "acceptance": p.acceptance,
                    "predicted_speedup": p.predicted_speedup,
                    "observed_speedup": p.observed_speedup.to_dict(),
                }
                for p in a.pairs
            },
            **_cost_metrics(a.cost_model),
            **_decoder_only_metrics(a),
            "framing": _framing_metrics(a),
            "fidelity": _fidelity_metrics(a),
            "verdicts": [{k: v.to_dict()[k] for k in VERDICT_KEYS} for v in judgments(a)],
        }
    return out
