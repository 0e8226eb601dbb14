"""Session options are plain, explicit and validated; the trace accounts for every call; hooks run inside it."""

from __future__ import annotations

import functools
import subprocess
import sys

import numpy as np
import pytest

from measure import bundled
from measure.engine.load import load_tier
from measure.engine.session import SessionConfig, Slowdown, Trace, c_level_run
from measure.errors import MeasureError


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
    code = "import sys, measure.suites.config; print('onnxruntime' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_trace_filters_by_label(base_fp32):

    trace = Trace()
    base_fp32.greedy("дом", trace=trace)
    assert trace.calls() == trace.calls(base_fp32.label + ".")
    assert trace.calls("other.") == 0
    assert trace.run_s() == pytest.approx(sum(trace.inside_s))
    assert len(trace.outside_s) == trace.calls() == len(trace.labels)
    assert all(s >= 0 for s in trace.outside_s) and all(s > 0 for s in trace.inside_s)


def test_an_after_run_hook_runs_inside_the_timing():

    seen: list[float] = []
    tier = load_tier(bundled.LITE, after_run=seen.append)
    trace = Trace()
    decoded = tier.greedy("дом", trace=trace)
    assert len(seen) == decoded.calls == trace.calls()
    assert all(s <= t for s, t in zip(seen, trace.inside_s, strict=True))


def test_a_slowdown_stretches_every_call_by_its_factor():

    seen: list[float] = []

    def hook(run_s: float) -> None:
        seen.append(run_s)
        Slowdown(1.0)(run_s)

    plain, slowed = load_tier(bundled.LITE), load_tier(bundled.LITE, after_run=hook)
    trace = Trace()
    assert slowed.greedy("объём", trace=trace).tokens == plain.greedy("объём").tokens
    assert all(t >= 2 * s for s, t in zip(seen, trace.inside_s, strict=True))


def _sessions(tier):
    """Every TimedSession of a tier, the merged layout's with-cache twin included."""
    twin = getattr(tier.decoder, "_with_cache", None)
    return [tier.encoder.session, *tier.decoder.sessions, *([twin] if twin else [])]


def test_cpu_sessions_call_onnxruntime_past_its_python_wrapper():
    tier = load_tier(bundled.LITE)
    assert {s.call_path for s in _sessions(tier)} == {"c-level"}
    assert all(c_level_run(s.session) is not None for s in _sessions(tier))


@pytest.mark.parametrize("name", ["small-int4", "small-fp32-optimum", "small-fp32-merged"])
def test_the_public_run_decodes_bit_for_bit_as_the_direct_call(name, golden):
    from measure.engine.speculative import Pair

    direct, public = load_tier(bundled.GOLDEN.parent / name), load_tier(bundled.GOLDEN.parent / name)
    for session in _sessions(public):
        session.use_public_run()
    drafter = load_tier(bundled.LITE, label="drafter")
    for row in golden.rows[:16]:
        a, b = direct.greedy(row.input), public.greedy(row.input)
        assert (a.tokens, a.calls) == (b.tokens, b.calls), row.line
        ids, prefix = direct.source_ids(row.input), [direct.special.decoder_start, *a.tokens]
        assert np.array_equal(direct.feed_prefix(ids, prefix, 1)[0], public.feed_prefix(ids, prefix, 1)[0])
        if name == "small-int4":
            for k in (1, 4):
                sa = Pair(drafter, direct).decode(row.input, k)
                sb = Pair(drafter, public).decode(row.input, k)
                assert (sa.tokens, sa.rounds, sa.calls) == (sb.tokens, sb.rounds, sb.calls), row.line
    assert {s.call_path for s in _sessions(public)} == {"python"}
    assert {s.call_path for s in _sessions(direct)} == {"c-level"}


def test_a_changed_private_entry_falls_back_to_the_public_run_for_good(golden):
    """A private entry that refuses the call's arguments (TypeError) is replaced by the public run, once."""

    plain, changed = load_tier(bundled.LITE), load_tier(bundled.LITE)
    for session in _sessions(changed):  # a real entry with another signature: one argument too many
        session._run = functools.partial(session.session._sess.run, session.output_names)
    for row in golden.rows[:8]:
        trace = Trace()
        a, b = plain.greedy(row.input), changed.greedy(row.input, trace=trace)
        assert (a.tokens, a.calls) == (b.tokens, b.calls) == (b.tokens, trace.calls()), row.line
    assert {s.call_path for s in _sessions(changed)} == {"python"}


def test_bad_feeds_are_refused_on_the_direct_path_and_it_stays():
    tier = load_tier(bundled.LITE)
    session = tier.encoder.session
    with pytest.raises(Exception, match="input_ids"):
        session.run({}, Trace())
    assert session.call_path == "c-level"
