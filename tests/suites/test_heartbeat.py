"""Progress never goes quiet for more than 10 s: the last step is repeated with what runs, done/total and ETAs."""

from __future__ import annotations

import time

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


def test_the_thread_repeats_the_last_line_when_nothing_arrives():
    shown = []
    with Heartbeat(lambda *line: shown.append(line), every_s=0.2) as beat:
        beat("wallclock repeat 1/3 fp32", 1, 9)
        time.sleep(0.9)
    repeated = [s for s in shown if "running" in s[0]]
    assert 2 <= len(repeated) <= 5 and all(s[1:] == (1, 9) for s in repeated)
