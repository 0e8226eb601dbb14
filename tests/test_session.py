"""Session options are explicit and validated; the trace accounts for every call."""

from __future__ import annotations

import pytest

from measure.errors import MeasureError
from measure.session import SessionConfig, Trace


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
    with pytest.raises(MeasureError, match="not available in this onnxruntime"):
        SessionConfig(providers=("NoSuchExecutionProvider",))


def test_trace_filters_by_label(base_fp32):
    from measure.decode import greedy

    trace = Trace()
    greedy(base_fp32, "дом", trace=trace)
    assert trace.calls() == trace.calls(base_fp32.label + ".")
    assert trace.calls("other.") == 0
    assert trace.run_s() == pytest.approx(sum(trace.inside_s))
    assert len(trace.outside_s) == trace.calls()
