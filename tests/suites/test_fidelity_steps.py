"""The fidelity pass inside a run holds one reference and one of its tiers at a time and judges as the one-shot
pass does."""

from __future__ import annotations

import json
import weakref
from pathlib import Path

from measure import bundled
from measure.engine.load import load_tier
from measure.engine.options import SessionConfig
from measure.record.io import load_record
from measure.suites import fidelity_steps, steps
from measure.suites.config import load_config
from measure.suites.fidelity import judge
from measure.suites.golden import load_golden
from measure.suites.runner import run

DEMO = bundled.CONFIG.parent
ROWS = 4
TIERS = (
    ("lm-base-fp32", "reference"),
    ("lm-base-int8", "plain"),
    ("lm-base-int4", "lite"),
    ("lm-small-int4", "drafter"),
)


def _config(folder: Path) -> Path:
    """Three tiers made from lm-base-fp32 (itself a tier of the run) and one whose reference is a folder outside it."""
    golden = folder / "golden.jsonl"
    golden.write_text("".join((DEMO / "golden-v1.jsonl").read_text(encoding="utf-8").splitlines(True)[:ROWS]))
    lines = ['golden = "golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for name, role in TIERS:
        lines += ["[[tiers]]", f'name = "{name}"', f"path = {json.dumps(str(DEMO / name))}", f'role = "{role}"']
    lines += ["[framing]", "k = [2]", "probe_k = 2", "node_leg = false", "web_leg = false", "genai_leg = false"]
    path = folder / "suite.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_pass_holds_one_reference_and_one_tier_and_judges_as_the_one_shot_pass(tmp_path, monkeypatch):
    opened: list[weakref.ref] = []
    most = [0]

    def counting(real):
        def load(*args, **kwargs):
            live = [r() for r in opened]
            most[0] = max(most[0], sum(t is not None and "graphs" in t.__dict__ for t in live))
            tier = real(*args, **kwargs)
            opened.append(weakref.ref(tier))
            return tier

        return load

    monkeypatch.setattr(steps, "load_tier", counting(steps.load_tier))
    monkeypatch.setattr(fidelity_steps, "load_tier", counting(fidelity_steps.load_tier))
    config = load_config(_config(tmp_path))
    doc = load_record(run(config, ["framing"], tmp_path / "results", argv=["test"]))
    # lm-base-fp32 judges its two quantized tiers as one group; lm-small-fp32, outside the run, judges lm-small-int4
    judged = {t["tier"]: t["reference"] for t in doc["fidelity"]["tiers"]}
    assert judged == {"lm-base-int8": "lm-base-fp32", "lm-base-int4": "lm-base-fp32", "lm-small-int4": "lm-small-fp32"}
    # when a tier loads at most one other is open: a group's tier beside its reference, a pair's drafter beside its
    # verifier, a reference beside the tier it is checked with; never a second tier of a group beside the first
    assert most[0] == 1

    # the same figures as measure fidelity's one pass over the same tiers, sessions and rows
    session = SessionConfig(intra_op_threads=1, inter_op_threads=1)
    reference = load_tier(DEMO / "lm-base-fp32", session, name="lm-base-fp32")
    tiers = [load_tier(DEMO / n, session, name=n) for n in ("lm-base-int8", "lm-base-int4")]
    once = judge(reference, tiers, load_golden(tmp_path / "golden.jsonl"), in_run=True)
    stepped = {t["tier"]: t for t in doc["fidelity"]["tiers"]}
    for part in once["tiers"]:
        mine = stepped[part["tier"]]
        # bit-identical: the reference's logits recomputed per tier are the ones computed once
        assert mine | {"source": "config"} == part


def test_a_quantized_tier_without_a_named_reference_is_judged_against_the_tier_its_graphs_tell(tmp_path):
    """A tier folder whose tier.json names no source (as optimum's and onnxruntime's quantizers leave it) and no
    ``reference``:
    the run finds its source among its tiers by the weights; a tier whose source is not in the run is recorded as
    unjudged, with why, and says so instead of passing by silence."""
    import shutil

    from measure.analysis.decision import decide
    from measure.analysis.record_analysis import analyse
    from measure.record.model import from_document

    for name in ("lm-base-int8", "lm-small-int4"):
        shutil.copytree(DEMO / name, tmp_path / name)
        meta = json.loads((tmp_path / name / "tier.json").read_text(encoding="utf-8"))
        meta.pop("quantization")
        (tmp_path / name / "tier.json").write_text(json.dumps(meta), encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join((DEMO / "golden-v1.jsonl").read_text(encoding="utf-8").splitlines(True)[:2]))
    lines = ['golden = "golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for name, folder, role in (
        ("lm-base-fp32", DEMO / "lm-base-fp32", "reference"),
        ("lm-base-int8", tmp_path / "lm-base-int8", "plain"),
        ("lm-small-int4", tmp_path / "lm-small-int4", "lite"),
    ):
        lines += ["[[tiers]]", f'name = "{name}"', f"path = {json.dumps(str(folder))}", f'role = "{role}"']
    lines += ["[framing]", "k = [2]", "probe_k = 2", "node_leg = false", "web_leg = false", "genai_leg = false"]
    (tmp_path / "suite.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    doc = load_record(run(load_config(tmp_path / "suite.toml"), ["framing"], tmp_path / "results", argv=["test"]))
    judged = {t["tier"]: (t["reference"], t["source"]) for t in doc["fidelity"]["tiers"]}
    assert judged == {"lm-base-int8": ("lm-base-fp32", "graph")}
    (unjudged,) = doc["fidelity"]["unjudged"]
    assert unjudged["tier"] == "lm-small-int4" and "holds its weights" in unjudged["reason"]
    analysis = analyse(from_document(doc, "run.json"))
    said = {v.key: v for v in analysis.verdicts if v.topic == "fidelity"}
    assert said["lm-small-int4"].outcome == "inconclusive" and said["lm-small-int4"].answer.startswith("not judged")
    assert said["lm-base-int8"].outcome in ("success", "failure", "inconclusive")  # judged: figures, not silence
    assert decide(analysis).unjudged == ()  # a framing-only run times nothing: no tier to ship or leave out
