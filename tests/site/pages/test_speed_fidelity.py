"""The speed-fidelity chart says what constructed records mean: the tiers of one model one family with its own
front, the floor, the policy bounds, the pair's star (records from :func:`tests_support.timed_cases`)."""

from __future__ import annotations

import math

import pytest
from tests_support import DATA_DIR, timed_cases

from measure.analysis.decision import decide
from measure.analysis.record_analysis import analyse
from measure.record.io import load_record, validate
from measure.record.model import from_document
from measure.site import charts
from measure.site.pages.speed_fidelity import FLOOR, speed_fidelity


@pytest.fixture(scope="module")
def golden() -> dict:
    return load_record(DATA_DIR / "record-v4.json")


def _decision(doc: dict):
    validate(doc, "constructed", [])
    return decide(analyse(from_document(doc, "constructed")))


def _points(figure: dict) -> dict[str, dict]:
    return {t["meta"]["tier"]: t for t in figure["data"] if "meta" in t}


def test_the_chart_draws_each_models_front_the_floor_and_the_policy_bound(golden):
    d = _decision(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10}))
    figure = speed_fidelity(d, {"default": 0.05, "plain": 0.01}, charts.Palette())
    points = _points(figure)
    assert points["base-fp32"]["y"][0] == FLOOR  # the reference: no divergence, drawn at the marked floor
    of = {s.tier: s.model for s in d.speeds}
    fronts = [t for t in figure["data"] if t["mode"] == "lines"]
    assert fronts and all(t["line"]["dash"] == "dot" for t in fronts)
    for front in fronts:  # nothing on a model's front has a tier of that model both faster and closer
        model = front["legendgroup"]
        by_speed = sorted((p["x"][0], p["y"][0]) for tier, p in points.items() if of[tier] == model)
        best, want = float("inf"), []
        for x, y in by_speed:
            if y < best:
                want.append((x, y))
                best = y
        assert list(zip(front["x"], front["y"], strict=True)) == want
    assert sorted(s["y0"] for s in figure["layout"]["shapes"]) == [0.01, 0.05]
    assert any(t["marker"]["symbol"] == "star-open" for t in figure["data"] if t["mode"] == "markers")
    lo, hi = figure["layout"]["yaxis"]["range"]  # in decades: every bound and its label inside, with room
    assert lo < math.log10(FLOOR) and hi >= math.log10(0.05) + 0.4


def test_the_tiers_of_one_model_are_one_family_one_colour_a_marker_each_and_its_front_in_its_colour(golden):
    """Two encoder-decoder models in one record: base-fp32 (with base-int8) and small-fp32 (small-int4)."""
    d = _decision(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10}))
    figure = speed_fidelity(d, {"default": 0.05}, charts.Palette())
    points = _points(figure)
    base, small = [points[t] for t in ("base-int8", "base-fp32")], points["small-int4"]
    assert {p["legendgroup"] for p in base} == {"base-fp32"} and small["legendgroup"] == "small-fp32"
    assert {p["legendgrouptitle"]["text"] for p in base} == {"base-fp32 model"}  # one kind: not named
    assert len({p["marker"]["color"] for p in base}) == 1 and small["marker"]["color"] != base[0]["marker"]["color"]
    assert len({p["marker"]["symbol"] for p in base}) == 2
    (front,) = [t for t in figure["data"] if t["mode"] == "lines" and t["legendgroup"] == "base-fp32"]
    assert front["line"]["color"] == base[0]["marker"]["color"]
    assert not [t for t in figure["data"] if t["mode"] == "lines" and t["legendgroup"] == "small-fp32"]  # one point


def test_a_tier_an_explore_run_made_is_labelled_by_its_recipe_and_two_kinds_are_named():
    d = decide(analyse(from_document(load_record(DATA_DIR / "record-v5-explore.json"), "explore")))
    points = _points(speed_fidelity(d, {"default": 0.05}, charts.Palette()))
    assert points["lm-small-int8-nbits"]["name"] == "int8-nbits" and points["small-int8"]["name"] == "int8"
    assert points["small-fp32"]["name"] == "small-fp32"  # a reference: its tier's name
    assert points["lm-small-int8"]["legendgrouptitle"]["text"] == "lm-small-fp32 model (decoder-only)"
    assert points["small-int8"]["legendgrouptitle"]["text"] == "small-fp32 model (encoder-decoder)"


def test_the_x_range_holds_every_interval_and_no_user_string_is_template_or_markup(golden):
    """A tier's name is data (escaped by ``site.context.chart``), never part of a hovertemplate, where ``%{...}``
    is template syntax and ``<b>`` markup; the x range holds the widest interval, not only the points."""
    from measure.site.context import chart

    doc = timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10})
    d = _decision(doc)
    figure = speed_fidelity(d, {"default": 0.05}, charts.Palette())
    assert _right_edge(figure["layout"]["xaxis"]) >= max(s.ms_per_token.hi for s in d.speeds)
    for trace in figure["data"]:
        template = trace.get("hovertemplate", "")
        assert not any(s.tier in template for s in d.speeds), template
    titled = {"data": [{"name": "<b>x</b>", "legendgrouptitle": {"text": "<i>m</i> model"}}], "layout": {}}
    chart("c", "t", titled)
    assert titled["data"][0]["legendgrouptitle"]["text"] == "&lt;i&gt;m&lt;/i&gt; model"


def _right_edge(axis: dict) -> float:
    return 10 ** axis["range"][1] if axis.get("type") == "log" else axis["range"][1]


def test_speeds_spread_past_ten_times_are_drawn_on_a_log_axis_that_holds_them_all(golden):
    """An explore run's recipes spread from 55 to 1,350 ms/token: on a linear axis the fast ones share a tenth of
    it. Past ``SPREAD_LOG`` the axis is logarithmic, and every point and interval end is inside it."""
    near = speed_fidelity(
        _decision(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10})), {}, charts.Palette()
    )
    assert near["layout"]["xaxis"].get("type") != "log" and near["layout"]["xaxis"]["range"][0] == 0
    d = _decision(timed_cases(golden, {"base-fp32": 4.0, "base-int8": 0.20, "small-int4": 0.10}))
    axis = speed_fidelity(d, {}, charts.Palette())["layout"]["xaxis"]
    assert axis["type"] == "log" and "log" in axis["title"]["text"]
    lo, hi = axis["range"]
    assert 10**lo <= min(s.ms_per_token.lo for s in d.speeds) and 10**hi >= max(s.ms_per_token.hi for s in d.speeds)


def test_a_log_speed_axis_starts_at_a_labelled_tick_left_of_the_fastest_point():
    """SmolLM2's recipes span 24 to 260 ms/token: the axis began at 21, between the ticks 20 and 50, and the fastest
    points had no number left of them. It now starts at the tick at or below the fastest value."""
    from measure.site.pages.speed_fidelity import _speed_axis

    axis = _speed_axis([24.0, 26.0, 120.0, 260.0])
    lo, hi = axis["range"]
    labelled = [t for t in axis["tickvals"] if lo <= math.log10(t) <= hi]
    assert axis["type"] == "log" and min(labelled) <= 24.0 and 20.0 in labelled
    assert 10**hi >= 260.0 and 10**lo > 10.0  # no further left than that tick needs
    near = _speed_axis([10.0, 150.0])  # the fastest on a tick: the axis starts just left of it, as before
    assert near["range"][0] == math.log10(10.0) - 0.05
