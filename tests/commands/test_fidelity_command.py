"""``measure fidelity`` judges each tier by the policy's rule, as the Overview does, in its table and its JSON."""

from __future__ import annotations

import contextlib
import io
import json

from measure import bundled
from measure.cli import main

DEMO = bundled.DEMO_DIR


def _run(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fidelity", str(DEMO / "lm-base-fp32"), str(DEMO / "lm-base-int8"), "--rows", "6", *args]) == 0
    return out.getvalue()


def test_each_tier_carries_the_policys_answer_with_its_rule_in_json_and_in_the_table():
    from measure.analysis.fidelity import MIN_ROWS

    (row,) = [json.loads(line) for line in _run("--json").splitlines()]
    said = row["faithful"]
    assert said["outcome"] in ("success", "failure", "inconclusive") and MIN_ROWS <= 6
    assert said["rule"].startswith("95% intervals: mean KLD ≤ ") and "(role default)" in said["rule"]
    mark = {"success": "✓", "failure": "✗", "inconclusive": "?"}[said["outcome"]]
    table = _run()
    assert f"Faithful?             {mark} {said['answer']}" in table  # the same answer, phrased alike
    assert f"(the default policy: {said['rule']})" in table
