"""A budgeted run's measuring side: the warm-up that times one pass for the planner, and the top-up at the end.

:mod:`measure.suites.plan` decides; this module measures what it decides on. The warm-up is the wall-clock
suite's own (untimed in the record), each case's first pass timed row by row, each unit's load too. The
top-up runs after every other step, so it spends exactly what the budget has left: round by round, one more
repeat of each case :func:`~measure.suites.plan.next_round` picks, a unit's sessions at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Any

from measure.engine.session import AfterRun
from measure.errors import MeasureError
from measure.record.model.plan import plan_outcome
from measure.record.model.wallclock import repeat_done
from measure.suites import Progress, Save, no_progress
from measure.suites.config import SuiteConfig
from measure.suites.golden import GoldenRows, pick
from measure.suites.legs.cost import LegCost
from measure.suites.legs.probe import Rates, probe_legs
from measure.suites.legs.registry import planned
from measure.suites.plan import FINISH_S, WARM_ROWS, BudgetTooSmall, Plan, make_plan, next_round, sample_rows
from measure.suites.plan_costs import Asks, CaseTimes, TierTimes, Warm, case_round_s
from measure.suites.run_options import RunOptions
from measure.suites.steps import RunContext, Sessions
from measure.suites.units import Units
from measure.suites.wallclock import timed_pass


@dataclass(frozen=True)
class Budgeted:
    """A budgeted run's plan, the warm-up timings it rests on and the warm-up passes made."""

    plan: Plan
    warm: Warm
    passes: int
    rates: Rates = field(default_factory=dict)
    """What the warm-up measured of each replaying leg on each tier (:mod:`measure.suites.legs.probe`)."""


def plan_run(
    options: RunOptions,
    golden: GoldenRows,
    hooks: Mapping[str, AfterRun],
    started: float,
    progress: Progress = no_progress,
    judged: tuple[tuple[str, str], ...] = (),
    precisions: Mapping[str, str] | None = None,
) -> Budgeted:
    """Warm up (timing one pass of every wall-clock case over a seeded sample of :data:`WARM_ROWS` rows) and plan
    the rest into the options' budget from ``started``; :class:`~measure.suites.plan.BudgetTooSmall` (naming
    where the budget came from) before anything is measured when it cannot hold one repeat of everything;
    ``judged``: the fidelity pass's tiers and references; ``precisions``: each tier's, from the checks: the
    replaying legs are timed on each precision (:mod:`measure.suites.legs.probe`) before the plan prices them."""
    config, budget = options.config, options.budget
    if budget is None:
        raise MeasureError("plan_run: a run without a budget is not planned")
    spent = perf_counter() - started
    if spent >= budget.seconds:
        raise BudgetTooSmall(
            budget.seconds, spent, spent, "loading and checking every tier took all of it", budget.given
        )
    units = Units(Sessions(config, "wallclock", hooks), config.wallclock.k, fresh=True)
    sample = sample_rows(len(golden), WARM_ROWS, config.wallclock.seed)
    texts = [r.input for r in pick(golden, sample).rows]
    warm, passes = planning_warm_up(units, texts, config, started, progress)
    legs = other_legs(config)
    rates: Rates = {}
    if "framing" in options.suites and any(leg.style == "replay" for leg in legs):
        rates = probe_legs(config, pick(golden, sample[:1]), precisions or {}, progress)
        warm = replace(warm, elapsed_s=perf_counter() - started)
    if len(sample) < len(golden):
        warm = replace(warm, rows=sample)
    asks = replace(
        asks_of(config, list(options.suites), len(golden), legs, judged),
        leg_rates=rates,
        fidelity_row_s=options.fidelity_row_s,
    )
    plan = make_plan(warm, asks, budget.seconds, budget.given)
    return Budgeted(plan, warm, passes, rates)


def other_legs(config: SuiteConfig) -> tuple[LegCost, ...]:
    """The runtimes the framing suite will run beside Python onnxruntime, as far as can be told unstarted."""
    return planned(config.framing, frozenset(t.kind for t in config.tiers))


def finish_top_up(context: RunContext, doc: dict[str, Any], budgeted: Budgeted, started: float) -> None:
    """What the budget has left buys repeats for the widest intervals; the plan's outcome is written either way."""
    plan, config = budgeted.plan, context.config
    stopped: str | None = None
    rounds = 0
    added: dict[str, int] = {}
    if doc.get("wallclock") and doc["wallclock"].get("cases"):
        texts = [r.input for r in pick(context.golden, plan.wallclock_rows).rows]
        units = Units(context.sessions("wallclock"), config.wallclock.k, fresh=True)
        deadline = started + plan.budget_s
        tolerance = config.policy.compare_tolerance
        stopped, rounds, added = top_up(
            units, texts, doc["wallclock"], context.save, plan, budgeted.warm, deadline, tolerance, context.progress
        )
    plan_outcome(doc["plan"], stopped, rounds, added, round(perf_counter() - started, 3))
    context.save()


def asks_of(
    config: SuiteConfig,
    suites: list[str],
    rows: int,
    legs: tuple[LegCost, ...],
    judged: tuple[tuple[str, str], ...] = (),
) -> Asks:
    """What the config asks, in the planner's terms; ``legs``: the other runtimes the framing suite will run;
    ``judged``: the fidelity pass's tiers and their references, as the checks found them."""
    wc, fr = config.wallclock, config.framing
    steps = []
    if "wallclock" in suites:
        steps.append("wallclock")
        steps += ["call_costs"] if wc.call_costs and config.pairs else []
        steps += ["layouts"] if config.layouts else []
        steps += ["profile"] if wc.profile else []
        steps += ["threads"] if wc.threads else []
    steps += ["framing"] if "framing" in suites else []
    steps += ["fidelity"] if judged and "framing" in suites and fr.fidelity else []
    return Asks(
        rows=rows,
        repeats=wc.repeats,
        seed=wc.seed,
        tolerance=config.policy.compare_tolerance,
        steps=tuple(steps),
        pairs=tuple((p.drafter, p.verifier) for p in config.pairs),
        ks=wc.k,
        framing_blocks=fr.k,
        whole=fr.whole_prefix,
        probe_k=fr.probe_k,
        legs=legs,
        leg_repeats=fr.leg_repeats,
        profile_workers=wc.profile_workers,
        profile_rows=min(wc.profile_rows, rows),
        warm_loads=wc.warm_loads,
        threads=wc.threads,
        call_cost_rows=min(wc.call_cost_rows, rows),
        layouts=len(config.layouts),
        judged=judged,
    )


def planning_warm_up(
    units: Units, texts: list[str], config: SuiteConfig, started: float, progress: Progress = no_progress
) -> tuple[Warm, int]:
    """One untimed-in-the-record pass of every case over ``texts`` (the warm-up's sample of rows), timed for the
    planner (and on for ``warmup_s`` seconds, as the suite's own warm-up); returns what it saw and the passes made."""
    kinds = {t.name: "" for t in config.tiers}
    rows: dict[str, list[Any]] = {}
    prompts: dict[str, list[int]] = {}
    total, done, passes, start = len(units.case_names), 0, 0, perf_counter()
    while passes < max(config.wallclock.warmup, 1) or perf_counter() - start < config.wallclock.warmup_s:
        for batch in units.each():
            for case in batch:
                found = []
                for text in texts:
                    ids = case.encode(text)
                    found.append(case.decode(ids))
                    prompts.setdefault(case.name, []).append(len(ids))
                rows.setdefault(case.name, found)
                if case.k is None:
                    kinds[case.name] = "causal" if case.causal else "seq2seq"
                if passes == 0:
                    done += 1
                    progress(f"wallclock warm-up {case.name} (timing the plan)", done, total)
        passes += 1
    cases = {
        name: CaseTimes(units.unit_of[name], tuple(d.wall_s for d in found), tuple(len(d.tokens) for d in found))
        for name, found in rows.items()
    }
    tiers = {
        name: TierTimes(
            kind=kinds[name],
            load_s=units.load_s.get(name, 0.0),
            row_s=cases[name].row_s,
            first_s=tuple(d.first_token_s or 0.0 for d in rows[name]),
            tokens=cases[name].tokens,
            prompt=tuple(prompts[name][: len(texts)]),
        )
        for name in kinds
        if name in rows
    }
    return Warm(tiers, cases, dict(units.load_s), perf_counter() - started), passes


def per_repeat_ms(cases: dict[str, Any]) -> dict[str, list[float]]:
    """Each case's ms per output token, one value a repeat, as the analysis reads the samples."""
    out = {}
    for name, case in cases.items():
        tokens = max(1, sum(case["tokens"]))
        out[name] = [1000 * sum(rep) / tokens for rep in case["wall_s"]]
    return out


def top_up(
    units: Units,
    texts: list[str],
    wallclock: dict[str, Any],
    save: Save,
    plan: Plan,
    warm: Warm,
    deadline: float,
    tolerance: float,
    progress: Progress = no_progress,
) -> tuple[str, int, dict[str, int]]:
    """More repeats where the intervals are widest until every one is within ``tolerance``, the cases reach
    ``plan.max_repeats`` or the time to ``deadline`` (a :func:`perf_counter` value) cannot pay for one more
    pass; returns why it stopped, the rounds and the repeats it added per case."""
    if not wallclock.get("cases"):
        raise MeasureError("top-up: the wall-clock suite has no case to repeat")
    rows = len(texts)
    cost = {name: case_round_s(warm, name, rows) for name in wallclock["cases"]}
    rounds, added = 0, {name: 0 for name in wallclock["cases"]}
    while True:
        left = deadline - perf_counter() - FINISH_S
        decision = next_round(per_repeat_ms(wallclock["cases"]), cost, left, tolerance, plan.max_repeats)
        if decision.stop is not None:
            return decision.stop, rounds, {k: v for k, v in added.items() if v}
        rounds += 1
        chosen = set(decision.cases)
        done = 0
        for cases in units.each(fresh_row=texts[0], only=chosen):
            for case in cases:
                timed_pass(case, texts, wallclock["cases"])
                added[case.name] += 1
                done += 1
                progress(f"wallclock top-up round {rounds} {case.name}", done, len(chosen))
                save()
        repeat_done(wallclock, min(len(c["wall_s"]) for c in wallclock["cases"].values()))
