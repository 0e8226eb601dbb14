"""A budgeted run's plan (``plan``), written, read and viewed here, and a tier's quantization settings.

The planner (:mod:`measure.suites.plan`) hands its decision over as plain values (:func:`plan_part`); the run adds
the top-up's rounds and the seconds it spent (:func:`plan_outcome`). The quantization settings are the
fingerprint's ``nbits`` (read from the graph's MatMulNBits attributes when the tier was measured, not from
``tier.json``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from measure.record.model.convert import ints

Part = dict[str, Any]

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
    stopped: str | None = None
    """Why the top-up stopped: ``tolerance``, ``repeats``, ``budget``; None when it never ran."""
    top_up_rounds: int = 0
    added_repeats: dict[str, int] = field(default_factory=dict)
    """The repeats the top-up added, per case."""
    spent_s: float = 0.0
    """The wall seconds the run took."""

    @classmethod
    def from_dict(cls, o: Part | None) -> PlanOutcome | None:
        if not o:
            return None
        added = {k: int(v) for k, v in (o.get("added_repeats") or {}).items()}
        return cls(o.get("stopped"), int(o.get("top_up_rounds", 0)), added, float(o.get("spent_s", 0.0)))

    def to_dict(self) -> Part:
        return {
            "stopped": self.stopped,
            "top_up_rounds": self.top_up_rounds,
            "added_repeats": self.added_repeats,
            "spent_s": self.spent_s,
        }


@dataclass(frozen=True)
class PlannedLegRate:
    """What the planning warm-up measured of one replaying leg on one tier (``plan.leg_rates``)."""

    leg: str
    tier: str
    precision: str
    skipped: bool
    factor: float | None = None
    """The leg's seconds per token over Python onnxruntime's; None where it skipped the tier."""
    start_s: float | None = None

    @classmethod
    def from_dict(cls, r: Part) -> PlannedLegRate:
        factor, start = r.get("factor"), r.get("start_s")
        return cls(
            str(r["leg"]),
            str(r["tier"]),
            str(r["precision"]),
            bool(r["skipped"]),
            None if factor is None else float(factor),
            None if start is None else float(start),
        )

    def to_dict(self) -> Part:
        part: Part = {"leg": self.leg, "tier": self.tier, "precision": self.precision, "skipped": self.skipped}
        return part if self.skipped else part | {"factor": self.factor, "start_s": self.start_s}


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
    cut: tuple[str, ...]
    steps: dict[str, float] = field(default_factory=dict)
    outcome: PlanOutcome | None = None
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

    @classmethod
    def from_dict(cls, d: Part | None) -> RunPlan | None:
        """None for a run without a budget."""
        if not d:
            return None
        return cls(
            budget_s=float(d["budget_s"]),
            elapsed_s=float(d["elapsed_s"]),
            minimum_s=float(d["minimum_s"]),
            estimate_s=float(d["estimate_s"]),
            shape={k: int(v) for k, v in d["shape"].items()},
            wallclock_rows=ints(d["wallclock_rows"]),
            framing_rows=ints(d["framing_rows"]),
            max_repeats=int(d["max_repeats"]),
            cut=tuple(d.get("cut", ())),
            steps={k: float(v) for k, v in (d.get("steps") or {}).items()},
            outcome=PlanOutcome.from_dict(d.get("outcome")),
            warm_rows=ints(d.get("warm_rows")),
            fidelity_rows=ints(d.get("fidelity_rows")),
            leg_rates=tuple(PlannedLegRate.from_dict(r) for r in d.get("leg_rates", ())),
        )

    def to_dict(self) -> Part:
        """The plan as the record keeps it; the lists older plans lack (warm rows, fidelity rows, leg rates) only
        where they hold any."""
        part: Part = {
            "budget_s": self.budget_s,
            "elapsed_s": self.elapsed_s,
            "minimum_s": self.minimum_s,
            "estimate_s": self.estimate_s,
            "shape": self.shape,
            "wallclock_rows": list(self.wallclock_rows),
            "framing_rows": list(self.framing_rows),
        }
        part |= {"fidelity_rows": list(self.fidelity_rows)} if self.fidelity_rows else {}
        part |= {"max_repeats": self.max_repeats, "steps": self.steps, "cut": list(self.cut)}
        part |= {"warm_rows": list(self.warm_rows)} if self.warm_rows else {}
        part |= {"leg_rates": [r.to_dict() for r in self.leg_rates]} if self.leg_rates else {}
        return part | {"outcome": self.outcome.to_dict() if self.outcome else None}


def plan_part(decision: Part) -> Part:
    """The plan as decided before anything was measured (:meth:`measure.suites.plan.Plan.to_dict`), no outcome."""
    return dict(decision) | {"outcome": None}


def plan_outcome(plan: Part, stopped: str | None, rounds: int, added: dict[str, int], spent_s: float) -> None:
    """How the run ended against its plan: why the top-up stopped (``tolerance``, ``repeats``, ``budget``; None
    when it never ran), its rounds, the repeats it added per case, and the wall seconds the run took."""
    plan["outcome"] = PlanOutcome(stopped, rounds, added, spent_s).to_dict()
