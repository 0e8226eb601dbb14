"""The budget planner on timings a test makes up: what fits, what is cut, who gets the repeats, what is refused."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from statistics import median

import pytest

from measure.errors import MeasureError
from measure.suites.legs.cost import LegRate
from measure.suites.legs.registry import LEGS
from measure.suites.plan import (
    FIDELITY_ROWS,
    FINISH_S,
    REPEATS_FOR_95,
    WARM_ROWS,
    BudgetTooSmall,
    half_width,
    make_plan,
    next_round,
    parse_budget,
    rows_needed,
    sample_rows,
)
from measure.suites.plan_costs import SAFETY, Asks, CaseTimes, TierTimes, Warm, estimate
from measure.suites.plan_costs import _framing_row as framing_row

ROWS = 16


def _tier(row_s: float, kind: str = "causal", spread: float = 0.0, seed: int = 0) -> TierTimes:
    rng = random.Random(seed)
    rows = tuple(row_s * (1 + spread * (rng.random() - 0.5)) for _ in range(ROWS))
    return TierTimes(
        kind, load_s=2.0, row_s=rows, first_s=tuple(r / 4 for r in rows), tokens=(32,) * ROWS, prompt=(200,) * ROWS
    )


def _warm(row_s: dict[str, float], elapsed_s: float = 60.0, spread: float = 0.0) -> Warm:
    """Real-size seconds: each tier's rows about ``row_s`` each, its load 2 s."""
    tiers = {name: _tier(s, spread=spread, seed=i) for i, (name, s) in enumerate(row_s.items())}
    cases = {name: CaseTimes(name, t.row_s, t.tokens) for name, t in tiers.items()}
    return Warm(tiers, cases, {name: t.load_s for name, t in tiers.items()}, elapsed_s)


STEPS = ("wallclock", "profile", "framing")
COST = {leg.key: leg.cost for leg in LEGS}
"""Each registered leg's cost as the planner reads it."""
ASKS = Asks(rows=ROWS, repeats=3, seed=7, tolerance=0.05, steps=STEPS, legs=(COST["genai"],))
WARM = _warm({"fp32": 2.0, "int8": 1.2, "int4": 1.5, "drafter": 0.3, "genai-int4": 0.8})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("15m", 900), ("1h30m", 5400), ("900s", 900), ("900", 900), (90, 90), (" 2m 30s ", 150), ("1.5h", 5400)],
)
def test_a_budget_reads_as_seconds(text, seconds):
    assert parse_budget(text, "--budget") == seconds


@pytest.mark.parametrize("bad", ["", "fast", "15x", "-5", 0, -1, True, "0m", [15]])
def test_a_bad_budget_is_one_line_naming_where(bad):
    with pytest.raises(MeasureError, match=r"^--budget: expected a duration") as err:
        parse_budget(bad, "--budget")
    assert "\n" not in str(err.value)


def test_an_ample_budget_measures_everything_asked_and_raises_repeats_to_a_95_percent_interval():
    plan = make_plan(WARM, ASKS, budget_s=6 * 3600)
    assert plan.cut == ()
    assert plan.shape.repeats == REPEATS_FOR_95  # the config asked 3: too few for a 95% interval
    assert plan.wallclock_rows == tuple(range(ROWS)) and plan.framing_rows == tuple(range(ROWS))
    assert plan.shape.profile_workers == ASKS.profile_workers
    assert plan.estimate_s <= 6 * 3600


def test_a_tight_budget_cuts_profile_and_framing_before_wallclock_rows_and_repeats():
    full = sum(estimate(WARM, ASKS, make_plan(WARM, ASKS, 6 * 3600).shape).values())
    plan = make_plan(WARM, ASKS, budget_s=WARM.elapsed_s + 0.55 * full)
    s = plan.shape
    assert s.profile_workers == 1 and s.framing_rows < ROWS
    assert s.repeats == REPEATS_FOR_95  # the 95% interval is kept while rows can still go
    assert plan.estimate_s <= plan.budget_s
    assert any(c.startswith("framing rows 16 ->") for c in plan.cut)
    assert any(c.startswith("profile workers 3 -> 1") for c in plan.cut)
    assert set(plan.framing_rows) <= set(plan.wallclock_rows)  # one seeded shuffle: the smaller inside the larger


def test_every_plan_fits_its_budget_and_cuts_more_as_the_budget_shrinks():
    last = None
    for minutes in (120, 60, 30, 15, 10, 8):
        plan = make_plan(WARM, ASKS, budget_s=60 * minutes)
        assert plan.estimate_s <= plan.budget_s
        cost = sum(plan.steps.values())
        if last is not None:
            assert cost <= last
        last = cost


def test_a_budget_too_small_for_one_repeat_of_everything_is_refused_naming_the_minimum():
    with pytest.raises(BudgetTooSmall) as err:
        make_plan(WARM, ASKS, budget_s=90)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("--budget 1m30s: too small: one repeat of everything")
    assert f"needs at least {math.floor(err.value.minimum_s / 60)}m" in message and "nothing was measured" in message
    assert err.value.minimum_s > 90
    make_plan(WARM, ASKS, budget_s=err.value.minimum_s + 1)  # the minimum it names is enough


def test_rows_are_kept_where_rows_differ_and_cut_where_they_are_alike():
    alike, differ = _warm({"a": 1.0}, spread=0.02), _warm({"a": 1.0}, spread=1.5)
    assert rows_needed(alike, 0.05) < rows_needed(differ, 0.05) <= ROWS


def test_a_sample_of_rows_is_seeded_sorted_and_nested():
    assert sample_rows(16, 16, 1) == tuple(range(16))
    a, b = sample_rows(16, 4, 1), sample_rows(16, 8, 1)
    assert a == sample_rows(16, 4, 1) and list(a) == sorted(a) and set(a) <= set(b)


def test_the_case_with_the_large_run_to_run_spread_gets_the_repeats():
    rng = random.Random(3)
    steady = [10 * (1 + 0.002 * rng.gauss(0, 1)) for _ in range(6)]
    noisy = [10 * (1 + 0.2 * rng.gauss(0, 1)) for _ in range(6)]
    per_repeat = {"steady": steady, "noisy": noisy}
    found = next_round(per_repeat, {"steady": 30.0, "noisy": 30.0}, left_s=100.0, tolerance=0.05, max_repeats=18)
    assert found.cases == ("noisy",) and found.stop is None
    assert half_width(noisy) > 0.05 >= half_width(steady)


def test_the_top_up_stops_within_tolerance_at_the_cap_or_when_the_budget_cannot_pay():
    tight = {"a": [10.0, 10.01, 9.99, 10.0, 10.02, 9.98]}
    assert next_round(tight, {"a": 1.0}, 100.0, 0.05, 18).stop == "tolerance"
    wide = {"a": [5.0, 15.0, 10.0, 6.0, 14.0, 9.0]}
    assert next_round(wide, {"a": 1.0}, 100.0, 0.05, 6).stop == "repeats"
    assert next_round(wide, {"a": 50.0}, 10.0, 0.05, 18).stop == "budget"


def test_fewer_repeats_than_a_95_percent_interval_needs_always_count_as_wide():
    assert half_width([10.0] * (REPEATS_FOR_95 - 1)) == math.inf
    found = next_round({"a": [10.0] * 3, "b": [10.0] * 6}, {"a": 1.0, "b": 1.0}, 100.0, 0.05, 18)
    assert found.cases == ("a",)


def test_the_cheaper_wide_case_is_taken_when_the_widest_does_not_fit():
    per_repeat = {"big": [5.0, 15.0, 10.0, 6.0, 14.0, 9.0], "small": [9.0, 11.0, 10.0, 9.5, 10.5, 10.0]}
    found = next_round(per_repeat, {"big": 80.0, "small": 5.0}, left_s=20.0, tolerance=0.03, max_repeats=18)
    assert found.cases == ("small",)


def test_the_plan_says_what_it_measures_and_states_itself_for_the_record():
    plan = make_plan(WARM, ASKS, budget_s=15 * 60)
    lines = plan.lines(ROWS)
    assert lines[0].startswith("plan for a 15m00s budget")
    assert any(line.lstrip().startswith("wallclock") and "repeats per case" in line for line in lines)
    assert any("ETA" in line for line in lines)
    stored = plan.to_dict()
    assert stored["budget_s"] == 900 and stored["shape"]["repeats"] == plan.shape.repeats
    assert stored["wallclock_rows"] == list(plan.wallclock_rows)


def test_a_warm_up_on_a_sample_of_rows_plans_as_every_row_would_and_says_so():
    every = _warm({"fp32": 2.0, "int8": 1.2})
    sample = sample_rows(ROWS, WARM_ROWS, ASKS.seed)
    cases = {
        n: CaseTimes(c.unit, tuple(c.row_s[i] for i in sample), (32,) * len(sample)) for n, c in every.cases.items()
    }
    tiers = {
        n: TierTimes(
            t.kind,
            t.load_s,
            tuple(t.row_s[i] for i in sample),
            tuple(t.first_s[i] for i in sample),
            (32,) * len(sample),
            (200,) * len(sample),
        )
        for n, t in every.tiers.items()
    }
    sampled = Warm(tiers, cases, every.unit_load_s, every.elapsed_s, rows=sample)
    for minutes in (60, 20):
        whole, part = make_plan(every, ASKS, 60 * minutes), make_plan(sampled, ASKS, 60 * minutes)
        assert part.shape == whole.shape and part.steps == pytest.approx(whole.steps)  # alike rows: one mean
    plan = make_plan(sampled, ASKS, 20 * 60)
    assert plan.warm_rows == sample and plan.to_dict()["warm_rows"] == list(sample)
    assert f"warming up on {WARM_ROWS}/{ROWS} rows" in plan.lines(ROWS)[0]
    assert "warm_rows" not in make_plan(every, ASKS, 20 * 60).to_dict()  # every row warmed: nothing to state


def test_the_row_spread_of_a_sample_is_weighed_against_every_row():
    differ = _warm({"a": 1.0}, spread=1.5)
    few = Warm(
        differ.tiers, {n: CaseTimes(c.unit, c.row_s[:4], c.tokens[:4]) for n, c in differ.cases.items()}, {}, 0.0
    )
    # four rows of a file of sixteen: the finite-population correction is the file's, so more than four may be needed
    assert rows_needed(few, 0.05) <= 4 < rows_needed(few, 0.05, ROWS) <= ROWS


def test_the_genai_leg_warms_up_on_no_more_rows_than_it_decodes():
    one = estimate(WARM, ASKS, replace(make_plan(WARM, ASKS, 6 * 3600).shape, framing_rows=1, prefill_rows=1))
    two = estimate(WARM, ASKS, replace(make_plan(WARM, ASKS, 6 * 3600).shape, framing_rows=2, prefill_rows=1))
    genai_row = sum((2 * 3 + 2 + 2) * t.row_mean for t in WARM.tiers.values())  # a row's passes and its warm-up
    assert (two["framing"] - one["framing"]) / SAFETY >= genai_row - 1e-9


JUDGED = replace(
    ASKS,
    steps=(*STEPS, "fidelity"),
    legs=(COST["genai"], COST["node"], COST["web"]),
    judged=(("int8", "fp32"), ("int4", "fp32")),
)


def test_the_fidelity_pass_is_planned_on_its_own_rows_and_the_javascript_legs_on_the_framing_rows():
    shape = make_plan(WARM, JUDGED, 6 * 3600).shape
    small, large = (estimate(WARM, JUDGED, replace(shape, fidelity_rows=n)) for n in (1, 8))
    assert 0 < small["fidelity"] < large["fidelity"] and small["framing"] == large["framing"]
    framed = estimate(WARM, JUDGED, replace(shape, framing_rows=1, prefill_rows=1))
    without = estimate(WARM, replace(JUDGED, legs=(COST["genai"],)), replace(shape, framing_rows=1, prefill_rows=1))
    assert framed["framing"] > without["framing"]  # decoder-only tiers run in Node and the browser too
    assert "fidelity" not in estimate(WARM, ASKS, shape)
    plan = make_plan(WARM, JUDGED, 30 * 60)
    assert any(line.lstrip().startswith("fidelity") for line in plan.lines(ROWS))


def test_a_budget_never_cuts_a_fidelity_row():
    """The fidelity figures decide what ships (FIDELITY_ROWS): a budget that cuts framing to its least still scores
    every golden row for fidelity, and a budget that cannot hold that is refused with the pass counted."""
    assert FIDELITY_ROWS == "all"
    tight = make_plan(WARM, JUDGED, budget_s=20 * 60)
    assert tight.shape.framing_rows < ROWS and tight.fidelity_rows == tuple(range(ROWS))
    assert not any(c.startswith("fidelity") for c in tight.cut)
    with pytest.raises(BudgetTooSmall) as err:
        make_plan(WARM, JUDGED, budget_s=60)
    least = make_plan(WARM, JUDGED, err.value.minimum_s + 1)
    assert least.shape.repeats == 1 and least.shape.framing_rows == 1  # all else at its least
    assert least.fidelity_rows == tuple(range(ROWS)) and least.steps["fidelity"] > 0
    with pytest.raises(BudgetTooSmall) as unjudged:
        make_plan(WARM, replace(JUDGED, judged=()), budget_s=60)
    assert unjudged.value.minimum_s < err.value.minimum_s  # the pass is in the minimum a refusal names


def test_the_last_cut_is_the_prompt_framings():
    asks = replace(ASKS, legs=(COST["genai"], COST["node"], COST["web"]))
    with pytest.raises(BudgetTooSmall) as err:
        make_plan(WARM, asks, budget_s=90)
    plan = make_plan(WARM, asks, err.value.minimum_s + 1)
    assert plan.shape.prefill_rows == 0 and "no prompt framings" in plan.cut
    assert "no prompt framings" in str(err.value)
    kept = make_plan(WARM, asks, err.value.minimum_s + 1 + (plan.budget_s - plan.estimate_s) + 600)
    assert kept.shape.prefill_rows >= 1  # cut only where nothing else fits


def test_a_leg_measured_slow_on_one_precision_is_priced_so_and_the_plan_cuts_to_hold_the_budget():
    """The 135M model's case: onnxruntime-web decoded the int4 tier 13x slower than Python, where the leg states 3x.
    Priced at the stated factor the plan overruns once the leg runs at its measured pace; priced at what the
    warm-up measured (``leg_rates``), it cuts more and fits. A leg skipped on a tier (a large fp32 tier in the
    browser) costs nothing there, and the plan says what it measured."""
    asks = replace(ASKS, legs=(COST["genai"], COST["node"], COST["web"]))
    slow = {("web", "int4"): LegRate(13.0, 8.0, precision="int4")}
    budget = 45 * 60
    stated = make_plan(WARM, asks, budget)
    measured = make_plan(WARM, replace(asks, leg_rates=slow), budget)
    at_its_pace = WARM.elapsed_s + FINISH_S + sum(estimate(WARM, replace(asks, leg_rates=slow), stated.shape).values())
    assert at_its_pace > 1.1 * budget  # the stated factor's plan would overrun by more than a tenth
    assert measured.estimate_s <= budget and measured.shape.framing_rows < stated.shape.framing_rows
    assert any(
        line == "  measured: web leg on int4 tiers (int4): 13.0x Python's decode, 8s to start"
        for line in measured.lines(ROWS)
    )
    skipped = make_plan(WARM, replace(asks, leg_rates={("web", "fp32"): LegRate(skipped=True)}), budget)
    same = skipped.shape
    assert (
        estimate(WARM, replace(asks, leg_rates={("web", "fp32"): LegRate(skipped=True)}), same)["framing"]
        < (estimate(WARM, asks, same)["framing"])
    )
    # a measured rate of 1x with no start prices the leg as the Python leg's own work, nothing stated added
    even = estimate(WARM, replace(asks, legs=(COST["web"],), leg_rates={("web", "int8"): LegRate(1.0, 0.0)}), same)
    none = estimate(WARM, replace(asks, legs=(), leg_rates={}), same)
    t = WARM.tiers["int8"]
    rows, prefill = same.framing_rows, same.prefill_rows
    work = sum(framing_row(t, asks, i < prefill) for i in range(rows)) + (asks.leg_repeats - 1) * t.row_mean * rows
    stated_others = sum(
        3.0
        * (
            sum(framing_row(x, asks, i < prefill) for i in range(rows))
            + (asks.leg_repeats - 1) * x.row_mean * rows
            + x.load_s
        )
        + COST["web"].start_s
        for name, x in WARM.tiers.items()
        if name != "int8"
    )
    assert even["framing"] == pytest.approx(none["framing"] + SAFETY * (work + stated_others))


def test_a_reference_is_scored_once_whatever_the_number_of_tiers_it_judges():
    """The fidelity pass scores a reference's streams once and lets go of it: a second tier judged against it adds
    that tier's load and its own teacher-forced streams, not the reference's again."""
    shape = make_plan(WARM, JUDGED, 6 * 3600).shape
    one = estimate(WARM, replace(JUDGED, judged=(("int8", "fp32"),)), shape)["fidelity"]
    two = estimate(WARM, JUDGED, shape)["fidelity"]
    t = WARM.tiers["int4"]
    forced = median(t.first_s) + t.call_s(median(t.tokens) + 1)
    assert two - one == pytest.approx(SAFETY * (t.load_s + shape.fidelity_rows * 2 * forced))


def test_the_fidelity_pass_is_charged_at_least_what_a_caller_saw_it_take():
    """measure explore's screening is the run's fidelity pass on its first rows, and it sees the scoring around
    the calls (softmax and KLD over the vocabulary) that the planner's model of calls cannot: the plan charges
    the larger, tier by tier, so the run is planned to end inside the budget; a smaller seen cost changes nothing."""
    shape = make_plan(WARM, JUDGED, 6 * 3600).shape
    model = estimate(WARM, JUDGED, shape)["fidelity"]
    rows = shape.fidelity_rows
    seen = {"fp32": 10.0, "int8": 3.0}
    charged = estimate(WARM, replace(JUDGED, fidelity_row_s=seen), shape)["fidelity"]
    r, t, u = WARM.tiers["fp32"], WARM.tiers["int8"], WARM.tiers["int4"]

    def forced(x: TierTimes) -> float:
        return median(x.first_s) + x.call_s(median(x.tokens) + 1)

    own = r.load_s + t.load_s + u.load_s + rows * (10.0 + 3.0 + 2 * forced(u))
    assert charged == pytest.approx(SAFETY * own) and charged > model
    tiny = {name: 1e-9 for name in ("fp32", "int8", "int4")}
    assert estimate(WARM, replace(JUDGED, fidelity_row_s=tiny), shape)["fidelity"] == pytest.approx(model)
    assert (
        make_plan(WARM, replace(JUDGED, fidelity_row_s=seen), 6 * 3600).estimate_s
        > make_plan(WARM, JUDGED, 6 * 3600).estimate_s
    )
