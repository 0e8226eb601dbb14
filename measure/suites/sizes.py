"""How much each step of a run measures: what the config asks, or a budget's plan's cut of it.

Decided once, after the plan (:mod:`measure.suites.budget`) and before the first suite, so no step reads the plan:
the wall-clock cases' rows and repeats, the sizes of the call costs and the cost profile, the framing suite's rows
and prompt framings (and the sample its record states), the fidelity pass's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from measure.record.model.framing import framing_sample_part
from measure.suites.config import SuiteConfig, WallclockConfig
from measure.suites.golden import GoldenRows, pick
from measure.suites.plan import Plan


@dataclass(frozen=True)
class WallclockSizes:
    """The wall-clock suite's steps, sized."""

    config: SuiteConfig
    """The config as its steps read it: the plan's call-cost rows, profile workers and rows, and warm loads."""
    rows: GoldenRows
    """The rows the timed cases decode (the call costs and the profile take every row)."""
    repeats: int | None = None
    """The plan's repeats per case; None: the config's."""
    warmed: int | None = None
    """The warm-up passes the plan's warm-up already made; None: the suite warms up itself."""
    call_cost_repeats: int | None = None

    @property
    def wallclock(self) -> WallclockConfig:
        return self.config.wallclock

    @property
    def call_costs(self) -> WallclockConfig:
        """The call costs' settings: the plan's repeats where there is a plan."""
        wc = self.config.wallclock
        return wc if self.call_cost_repeats is None else replace(wc, repeats=self.call_cost_repeats)


@dataclass(frozen=True)
class FramingSizes:
    """The framing suite's rows and how many of them the prompt framings run on."""

    rows: GoldenRows
    prefill: int | None = None
    """The first rows the prompt framings run on; None: every row."""
    sample: dict[str, Any] | None = None
    """The ``framing.sample`` part the record states, where a plan cut the rows or the prompt framings."""


@dataclass(frozen=True)
class Sizes:
    """Every step of one run, sized."""

    wallclock: WallclockSizes
    framing: FramingSizes
    fidelity_rows: GoldenRows


def sizes(config: SuiteConfig, golden: GoldenRows, plan: Plan | None = None, warmed: int | None = None) -> Sizes:
    """What each step measures: the config's asks over every golden row, or ``plan``'s cut of them (``warmed``:
    the passes its warm-up made)."""
    if plan is None:
        return Sizes(WallclockSizes(config, golden), FramingSizes(golden), golden)
    shape = plan.shape
    wc = replace(
        config.wallclock,
        call_cost_rows=shape.call_cost_rows,
        profile_workers=shape.profile_workers,
        profile_rows=shape.profile_rows,
        warm_loads=shape.warm_loads,
    )
    wallclock = WallclockSizes(
        replace(config, wallclock=wc),
        pick(golden, plan.wallclock_rows),
        shape.repeats,
        warmed,
        shape.call_cost_repeats,
    )
    framed = pick(golden, plan.framing_rows) if len(plan.framing_rows) < len(golden) else golden
    prefill = shape.prefill_rows if shape.prefill_rows < len(framed) else None
    sample = None
    if framed is not golden or prefill is not None:  # only a plan that cuts rows states its sample
        sample = framing_sample_part(list(plan.framing_rows), len(framed) if prefill is None else prefill)
    cut = 0 < len(plan.fidelity_rows) < len(golden)
    fidelity = pick(golden, plan.fidelity_rows) if cut else golden
    return Sizes(wallclock, FramingSizes(framed, prefill, sample), fidelity)
