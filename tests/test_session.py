"""Session options are plain, explicit and validated; the trace accounts for every call; hooks run inside it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from measure import bundled
from measure.artifacts import load_tier
from measure.errors import MeasureError
from measure.session import SessionConfig, Slowdown, Trace


def test_options_are_recorded():
    assert SessionConfig().to_dict() == {
        "intra_op_threads": 1,
        "inter_op_threads": 1,
        "graph_optimization": "all",
        "providers": ["CPUExecutionProvider"],
    }


def test_bad_options_are_refused():
    with pytest.raises(MeasureError, match="graph_optimization: expected one of"):
        SessionConfig(graph_optimization="max")


def test_a_missing_provider_is_refused_when_sessions_are_built():
    options = SessionConfig(providers=("NoSuchExecutionProvider",))  # plain data: nothing checked yet
    with pytest.raises(MeasureError, match="NoSuchExecutionProvider not available in this onnxruntime"):
        load_tier(bundled.LITE, options)


def test_the_config_module_does_not_import_onnxruntime():
    code = "import sys, measure.config; print('onnxruntime' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_trace_filters_by_label(base_fp32):
    from measure.decode import greedy

    trace = Trace()
    greedy(base_fp32, "дом", trace=trace)
    assert trace.calls() == trace.calls(base_fp32.label + ".")
    assert trace.calls("other.") == 0
    assert trace.run_s() == pytest.approx(sum(trace.inside_s))
    assert len(trace.outside_s) == trace.calls() == len(trace.labels)
    assert all(s >= 0 for s in trace.outside_s) and all(s > 0 for s in trace.inside_s)


def test_an_after_run_hook_runs_inside_the_timing():
    from measure.decode import greedy

    seen: list[float] = []
    tier = load_tier(bundled.LITE, after_run=seen.append)
    trace = Trace()
    decoded = greedy(tier, "дом", trace=trace)
    assert len(seen) == decoded.calls == trace.calls()
    assert all(s <= t for s, t in zip(seen, trace.inside_s, strict=True))


def test_a_slowdown_stretches_every_call_by_its_factor():
    from measure.decode import greedy

    seen: list[float] = []

    def hook(run_s: float) -> None:
        seen.append(run_s)
        Slowdown(1.0)(run_s)

    plain, slowed = load_tier(bundled.LITE), load_tier(bundled.LITE, after_run=hook)
    trace = Trace()
    assert greedy(slowed, "объём", trace=trace).tokens == greedy(plain, "объём").tokens
    assert all(t >= 2 * s for s, t in zip(seen, trace.inside_s, strict=True))
