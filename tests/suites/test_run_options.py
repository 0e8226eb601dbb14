"""``measure run``'s options resolved into one frozen value before anything runs: the budget and where it came
from, ``--instructions`` merged into the config, the suites checked; and each step's sizes decided from it once."""

from __future__ import annotations

import dataclasses

import pytest

from measure import bundled
from measure.errors import MeasureError
from measure.suites.config import RunConfig, load_config
from measure.suites.golden import load_golden
from measure.suites.plan import Plan
from measure.suites.plan_costs import Shape
from measure.suites.run_options import Budget, options_from_args, run_options
from measure.suites.sizes import sizes


def test_the_flag_budget_wins_over_the_configs_and_each_is_named_as_given(tmp_path):
    config = dataclasses.replace(load_config(None), run=RunConfig(budget="20m"))
    from_config = run_options(config, None, tmp_path / "r")
    assert from_config.budget == Budget(1200.0, f'{config.path}: [run] budget = "20m"')
    assert run_options(config, None, tmp_path / "r", budget_s=900.0).budget == Budget(900.0, None)  # --budget
    from_flag = options_from_args(bundled.CONFIG, None, tmp_path / "r", "15m", False, ["measure", "run"])
    assert from_flag.budget == Budget(900.0, None)  # a refusal then names the flag
    assert from_flag.argv == ("measure", "run")
    assert run_options(load_config(None), None, tmp_path / "r").budget is None


def test_the_options_are_frozen_with_instructions_merged_and_suites_checked_once(tmp_path):
    options = run_options(load_config(None), ["framing", "framing"], tmp_path / "r", instructions=True)
    assert options.config.instructions.enabled and options.suites == ("framing",)
    assert options.first == "framing" and options.fidelity == options.config.framing.fidelity
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.budget = Budget(1.0)  # type: ignore[misc]
    with pytest.raises(MeasureError, match=r"^--suite 'timing': expected one of wallclock, framing$"):
        run_options(load_config(None), ["timing"], tmp_path / "r")


def test_a_budget_flag_it_cannot_read_is_refused_before_the_config_is_read(tmp_path):
    with pytest.raises(MeasureError, match=r"^--budget: expected a duration"):
        options_from_args(tmp_path / "missing.toml", None, tmp_path / "r", "soon", False, [])


def _plan(shape: Shape, wallclock: tuple[int, ...], framing: tuple[int, ...], fidelity=()) -> Plan:
    return Plan(600.0, 10.0, 60.0, 500.0, shape, wallclock, framing, 20, fidelity_rows=fidelity)


def test_without_a_plan_every_step_takes_every_row_and_the_configs_sizes():
    config = load_config(None)
    golden = load_golden(config.golden)
    sized = sizes(config, golden)
    assert sized.wallclock.rows is golden and sized.framing.rows is golden and sized.fidelity_rows is golden
    assert (sized.wallclock.repeats, sized.wallclock.warmed, sized.framing.prefill, sized.framing.sample) == (
        None,
        None,
        None,
        None,
    )
    assert sized.wallclock.config is config and sized.wallclock.call_costs is config.wallclock


def test_a_plan_sizes_each_step_once_and_states_the_framing_sample():
    config = load_config(None)
    golden = load_golden(config.golden)
    n = len(golden)
    shape = Shape(3, 7, 2, 1, 1, 2, 1, 2, 4, fidelity_rows=n)
    sized = sizes(config, golden, _plan(shape, (0, 2, 5), (0, 2)), warmed=2)
    wc = sized.wallclock
    assert [r.input for r in wc.rows.rows] == [golden.rows[i].input for i in (0, 2, 5)]
    assert (wc.repeats, wc.warmed, wc.call_costs.repeats) == (7, 2, 4)
    assert (wc.wallclock.profile_workers, wc.wallclock.profile_rows, wc.wallclock.warm_loads) == (1, 2, 1)
    assert wc.wallclock.call_cost_rows == 2 and config.wallclock.repeats != 4  # the config itself is untouched
    assert len(sized.framing.rows) == 2 and sized.framing.prefill == 1
    assert sized.framing.sample == {"rows": [0, 2], "prefill_rows": 1}
    assert sized.fidelity_rows is golden  # a plan's empty fidelity sample cuts nothing
    whole = dataclasses.replace(shape, prefill_rows=n)
    every = sizes(config, golden, _plan(whole, tuple(range(n)), tuple(range(n))))
    assert every.framing.rows is golden and every.framing.sample is None and every.framing.prefill is None
