"""A budgeted run's plan (``plan``) and a tier's quantization settings, as typed read-only views.

The plan is written by :mod:`measure.record.model.write_plan`; the quantization settings are the fingerprint's
``nbits`` (read from the graph's MatMulNBits attributes when the tier was measured, not from ``tier.json``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ACCURACY_COMPUTES = {0: "fp32", 1: "fp32", 2: "fp16", 3: "bf16", 4: "int8"}
"""What a MatMulNBits kernel multiplies in at each ``accuracy_level`` (0: unset, which onnxruntime runs as 1)."""


@dataclass(frozen=True)
class Nbits:
    """An int4 (or other n-bit) tier's MatMulNBits settings, from its graph."""

    bits: int
    block_size: int
    accuracy_level: int

    @property
    def computes(self) -> str:
        """What its kernel multiplies in: ``int8`` at accuracy level 4, ``fp32`` unset."""
        return ACCURACY_COMPUTES.get(self.accuracy_level, f"level {self.accuracy_level}")

    @property
    def label(self) -> str:
        """``block 32, accuracy 4 (int8)``: how pages and ``show`` put it beside a tier's speed."""
        unset = ", unset" if self.accuracy_level == 0 else ""
        return f"block {self.block_size}, accuracy {self.accuracy_level} ({self.computes}{unset})"


def nbits_of(fingerprint: dict[str, Any]) -> Nbits | None:
    """The first graph's MatMulNBits settings that has any (None for a tier without MatMulNBits)."""
    for graph in fingerprint.get("graphs", ()):
        n = graph.get("nbits")
        if n:
            return Nbits(int(n.get("bits", 4)), int(n.get("block_size", 0)), int(n.get("accuracy_level", 0)))
    return None


@dataclass(frozen=True)
class PlanOutcome:
    stopped: str | None
    """Why the top-up stopped: ``tolerance``, ``repeats``, ``budget``; None when it never ran."""
    top_up_rounds: int
    added_repeats: dict[str, int]
    spent_s: float


@dataclass(frozen=True)
class PlannedLegRate:
    """What the planning warm-up measured of one replaying leg on one tier (``plan.leg_rates``)."""

    leg: str
    tier: str
    precision: str
    skipped: bool
    factor: float | None
    """The leg's seconds per token over Python onnxruntime's; None where it skipped the tier."""
    start_s: float | None


@dataclass(frozen=True)
class RunPlan:
    """What a budgeted run planned to measure, what it cut and how it ended."""

    budget_s: float
    elapsed_s: float
    minimum_s: float
    estimate_s: float
    shape: dict[str, int]
    wallclock_rows: tuple[int, ...]
    framing_rows: tuple[int, ...]
    max_repeats: int
    steps: dict[str, float]
    cut: tuple[str, ...]
    outcome: PlanOutcome | None
    warm_rows: tuple[int, ...] = ()
    """The golden rows the planning warm-up decoded (a sample); empty where it decoded every row."""
    fidelity_rows: tuple[int, ...] = ()
    """The golden rows the fidelity pass scored (every row); empty in plans from before it was planned apart,
    when it scored the framing rows."""
    leg_rates: tuple[PlannedLegRate, ...] = ()
    """What the warm-up measured of the other runtimes per tier; empty where it timed none (small tiers, older
    records)."""

    def cuts(self, step: str) -> tuple[str, ...]:
        """The cuts that touch one step (``wall-clock``, ``framing``, ``profile``, ``call-cost``, ``prompt``)."""
        return tuple(c for c in self.cut if c.startswith(step) or (step == "wall-clock" and "repeats:" in c))


def plan_of(d: dict[str, Any] | None) -> RunPlan | None:
    if not d:
        return None
    o = d.get("outcome")
    outcome = None
    if o:
        added = {k: int(v) for k, v in (o.get("added_repeats") or {}).items()}
        outcome = PlanOutcome(o.get("stopped"), int(o.get("top_up_rounds", 0)), added, float(o.get("spent_s", 0.0)))
    return RunPlan(
        budget_s=float(d["budget_s"]),
        elapsed_s=float(d["elapsed_s"]),
        minimum_s=float(d["minimum_s"]),
        estimate_s=float(d["estimate_s"]),
        shape={k: int(v) for k, v in d["shape"].items()},
        wallclock_rows=tuple(int(i) for i in d["wallclock_rows"]),
        framing_rows=tuple(int(i) for i in d["framing_rows"]),
        max_repeats=int(d["max_repeats"]),
        steps={k: float(v) for k, v in (d.get("steps") or {}).items()},
        cut=tuple(d.get("cut", ())),
        outcome=outcome,
        warm_rows=tuple(int(i) for i in d.get("warm_rows", ())),
        fidelity_rows=tuple(int(i) for i in d.get("fidelity_rows", ())),
        leg_rates=tuple(_leg_rate(r) for r in d.get("leg_rates", ())),
    )


def _leg_rate(r: dict[str, Any]) -> PlannedLegRate:
    factor, start = r.get("factor"), r.get("start_s")
    return PlannedLegRate(
        str(r["leg"]),
        str(r["tier"]),
        str(r["precision"]),
        bool(r["skipped"]),
        None if factor is None else float(factor),
        None if start is None else float(start),
    )
