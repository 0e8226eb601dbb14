"""The onnxruntime-genai leg's own facts: its compiled loop beside measure's (a tier's ``genai``), and its
draft-model speculative decoding beside measure's (the leg's ``speculative``).

A leg like the Node and browser ones (greedy decodes, where they leave Python's, timed passes in ``timing``), built
from :mod:`measure.suites.legs.genai_driver`'s answers by the builders below; each class reads (``from_dict``) and
writes (``to_dict``) its part. Below the framing tier and leg modules, which hold these parts, so it spells the
leg's and tier's first keys itself rather than import their builders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

from measure.record.model.acceptance import Counts
from measure.record.model.status import MEASURED, stopped, written_reason

Part = dict[str, Any]

RUNTIME = "onnxruntime-genai"
LANGUAGE = "c++"
"""og's generate loop is compiled C++; Python only calls into it once per token."""
HOST = "a C++ generate loop (og.Generator) called from Python"
SEQ2SEQ_SKIP = "onnxruntime-genai runs decoder-only models"


@dataclass(frozen=True)
class Spread:
    """One figure per repeat and their median (None where no repeat had a step to time)."""

    median: float | None
    samples: tuple[float, ...]

    @property
    def lo(self) -> float | None:
        return min(self.samples) if self.samples else None

    @property
    def hi(self) -> float | None:
        return max(self.samples) if self.samples else None

    @classmethod
    def from_dict(cls, s: Part | None) -> Spread:
        s = s or {}
        m = s.get("median")
        return cls(None if m is None else float(m), tuple(float(x) for x in s.get("samples", ())))

    def to_dict(self) -> Part:
        return {"median": self.median, "samples": list(self.samples)}


@dataclass(frozen=True)
class PairedSpread(Spread):
    """measure's over og's per repeat, and the median of the per-row paired ratios (``row_median``)."""

    row_median: float | None = None

    @classmethod
    def from_dict(cls, s: Part | None) -> PairedSpread:
        spread, row = Spread.from_dict(s), (s or {}).get("row_median")
        return cls(spread.median, spread.samples, None if row is None else float(row))

    def to_dict(self) -> Part:
        return super().to_dict() | {"row_median": self.row_median}


def _optional(s: Part | None) -> Spread | None:
    return None if s is None else Spread.from_dict(s)


@dataclass(frozen=True)
class GenaiTier:
    """One decoder-only tier under og's generate loop and measure's, paired repeat by repeat on the same rows."""

    config: str
    """"folder" (the genai folder's own genai_config.json) or "generated" (written for an optimum export)."""
    equal_rows: int
    logits_max_abs_diff: float
    steps: int
    measure_steps: int
    ms_per_step: Spread
    measure_ms_per_step: Spread
    measure_over_og: PairedSpread
    """measure's ms per decode step over og's, per repeat: the overhead of measure's loop over a compiled one."""
    cache: Part | None = None
    """og's cache mode, as its config set it: ``past_present_share_buffer`` and ``max_length``."""
    first_token_ms: Spread | None = None
    measure_first_token_ms: Spread | None = None
    measure_greedy_ms: tuple[float, ...] | None = None
    """measure's loop: wall ms of each repeat's pass over every row, as ``timing.greedy_ms``."""

    @property
    def share_buffer(self) -> bool:
        """One buffer of max_length shared by past and present, or grown each step."""
        return bool((self.cache or {}).get("past_present_share_buffer", False))

    @classmethod
    def from_dict(cls, g: Part | None) -> GenaiTier | None:
        if not g:
            return None
        greedy = g.get("measure_greedy_ms")
        return cls(
            config=g["config"],
            equal_rows=int(g["equal_rows"]),
            logits_max_abs_diff=float(g["logits_max_abs_diff"]),
            steps=int(g["steps"]),
            measure_steps=int(g["measure_steps"]),
            ms_per_step=Spread.from_dict(g.get("ms_per_step")),
            measure_ms_per_step=Spread.from_dict(g.get("measure_ms_per_step")),
            measure_over_og=PairedSpread.from_dict(g.get("measure_over_og")),
            cache=g.get("cache"),
            first_token_ms=_optional(g.get("first_token_ms")),
            measure_first_token_ms=_optional(g.get("measure_first_token_ms")),
            measure_greedy_ms=None if greedy is None else tuple(float(x) for x in greedy),
        )

    def to_dict(self) -> Part:
        optional = {
            "cache": self.cache,
            "first_token_ms": self.first_token_ms.to_dict() if self.first_token_ms else None,
            "measure_first_token_ms": self.measure_first_token_ms.to_dict() if self.measure_first_token_ms else None,
            "measure_greedy_ms": None if self.measure_greedy_ms is None else list(self.measure_greedy_ms),
        }
        return {
            "config": self.config,
            "equal_rows": self.equal_rows,
            "logits_max_abs_diff": self.logits_max_abs_diff,
            "steps": self.steps,
            "measure_steps": self.measure_steps,
            "ms_per_step": self.ms_per_step.to_dict(),
            "measure_ms_per_step": self.measure_ms_per_step.to_dict(),
            "measure_over_og": self.measure_over_og.to_dict(),
        } | {k: v for k, v in optional.items() if v is not None}


@dataclass(frozen=True)
class GenaiMeasure:
    """measure's own speculative decoding of the pair at og's k, on the same rows (a pair's ``measure``)."""

    acceptance: Counts
    speedup: float | None
    equal_greedy_rows: int

    @classmethod
    def from_dict(cls, m: Part | None) -> GenaiMeasure | None:
        if m is None:
            return None
        return cls(Counts.from_dict(m.get("acceptance")), m.get("speedup"), int(m.get("equal_greedy_rows", 0)))

    def to_dict(self) -> Part:
        return {
            "acceptance": self.acceptance.to_dict(),
            "speedup": self.speedup,
            "equal_greedy_rows": self.equal_greedy_rows,
        }


NOTHING = Counts(0, 0)


@dataclass(frozen=True)
class GenaiPair:
    """og's draft-model speculative decoding of one decoder-only pair, beside measure's at the same k.

    A pair that did not run holds only its names, k, status and reason; one that ran, every figure below."""

    drafter: str
    verifier: str
    k: int
    status: str
    reason: str = ""
    rows: int = 0
    acceptance: Counts = NOTHING
    speedup: float | None = None
    equal_greedy_rows: int = 0
    differing_rows: tuple[int, ...] = field(default=())
    measure: GenaiMeasure | None = None

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"

    @property
    def measured(self) -> bool:
        return self.status == MEASURED

    @property
    def measure_acceptance(self) -> Counts:
        return self.measure.acceptance if self.measure else NOTHING

    @property
    def measure_speedup(self) -> float | None:
        return self.measure.speedup if self.measure else None

    @property
    def measure_equal_greedy_rows(self) -> int:
        return self.measure.equal_greedy_rows if self.measure else 0

    @classmethod
    def from_dict(cls, p: Part) -> GenaiPair:
        return cls(
            drafter=p["drafter"],
            verifier=p["verifier"],
            k=int(p["k"]),
            status=p["status"],
            reason=p.get("reason", ""),
            rows=int(p.get("rows", 0)),
            acceptance=Counts.from_dict(p.get("acceptance")),
            speedup=p.get("speedup"),
            equal_greedy_rows=int(p.get("equal_greedy_rows", 0)),
            differing_rows=tuple(int(r) for r in p.get("differing_rows", ())),
            measure=GenaiMeasure.from_dict(p.get("measure")),
        )

    def to_dict(self) -> Part:
        part: Part = {"drafter": self.drafter, "verifier": self.verifier, "k": self.k, "status": self.status}
        part |= written_reason(self.status, self.reason)
        if not self.measured:
            return part
        return (
            part
            | {
                "rows": self.rows,
                "acceptance": self.acceptance.to_dict(),
                "speedup": self.speedup,
                "equal_greedy_rows": self.equal_greedy_rows,
                "differing_rows": list(self.differing_rows),
            }
            | ({"measure": self.measure.to_dict()} if self.measure else {})
        )


# ------------------------------------------------------------------ the parts the genai leg fills


def genai_leg_part(version: str | None) -> Part:
    """The leg as it starts: measured until the runtime is found missing; draft-model pairs follow the tiers."""
    return {
        "runtime": RUNTIME,
        "language": LANGUAGE,
        "version": version,
        "host": HOST,
        "status": MEASURED,
        "tiers": [],
        "speculative": [],
    }


def _spread(samples: list[float | None]) -> Part:
    kept = [float(x) for x in samples if x is not None]
    return {"median": median(kept) if kept else None, "samples": kept}


def _passes(rows: list[Part], prefix: str) -> list[float]:
    """Wall ms of each repeat's pass over every row (first token + decode steps), as the other legs' greedy_ms."""
    repeats = len(rows[0][f"{prefix}decode_ms"]) if rows else 0
    return [sum(r[f"{prefix}first_token_ms"][k] + r[f"{prefix}decode_ms"][k] for r in rows) for k in range(repeats)]


def genai_tier_part(name: str, precision: str, answer: Part, outputs: list[str], lines: list[int]) -> Part:
    """One decoder-only tier's answer from ``run_genai_tier``: failed with og's message, or measured."""
    entry: Part = {"tier": name, "precision": precision}
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
