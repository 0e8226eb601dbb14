"""The onnxruntime-genai leg as the record stores it, built from :mod:`measure.suites.legs.genai_driver`'s answers.

A leg like the Node and browser ones (greedy decodes, where they leave Python's, timed passes
in ``timing``), plus what only this runtime answers: the compiled loop's time per decode step
beside measure's on the same graph and rows (``genai``), and its draft-model speculative
decoding beside measure's for the same pair (the leg's ``speculative``).
"""

from __future__ import annotations

from statistics import median
from typing import Any

from measure.record.model.write_framing import MEASURED, leg_tier, runtime_leg, stopped

Part = dict[str, Any]

RUNTIME = "onnxruntime-genai"
LANGUAGE = "c++"
"""og's generate loop is compiled C++; Python only calls into it once per token."""
HOST = "a C++ generate loop (og.Generator) called from Python"
SEQ2SEQ_SKIP = "onnxruntime-genai runs decoder-only models"


def genai_leg_part(version: str | None) -> Part:
    """The leg as it starts: measured until the runtime is found missing; draft-model pairs follow the tiers."""
    return runtime_leg(RUNTIME, LANGUAGE) | {"version": version, "host": HOST, "speculative": []}


def _spread(samples: list[float | None]) -> Part:
    kept = [float(x) for x in samples if x is not None]
    return {"median": median(kept) if kept else None, "samples": kept}


def _passes(rows: list[Part], prefix: str) -> list[float]:
    """Wall ms of each repeat's pass over every row (first token + decode steps), as the other legs' greedy_ms."""
    repeats = len(rows[0][f"{prefix}decode_ms"]) if rows else 0
    return [sum(r[f"{prefix}first_token_ms"][k] + r[f"{prefix}decode_ms"][k] for r in rows) for k in range(repeats)]


def genai_tier_part(name: str, precision: str, answer: Part, outputs: list[str], lines: list[int]) -> Part:
    """One decoder-only tier's answer from ``run_genai_tier``: failed with og's message, or measured."""
    entry = leg_tier(name, precision)
    if answer.get("status") != "ok":
        return entry | stopped("failed", answer.get("message", "onnxruntime-genai failed"))
    rows = answer["rows"]
    ours, theirs = _passes(rows, "measure_"), _passes(rows, "")
    per_step = [
        (m / answer["measure_steps"]) / (o / answer["steps"]) if answer["steps"] and answer["measure_steps"] else None
        for m, o in zip(
            [sum(r["measure_decode_ms"][k] for r in rows) for k in range(len(ours))],
            [sum(r["decode_ms"][k] for r in rows) for k in range(len(theirs))],
            strict=True,
        )
        if o > 0
    ]
    divergence = [
        r["divergence"] | {"row": i, "line": lines[i]} for i, r in enumerate(rows) if r.get("divergence") is not None
    ]
    return entry | {
        "status": MEASURED,
        "blocks": [],
        "output_ids": [r["tokens"] for r in rows],
        "outputs": outputs,
        "divergence": divergence,
        "timing": {"greedy_ms": theirs, "tokens": sum(len(r["tokens"]) for r in rows)},
        "genai": {
            "config": answer["config"],
            "cache": answer["cache"],
            "equal_rows": answer["equal_rows"],
            "logits_max_abs_diff": max((r["logits_max_abs_diff"] for r in rows), default=0.0),
            "steps": answer["steps"],
            "measure_steps": answer["measure_steps"],
            "first_token_ms": answer["first_token_ms"],
            "ms_per_step": _spread(answer["ms_per_step"]["samples"]),
            "measure_first_token_ms": answer["measure_first_token_ms"],
            "measure_ms_per_step": _spread(answer["measure_ms_per_step"]["samples"]),
            "measure_greedy_ms": ours,
            "measure_over_og": _spread(per_step) | {"row_median": answer["measure_over_og"]},
        },
    }


def genai_pair_part(drafter: str, verifier: str, k: int, answer: Part) -> Part:
    """og's draft-model speculative decoding of one decoder-only pair beside measure's at the same draft length."""
    entry: Part = {"drafter": drafter, "verifier": verifier, "k": k}
    if answer.get("status") != "ok":
        return entry | stopped(answer["status"], answer.get("reason") or answer.get("message", ""))
    rows = answer["rows"]

    def total(key: Any) -> int:
        return int(sum(key(r) or 0 for r in rows))

    return entry | {
        "status": MEASURED,
        "rows": len(rows),
        "acceptance": {
            "accepted": total(lambda r: r["draft_tokens_accepted"]),
            "proposed": total(lambda r: r["draft_tokens_proposed"]),
        },
        "speedup": answer["speedup"],
        "equal_greedy_rows": answer["equal_greedy_rows"],
        "differing_rows": answer["differing_rows"],
        "measure": {
            "acceptance": {
                "accepted": total(lambda r: r["measure"]["accepted"]),
                "proposed": total(lambda r: r["measure"]["proposed"]),
            },
            "speedup": answer["measure_speedup"],
            "equal_greedy_rows": sum(r["measure"]["equal_greedy"] for r in rows),
        },
    }
