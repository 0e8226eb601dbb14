"""The plan a budgeted run writes (``plan``): the budget, the shape it chose, what it cut and how it ended.

Spelled here beside its reader (:mod:`measure.record.model.plan`). The planner (:mod:`measure.suites.plan`)
hands its decision over as plain values; the run adds the top-up's rounds and the seconds it spent.
"""

from __future__ import annotations

from typing import Any

Part = dict[str, Any]


def plan_part(decision: Part) -> Part:
    """The plan as decided before anything was measured (:meth:`measure.suites.plan.Plan.to_dict`), no outcome."""
    return dict(decision) | {"outcome": None}


def plan_outcome(plan: Part, stopped: str | None, rounds: int, added: dict[str, int], spent_s: float) -> None:
    """How the run ended against its plan: why the top-up stopped (``tolerance``, ``repeats``, ``budget``; None
    when it never ran), its rounds, the repeats it added per case, and the wall seconds the run took."""
    plan["outcome"] = {"stopped": stopped, "top_up_rounds": rounds, "added_repeats": added, "spent_s": spent_s}


def framing_sample_part(rows: list[int], prefill_rows: int) -> Part:
    """The framing suite's rows where a plan sampled them (0-based), and how many of them the prompt framings ran
    on (the first ones): stated in the framing section beside what they measured."""
    return {"rows": rows, "prefill_rows": prefill_rows}
