"""A run on the bundled decoder-only tiers with and without a budget: the plan in the record, the refusal before
anything is written, the decode length the config sets, and one step's sessions alive at a time.

Nothing here depends on what a tier decodes: the facts asserted are counts, lengths and the record's shape.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path

import pytest

from measure import bundled
from measure.errors import MeasureError
from measure.record.io import load, load_record
from measure.suites import steps
from measure.suites.config import load_config
from measure.suites.plan import BudgetTooSmall
from measure.suites.runner import run

DEMO = bundled.CONFIG.parent
ROWS = 6


def _config(folder: Path, extra: str = "", repeats: int = 2, node: bool = False) -> Path:
    """Two decoder-only tiers and their pair over the first ROWS golden rows, no other runtime, one profile worker."""
    golden = folder / "golden.jsonl"
    golden.write_text("".join((DEMO / "golden-v1.jsonl").read_text(encoding="utf-8").splitlines(True)[:ROWS]))
    lines = ['golden = "golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for name, role in (("lm-base-int8", "plain"), ("lm-small-int4", "drafter")):
        lines += ["[[tiers]]", f'name = "{name}"', f"path = {json.dumps(str(DEMO / name))}", f'role = "{role}"']
    lines += ["[[pairs]]", 'drafter = "lm-small-int4"', 'verifier = "lm-base-int8"']
    lines += ["[wallclock]", "warmup = 1", "warmup_s = 0.0", f"repeats = {repeats}", "k = [2]", "bootstrap = 200"]
    lines += ["profile_workers = 1", "profile_rows = 2", "warm_loads = 1", "call_cost_rows = 2"]
    lines += ["[framing]", "k = [2]", "probe_k = 2", f"node_leg = {str(node).lower()}", "web_leg = false"]
    lines += ["genai_leg = false"]
    path = folder / "suite.toml"
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


def test_without_a_budget_the_run_measures_exactly_what_the_config_asks(tmp_path):
    path = run(load_config(_config(tmp_path)), ["wallclock"], tmp_path / "results", argv=["test"])
    doc = load_record(path)
    assert "plan" not in doc and "run" not in doc["config"]
    assert {len(c["wall_s"]) for c in doc["wallclock"]["cases"].values()} == {2}
    assert {len(c["tokens"]) for c in doc["wallclock"]["cases"].values()} == {ROWS}
    limits = {name: t["decode_limit"] for name, t in doc["tiers"].items()}
    assert limits == {key: {"max_new_tokens": 64, "from": "generation_config.json"} for key in limits}


@pytest.mark.bounds  # its plan is made from timings, and it must end within its budget
def test_a_budgeted_run_plans_states_its_plan_and_ends_within_it(tmp_path):
    said: list[str] = []
    config = load_config(_config(tmp_path))
    path = run(config, ["wallclock", "framing"], tmp_path / "results", argv=["test"], budget_s=600, say=said.append)
    record = load(path)  # validated: the plan is part of the schema
    plan = record.plan
    assert plan is not None and plan.budget_s == 600 and record.complete
    assert said[0].startswith("plan for a 10m00s budget") and any("ETA" in line for line in said)
    assert plan.shape["repeats"] >= 6  # a 95% interval: the config's 2 repeats are raised when the budget allows
    assert plan.outcome is not None and plan.outcome.stopped in ("tolerance", "repeats", "budget")
    assert plan.outcome.spent_s <= 600
    cases = record.wallclock.cases
    assert all(c.repeats >= plan.shape["repeats"] for c in cases.values())
    assert {len(c.tokens) for c in cases.values()} == {len(plan.wallclock_rows)}
    added = plan.outcome.added_repeats
    assert all(cases[name].repeats == plan.shape["repeats"] + n for name, n in added.items())


def test_a_budget_too_small_for_one_repeat_of_everything_is_refused_and_nothing_is_written(tmp_path):
    config = load_config(_config(tmp_path))
    with pytest.raises(BudgetTooSmall) as err:
        run(config, ["wallclock", "framing"], tmp_path / "results", argv=["test"], budget_s=1.0)
    assert "\n" not in str(err.value) and "too small" in str(err.value) and "give at least" in str(err.value)
    assert not list((tmp_path / "results").glob("*/*.json"))


@pytest.mark.parametrize("written", ['"1s"', "1"])
def test_a_config_budget_too_small_is_named_by_its_file_and_key_not_by_a_flag_never_given(tmp_path, written):
    config = load_config(_config(tmp_path, f"[run]\nbudget = {written}\n"))
    with pytest.raises(BudgetTooSmall) as err:
        run(config, ["wallclock"], tmp_path / "results", argv=["test"])
    message = str(err.value)
    assert message.startswith(f"{config.path}: [run] budget = {written}: too small"), message
    assert "--budget" not in message
    with pytest.raises(BudgetTooSmall) as err:  # the flag, over the config's: named as the flag
        run(config, ["wallclock"], tmp_path / "results", argv=["test"], budget_s=2.0)
    assert str(err.value).startswith("--budget 2s: too small")
    assert not list((tmp_path / "results").glob("*/*.json"))


def test_the_decode_length_comes_from_the_suite_and_the_tier_entry(tmp_path):
    extra = "\n".join(["[run]", 'budget = "20m"'])
    path = _config(tmp_path, extra="", repeats=1)
    text = path.read_text(encoding="utf-8").replace("[wallclock]", "[wallclock]\nmax_new_tokens = 3")
    text = text.replace("[framing]", "[framing]\nmax_new_tokens = 3")
    text = text.replace('role = "drafter"', 'role = "drafter"\nmax_new_tokens = 1')
    path.write_text(text + extra, encoding="utf-8")
    config = load_config(path)
    assert config.run.budget_s == 1200
    doc = load_record(run(config, ["wallclock", "framing"], tmp_path / "results", argv=["test"], budget_s=None))
    cases = doc["wallclock"]["cases"]
    assert max(cases["lm-base-int8"]["tokens"]) <= 3 and max(cases["lm-small-int4"]["tokens"]) <= 1
    assert doc["tiers"]["lm-base-int8"]["decode_limit"] == {"max_new_tokens": 3, "from": "config"}
    python = {t["tier"]: t for t in doc["framing"]["legs"][0]["tiers"]}
    assert max(map(len, python["lm-base-int8"]["output_ids"])) <= 3
    assert max(map(len, python["lm-small-int4"]["output_ids"])) <= 1
    assert doc["plan"]["budget_s"] == 1200  # [run] budget plans the run as --budget does


def test_one_steps_sessions_are_alive_at_a_time(tmp_path, monkeypatch):
    """Every tier is loaded for a step and let go of before the next step loads: at no load are more than a
    pair's two tiers open (the wall-clock units, the call costs, the framing tiers and pairs, the checks)."""
    opened: list[weakref.ref] = []
    most = [0]
    real = steps.load_tier

    def counting(*args, **kwargs):
        live = [r() for r in opened]
        most[0] = max(most[0], sum(t is not None and "graphs" in t.__dict__ for t in live))
        tier = real(*args, **kwargs)
        opened.append(weakref.ref(tier))
        return tier

    monkeypatch.setattr(steps, "load_tier", counting)
    run(load_config(_config(tmp_path)), ["wallclock", "framing"], tmp_path / "results", argv=["test"])
    assert len(opened) > 10  # loaded again for every step, not once for the run
    assert most[0] <= 1  # when a tier loads, at most the other half of its pair is open


def test_a_tier_let_go_of_cannot_decode(golden):
    tier = steps.Sessions(load_config(), "wallclock").tier("lm-base-int8")
    ids = tier.source_ids(golden.rows[0].input)
    assert tier.greedy_ids(ids).tokens
    fingerprint = tier.fingerprint()
    steps.release(tier)
    assert tier.name == "lm-base-int8" and tier.fingerprint() is fingerprint
    with pytest.raises(AttributeError):
        tier.greedy_ids(ids)


def test_a_verifier_decode_length_with_no_room_for_a_draft_is_refused(tmp_path):
    """With 2 new tokens a speculative decode never calls its drafter (the prefill's token, then the verifier's)."""
    path = _config(tmp_path)
    path.write_text(path.read_text().replace("[framing]", "[framing]\nmax_new_tokens = 2"), encoding="utf-8")
    with pytest.raises(MeasureError, match=r"framing.max_new_tokens: 2 leaves pair lm-small-int4->lm-base-int8 no"):
        load_config(path)


def test_a_bad_budget_in_the_config_names_the_key(tmp_path):
    with pytest.raises(MeasureError, match=r"suite.toml: run.budget: expected a duration"):
        load_config(_config(tmp_path, extra='[run]\nbudget = "later"\n'))


def test_the_plan_prices_each_replaying_leg_at_what_the_warm_up_measured_on_each_precision(tmp_path, monkeypatch):
    """The node leg timed in the warm-up on both tiers (int8 and int4; the size floor lowered to reach the demo's
    small tiers): the plan's framing estimate is the one those rates give, not the leg's stated factor, and the
    plan says what it measured. No wall time is asserted: what the planner decided from what it measured."""
    from dataclasses import replace
    from functools import partial
    from time import perf_counter

    import jsonschema

    from measure.engine.load import load_tier
    from measure.record.io import schema
    from measure.record.model.plan import RunPlan
    from measure.suites import budget
    from measure.suites.golden import load_golden
    from measure.suites.legs.node import NodeLeg
    from measure.suites.legs.probe import probe_legs
    from measure.suites.plan_costs import estimate
    from measure.suites.run_options import run_options

    config = load_config(_config(tmp_path, node=True))
    if NodeLeg.ready(config.framing) is not None:
        pytest.skip(NodeLeg.ready(config.framing))
    monkeypatch.setattr(budget, "probe_legs", partial(probe_legs, min_bytes=0))
    golden = load_golden(config.golden)
    precisions = {t.name: load_tier(t.path, name=t.name).fingerprint().precision for t in config.tiers}
    options = run_options(config, ["framing"], tmp_path / "results", budget_s=3600)
    planned = budget.plan_run(options, golden, {}, perf_counter(), precisions=precisions)
    rates = planned.rates
    if not rates:  # onnxruntime-node is not installed here: the leg opened as skipped, and no rate was measured
        pytest.skip("onnxruntime-node is not installed")
    assert set(rates) == {("node", "lm-base-int8"), ("node", "lm-small-int4")}
    assert {name: r.precision for (_, name), r in rates.items()} == precisions
    assert all(r.factor > 0 and r.start_s >= 0 and not r.skipped for r in rates.values())
    asks = budget.asks_of(config, ["framing"], len(golden), budget.other_legs(config))
    shape = planned.plan.shape
    assert planned.plan.steps["framing"] == estimate(planned.warm, replace(asks, leg_rates=rates), shape)["framing"]
    assert planned.plan.steps["framing"] != estimate(planned.warm, asks, shape)["framing"]  # not the stated 1.5x
    said = [line for line in planned.plan.lines(len(golden)) if line.startswith("  measured: node leg on ")]
    assert len(said) == 2  # one line per precision
    part = planned.plan.to_dict()  # the record keeps what the plan was priced on, as its schema states it
    jsonschema.validate(part, {"$defs": schema()["$defs"], "$ref": "#/$defs/plan"})
    stored = RunPlan.from_dict(part)
    assert stored is not None
    assert {(r.leg, r.tier): (r.factor, r.precision) for r in stored.leg_rates} == {
        k: (round(r.factor, 3), r.precision) for k, r in rates.items()
    }


def test_letting_go_of_sessions_starts_no_process(monkeypatch):
    """Each release hands freed memory back with glibc's malloc_trim, looked up once: a lookup per release ran
    ``ldconfig`` in a child forked from a process holding a large model, counted twice by a tree's memory."""
    import subprocess

    steps.trim()  # the one lookup
    started: list[object] = []
    real = subprocess.Popen

    def popen(*args, **kwargs):
        started.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", popen)
    steps.trim()
    steps.release()
    assert started == []
