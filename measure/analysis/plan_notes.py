"""Verdicts a budget's cut made impossible, or narrower, say so: the cut is named beside the answer.

A budgeted run (:attr:`measure.record.model.Record.plan`) may time fewer rows or repeats than the config asks,
run one profile worker per tier, or frame a sample of the golden rows. A verdict that rests on what was cut
keeps its outcome (the same rule, the same facts) but its answer ends with what the budget left: an
inconclusive answer then reads as "the budget", not as "the artifact".
"""

from __future__ import annotations

from dataclasses import replace

from measure.analysis.verdict import Verdict
from measure.record.model import Record
from measure.record.model.plan import RunPlan

REPEATS_FOR_95 = 6
"""The fewest repeats whose extremes cover a median at 95% (the planner's own floor)."""
WALLCLOCK = ("decode-linear", "harness-overhead", "speculative-speedup", "speculative-speedup-k")
PROFILE = ("lite-lighter", "lite-faster-load")
FRAMING = (
    "framing-parity",
    "output-preservation",
    "self-acceptance",
    "acceptance",
    "runtime-framing-parity",
)


def _wallclock_note(plan: RunPlan, rows: int, repeats: int) -> str | None:
    """``repeats``: the fewest any case has after the top-up (what the plan planned, or more)."""
    parts = []
    if len(plan.wallclock_rows) < rows:
        parts.append(f"{len(plan.wallclock_rows)} of {rows} rows")
    if repeats < REPEATS_FOR_95:
        parts.append(f"{repeats} repeat(s): no 95% interval")
    return "; ".join(parts) or None


def notes(plan: RunPlan, rows: int, repeats: int) -> dict[str, str]:
    """Per verdict topic, what the budget left of what it rests on (topics the plan did not touch are absent);
    ``repeats``: the fewest repeats of any wall-clock case."""
    out: dict[str, str] = {}
    wallclock = _wallclock_note(plan, rows, repeats)
    if wallclock:
        out.update(dict.fromkeys(WALLCLOCK, wallclock))
    workers = plan.shape.get("profile_workers", 0)
    if workers == 1 and any(c.startswith("profile workers") for c in plan.cut):
        out.update(dict.fromkeys(PROFILE, "one profile worker per tier: no interval"))
    if len(plan.framing_rows) < rows:
        out.update(dict.fromkeys(FRAMING, f"on {len(plan.framing_rows)} of {rows} rows"))
    scored = plan.fidelity_rows or plan.framing_rows  # a plan from before fidelity had rows of its own: the framing's
    if len(scored) < rows:
        out["fidelity"] = f"on {len(scored)} of {rows} rows"
    return out


def with_plan_notes(record: Record, found: list[Verdict]) -> list[Verdict]:
    """``found`` with each answer that rests on a budget's cut ending in ``(budget: <what it left>)``."""
    if record.plan is None:
        return found
    cases = record.wallclock.cases.values() if record.wallclock else ()
    repeats = min((c.repeats for c in cases), default=record.plan.shape.get("repeats", 0))
    told = notes(record.plan, record.golden.rows, repeats)
    return [replace(v, answer=f"{v.answer} (budget: {told[v.topic]})") if v.topic in told else v for v in found]
