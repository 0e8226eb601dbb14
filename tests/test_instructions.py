"""Instruction counts under callgrind: the decode region only, parsed from callgrind's own totals."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from measure import bundled
from measure.artifacts import load_tier
from measure.decode import greedy
from measure.errors import MeasureError
from measure.golden import load_golden
from measure.instructions import HOOKS, callgrind_total, count

CALLGRIND_OUT = """# callgrind format
version: 1
creator: callgrind-3.19.0
cmd: python -m measure instructions
events: Ir
fl=(1) ???
fn=(1) 0x0000000000108c10
0 7
summary: 22936336
totals: 22936336
"""


def test_the_total_is_callgrinds_own_line():
    assert callgrind_total(CALLGRIND_OUT, "x") == 22_936_336
    assert callgrind_total("events: Ir\nsummary: 5\n", "x") == 5
    with pytest.raises(MeasureError, match="not a callgrind output file"):
        callgrind_total("events: Ir\n", "out.txt")


def test_without_the_extra_the_error_names_it(monkeypatch, tmp_path):
    import measure.instructions as instructions

    monkeypatch.setattr(instructions, "HOOKS", "measure_no_such_module.hooks")
    with pytest.raises(MeasureError, match=r"pip install 'measure\[instructions\]'"):
        instructions.count(bundled.LITE, bundled.GOLDEN, 1, valgrind="/bin/true")


@pytest.mark.skipif(
    shutil.which("valgrind") is None or importlib.util.find_spec(HOOKS.split(".")[0]) is None,
    reason="needs valgrind and pytest-codspeed (pip install 'measure[instructions]')",
)
def test_one_row_of_the_lite_tier_is_counted_in_the_decode_region_only():
    found = count(bundled.LITE, bundled.GOLDEN, 1)
    text = load_golden(bundled.GOLDEN).rows[0].input
    assert found.rows == 1 and found.tokens == len(greedy(load_tier(bundled.LITE), text).tokens)
    # Python and onnxruntime start-up alone run hundreds of millions of instructions; one row of the
    # small int4 tier runs about ten million, so a count this size is the decode region and nothing else.
    assert 1e6 < found.instructions < 1e8
