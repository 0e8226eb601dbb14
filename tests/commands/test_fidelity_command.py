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


def test_the_verb_holds_one_models_sessions_at_a_time_and_says_what_the_run_says(monkeypatch):
    """The reference's sessions are let go of before a tier's open, and each tier's before the next (real sessions
    watched through the engine's own opening of them); the figures are those of tiers held side by side."""
    import weakref

    from measure.engine.causal import layouts
    from measure.engine.load import load_tier
    from measure.suites.fidelity import judge
    from measure.suites.golden import load_golden

    real, live, beside = layouts.open_session, [], []

    def opening(config, path):
        beside.extend(f.name for f, ref in live if ref() is not None and f != path.parent)
        session = real(config, path)
        live.append((path.parent, weakref.ref(session)))
        return session

    monkeypatch.setattr(layouts, "open_session", opening)
    args = [str(DEMO / n) for n in ("lm-base-fp32", "lm-base-int8", "lm-base-int4")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fidelity", *args, "--rows", "3", "--json"]) == 0
    assert beside == []
    monkeypatch.setattr(layouts, "open_session", real)
    golden = load_golden(bundled.GOLDEN)
    golden = type(golden)(golden.path, golden.sha256, golden.rows[:3])
    held = judge(
        load_tier(DEMO / "lm-base-fp32"), [load_tier(DEMO / n) for n in ("lm-base-int8", "lm-base-int4")], golden
    )
    from measure.analysis.fidelity import tier_figures
    from measure.analysis.timings import Bootstrap
    from measure.commands.fidelity import figures_json
    from measure.record.model.fidelity import Fidelity
    from measure.suites.config import WallclockConfig
    from measure.terminal import strict_json

    wc = WallclockConfig()
    figures = tier_figures(Fidelity.from_dict(held), Bootstrap(wc.bootstrap, wc.seed))
    said = [json.loads(line) for line in out.getvalue().splitlines()]
    assert said == [json.loads(strict_json(figures_json(f))) for f in figures]
