"""The speculative cost model, checked against numbers worked by hand."""

from __future__ import annotations

import subprocess
import sys

import pytest

from measure.analysis.speedup import (
    CallCostInputs,
    expected_tokens_per_round,
    fit_batch_cost,
    predict,
)
from measure.errors import MeasureError


def test_expected_tokens_per_round():
    assert expected_tokens_per_round(1.0, 4) == 5.0
    assert expected_tokens_per_round(0.0, 4) == 1.0
    # a = 0.5, k = 2: 1 + 0.5 + 0.25
    assert expected_tokens_per_round(0.5, 2) == pytest.approx(1.75)


def test_equal_costs_and_k_drafter_calls_give_leviathans_figure():
    costs = CallCostInputs(single_s=0.002, batched_s=0.002, draft_s=0.0005)
    p = predict(4, 0.8, costs)
    # E = (1 - 0.8^5) / 0.2 = 3.3616; c = 0.25; Leviathan: 3.3616 / (4 * 0.25 + 1) = 1.6808
    assert p.expected_tokens == pytest.approx(3.3616)
    assert p.cost_ratio == pytest.approx(0.25) and p.batch_ratio == pytest.approx(1.0)
    assert p.leviathan == pytest.approx(1.6808)
    assert p.measured_cost == pytest.approx(p.leviathan) and p.tokens_per_round == p.expected_tokens
    assert p.observed is None and p.efficiency is None


def test_a_dearer_batched_call_lowers_the_measured_cost_prediction():
    # single 200 us, batched call of 3 tokens 300 us, drafter 50 us, a = 0.9, k = 2, 2.5 drafter calls a round
    costs = CallCostInputs(single_s=200e-6, batched_s=300e-6, draft_s=50e-6)
    p = predict(2, 0.9, costs, draft_calls_per_round=2.5, observed=1.2)
    # E = 1 + 0.9 + 0.81 = 2.71
    assert p.expected_tokens == pytest.approx(2.71)
    # Leviathan: 2.71 / (2 * 0.25 + 1) = 1.80667
    assert p.leviathan == pytest.approx(2.71 / 1.5)
    # measured: 2.71 * 200 / (2.5 * 50 + 300) = 542 / 425 = 1.275294...
    assert p.measured_cost == pytest.approx(542 / 425)
    assert p.batch_ratio == pytest.approx(1.5)
    # efficiency: 1.2 / 1.275294 = 0.940959...
    assert p.efficiency == pytest.approx(1.2 * 425 / 542)


def test_observed_tokens_per_round_replace_e_in_the_measured_cost_prediction_only():
    costs = CallCostInputs(single_s=200e-6, batched_s=300e-6, draft_s=50e-6)
    p = predict(2, 0.9, costs, draft_calls_per_round=3, tokens_per_round=2.5, observed=1.0)
    assert p.expected_tokens == pytest.approx(2.71) and p.tokens_per_round == 2.5
    assert p.leviathan == pytest.approx(2.71 / 1.5)  # Leviathan's figure keeps E
    # 2.5 * 200 / (3 * 50 + 300) = 500 / 450
    assert p.measured_cost == pytest.approx(500 / 450)
    assert p.efficiency == pytest.approx(0.9)
    with pytest.raises(MeasureError, match="tokens per round"):
        predict(2, 0.9, costs, tokens_per_round=3.5)


def test_batch_cost_line():
    line = fit_batch_cost([1, 2, 3, 5, 9], [100e-6, 110e-6, 120e-6, 140e-6, 180e-6])
    assert line.fixed_s == pytest.approx(90e-6)
    assert line.per_token_s == pytest.approx(10e-6)
    assert line.at(5) == pytest.approx(140e-6)
    assert line.ratio(9) == pytest.approx(1.8)


def test_bad_inputs_are_refused():
    with pytest.raises(MeasureError, match="single_s"):
        CallCostInputs(single_s=0.0, batched_s=1.0, draft_s=1.0)
    with pytest.raises(MeasureError, match="acceptance"):
        predict(2, 1.5, CallCostInputs(1.0, 1.0, 1.0))
    with pytest.raises(MeasureError, match="two or more distinct"):
        fit_batch_cost([3, 3], [1.0, 2.0])


def test_the_cost_model_does_not_import_onnxruntime():
    code = "import sys, measure.analysis.speedup; print('onnxruntime' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
