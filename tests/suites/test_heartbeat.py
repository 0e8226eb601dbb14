"""Progress never goes quiet for more than 10 s: the last step is repeated with what runs, done/total and ETAs."""

from __future__ import annotations

import time

import pytest

from measure.suites.heartbeat import Heartbeat


def test_a_quiet_step_is_repeated_with_its_suite_counts_and_etas():
    shown, clock = [], [0.0]
    beat = Heartbeat(lambda *line: shown.append(line), every_s=10, now=lambda: clock[0])
    assert beat.line() is None  # nothing to repeat before the first step
    beat("framing base (python)", 1, 12)
    clock[0] = 40.0
    beat("framing base (onnxruntime-genai)", 2, 12)
    clock[0] = 60.0
    beat.run_end = 300.0
    line, done, total = beat.line()
    assert (done, total) == (2, 12)
    assert line.startswith("framing running, 2/12 done (20s since framing base (onnxruntime-genai)")
    assert "framing ETA ~3m00s" in line  # 20 s a step over 10 steps, less the 20 s this one has run
    assert "run ETA ~4m00s" in line
    beat.beat()
    assert shown[-1][0] == line


@pytest.mark.bounds
def test_the_thread_repeats_the_last_line_when_nothing_arrives():
    """Waits for two repeats rather than sleeping a fixed time, and bounds their number by the time that passed:
    on a loaded machine the thread wakes late, and a fixed sleep saw too few."""
    shown = []
    started = time.perf_counter()
    with Heartbeat(lambda *line: shown.append(line), every_s=0.2) as beat:
        beat("wallclock repeat 1/3 fp32", 1, 9)
        deadline = started + 60
        while sum("running" in s[0] for s in shown) < 2 and time.perf_counter() < deadline:
            time.sleep(0.05)
    elapsed = time.perf_counter() - started
    repeated = [s for s in shown if "running" in s[0]]
    # each repeat comes after every_s of silence since the line before it: never more than the time allows
    assert 2 <= len(repeated) <= elapsed / 0.2, (len(repeated), elapsed)
    assert all(s[1:] == (1, 9) and s[0].startswith("wallclock running, 1/9 done") for s in repeated)
