"""The fidelity pass inside a run holds one session's tier at a time (a reference, then each tier it judges) and
judges as the one-shot pass does, bit for bit as when both tiers were scored side by side."""

from __future__ import annotations

import json
import tempfile
import weakref
from dataclasses import replace
from pathlib import Path

import numpy as np

from measure import bundled
from measure.engine.causal import layouts as causal_layouts
from measure.engine.load import load_tier
from measure.engine.options import SessionConfig
from measure.record.io import load_record
from measure.suites import steps
from measure.suites.config import load_config
from measure.suites.fidelity import judge
from measure.suites.fidelity_steps import run_fidelity_steps
from measure.suites.golden import load_golden
from measure.suites.preflight import check_tiers
from measure.suites.runner import run

DEMO = bundled.CONFIG.parent
ROWS = 4
TIERS = (
    ("lm-base-fp32", "reference"),
    ("lm-base-int8", "plain"),
    ("lm-base-int4", "lite"),
    ("lm-small-int4", "drafter"),
)


def _config(folder: Path, pair: bool = False) -> Path:
    """Three tiers made from lm-base-fp32 (itself a tier of the run) and one whose reference is a folder outside it;
    ``pair``: lm-small-int4 drafting for lm-base-fp32."""
    golden = folder / "golden.jsonl"
    golden.write_text("".join((DEMO / "golden-v1.jsonl").read_text(encoding="utf-8").splitlines(True)[:ROWS]))
    lines = ['golden = "golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for name, role in TIERS:
        lines += ["[[tiers]]", f'name = "{name}"', f"path = {json.dumps(str(DEMO / name))}", f'role = "{role}"']
    lines += ["[[pairs]]", 'drafter = "lm-small-int4"', 'verifier = "lm-base-fp32"'] if pair else []
    lines += ["[framing]", "k = [2]", "probe_k = 2", "node_leg = false", "web_leg = false", "genai_leg = false"]
    path = folder / "suite.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _opened(monkeypatch) -> list[tuple[Path, set[Path]]]:
    """Every onnxruntime session the engine opens (its graph's folder), with the folders whose sessions are still
    alive at that moment: real sessions, watched through weak references, never collected here."""
    real, live, events = causal_layouts.open_session, [], []

    def opening(config, path):
        events.append((path.parent, {folder for folder, ref in live if ref() is not None}))
        session = real(config, path)
        live.append((path.parent, weakref.ref(session)))
        return session

    monkeypatch.setattr(causal_layouts, "open_session", opening)
    return events


def _interleaved(reference, tier, golden) -> dict:
    """The tier's fidelity entry as the pass computed it before it let go of its reference: both tiers alive, the
    reference's logits recomputed beside the tier's row by row (the figures the new pass must keep bit for bit)."""
    from measure.record.model import fidelity as w
    from measure.suites.divergence import compare_logits

    part, klds, eos = w.tier_fidelity_part(tier.name, reference.name, "config"), [], reference.special.eos
    for row in golden.rows:
        ids = reference.source_ids(row.input)
        greedy = list(reference.greedy_ids(ids).tokens)
        target = reference.target_ids(row.output)
        f = compare_logits(reference.teacher_forced(ids, greedy), tier.teacher_forced(ids, greedy), [*greedy, eos])
        w.add_divergence_row(part["greedy"], f.kld, f.same_top1, f.top5, f.dp)
        klds.append(f.kld)
        g = compare_logits(reference.teacher_forced(ids, target), tier.teacher_forced(ids, target), [*target, eos])
        w.add_golden_row(part, g.kld, g.same_top1, g.nll_tier)
    w.close_divergence(part["greedy"], np.concatenate(klds))
    return part


def test_a_reference_is_let_go_of_before_a_tier_it_judges_opens_and_the_figures_stay_bit_identical(
    tmp_path, monkeypatch
):
    """Checks and pass alike: no session of a reference is alive when a tier it judges opens one, nor the tier's
    when the reference's opens (the pass used to hold both: a 135M model's fp32 and int4 sessions at once); a pair's
    verifier is let go of before its drafter opens. The figures are those of both tiers scored side by side."""
    config = load_config(_config(tmp_path, pair=True))
    golden = load_golden(tmp_path / "golden.jsonl")
    events = _opened(monkeypatch)
    sessions = steps.Sessions(config, "framing")
    _, planned, _ = check_tiers(steps.Sessions(replace(config, pairs=()), "framing"), golden, fidelity=True)
    out: dict = {}
    run_fidelity_steps(planned, config.pairs, sessions, golden, out, save=lambda: None)
    assert {p.tier for p in planned} == {"lm-base-int8", "lm-base-int4", "lm-small-int4"} and out["pairs"]
    opened = {folder.name for folder, _ in events}
    assert {"lm-base-fp32", "lm-base-int8", "lm-small-fp32"} <= opened
    beside = [(folder.name, sorted(f.name for f in alive - {folder})) for folder, alive in events if alive - {folder}]
    assert beside == []

    session = SessionConfig(intra_op_threads=1, inter_op_threads=1)
    reference = load_tier(DEMO / "lm-base-fp32", session, name="lm-base-fp32")
    by_tier = {t["tier"]: t | {"source": "config"} for t in out["tiers"]}  # found by tier.json, as judge() is told
    for name in ("lm-base-int8", "lm-base-int4"):
        assert by_tier[name] == _interleaved(reference, load_tier(DEMO / name, session, name=name), golden)
    # measure fidelity's one pass (the same functions, its tiers given loaded) agrees with the run's
    tiers = [load_tier(DEMO / n, session, name=n) for n in ("lm-base-int8", "lm-base-int4")]
    once = judge(reference, tiers, golden, in_run=True)
    for part in once["tiers"]:
        assert by_tier[part["tier"]] == part
    assert once["references"][0] == next(r for r in out["references"] if r["name"] == "lm-base-fp32")


def test_the_pass_in_a_run_judges_each_tier_against_its_reference(tmp_path, monkeypatch):
    from measure.suites.fidelity import LOGITS_PREFIX

    scratch = tmp_path / "tmp"  # this run's temporary folders only: another run on the machine has its own
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    doc = load_record(run(load_config(_config(tmp_path)), ["framing"], tmp_path / "results", argv=["test"]))
    # lm-base-fp32 judges its two quantized tiers as one group; lm-small-fp32, outside the run, judges lm-small-int4
    judged = {t["tier"]: t["reference"] for t in doc["fidelity"]["tiers"]}
    assert judged == {"lm-base-int8": "lm-base-fp32", "lm-base-int4": "lm-base-fp32", "lm-small-int4": "lm-small-fp32"}
    assert [r["name"] for r in doc["fidelity"]["references"]] == ["lm-base-fp32", "lm-small-fp32"]
    assert tempfile.gettempdir() == str(scratch)
    assert not list(scratch.glob(f"{LOGITS_PREFIX}*"))  # the logits' folders are removed


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
