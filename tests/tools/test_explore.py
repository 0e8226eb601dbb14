"""measure explore: candidates screened by the fidelity pass, the survivors timed in a run.

The screening's outcome is built into the tiers (a copy of the reference, one with its LM head scrambled), never
hoped for from a quantizer on this CPU; the end-to-end run asserts the record's structure, not which recipe wins.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from time import perf_counter

import numpy as np
import onnx
from onnx import numpy_helper

from measure import bundled
from measure.cli import main
from measure.policy import Policy
from measure.record.io import load_record
from measure.record.model.read import from_document
from measure.suites.golden import load_golden
from measure.tools.candidates import Candidate
from measure.tools.explore import explore_policy, screen_candidates
from measure.tools.recipes import NAMED, parse_recipe

LM = bundled.CONFIG.parent / "lm-small-fp32"
SEQ = bundled.SMALL_FP32


def _head(folder: Path, fill: float | None) -> None:
    """The LM head's weights replaced by noise (a tier no policy can call faithful, whatever the CPU), or by
    ``fill`` (NaN: logits the fidelity pass refuses)."""
    model = onnx.load(str(folder / "model.onnx"))
    head = next(n for n in model.graph.node if n.name == "/lm_head/MatMul")
    weights = next(i for i in model.graph.initializer if i.name == head.input[1])
    shape = numpy_helper.to_array(weights).shape
    values = np.random.default_rng(0).normal(0, 3, shape) if fill is None else np.full(shape, fill)
    weights.CopyFrom(numpy_helper.from_array(values.astype(np.float32), weights.name))
    onnx.save(model, str(folder / "model.onnx"))


def _int8_head(folder: Path) -> None:
    """A dynamic-int8 tier's quantized LM head weights replaced by noise: screening fails it on any CPU."""
    model = onnx.load(str(folder / "model.onnx"))
    head = next(n for n in model.graph.node if n.name == "/lm_head/MatMul_quant")
    weights = next(i for i in model.graph.initializer if i.name == head.input[1])
    shape = numpy_helper.to_array(weights).shape
    values = np.random.default_rng(0).integers(-127, 128, shape).astype(np.int8)
    weights.CopyFrom(numpy_helper.from_array(values, weights.name))
    onnx.save(model, str(folder / "model.onnx"))


def test_the_screening_drops_what_fails_and_keeps_what_it_cannot_fail(tmp_path):
    """A copy of the reference (KLD 0) is kept; one with a scrambled head is dropped at the fidelity stage, its
    reason naming the rows and the figure past its bound, its figures kept; one whose logits are NaN is dropped
    with the pass's own line, and the pass goes on to the tiers after it."""
    same, nan, bad = tmp_path / "lm-small-same", tmp_path / "lm-small-nan", tmp_path / "lm-small-bad"
    for folder in (same, nan, bad):
        shutil.copytree(LM, folder)
    _head(bad, None)
    _head(nan, float("nan"))
    golden = load_golden(bundled.GOLDEN)
    rows = type(golden)(golden.path, golden.sha256, golden.rows[:6])
    candidates = [
        Candidate("lm-small-fp32", NAMED["int8"], "lm-small-same", same),
        Candidate("lm-small-fp32", NAMED["int4-asym"], "lm-small-nan", nan),
        Candidate("lm-small-fp32", NAMED["int4"], "lm-small-bad", bad),
    ]
    from measure.engine.options import SessionConfig

    said: list[str] = []
    policy = explore_policy(Policy(), "plain")
    screen_candidates(candidates, {"lm-small-fp32": LM}, rows, SessionConfig(), policy, "plain", said.append)
    kept, refused, dropped = candidates
    assert refused.dropped == "fidelity" and refused.screen is None
    assert refused.reason is not None and "lm-small-nan" in refused.reason and "NaN" in refused.reason
    assert kept.dropped is None and kept.screen is not None and kept.screen["outcome"] == "success"
    assert kept.screen["kld_mean"]["value"] == 0.0
    assert dropped.dropped == "fidelity" and dropped.screen is not None and dropped.screen["outcome"] == "failure"
    assert dropped.reason is not None and dropped.reason.startswith("on the first 6 golden rows, ")
    assert "mean KLD" in dropped.reason and "> 0.01" in dropped.reason and "(role plain)" in dropped.reason
    assert any("lm-small-bad: dropped" in line for line in said)


def test_a_search_run_again_judges_what_it_screened_before_and_screens_what_changed(tmp_path, monkeypatch):
    """The screening's figures are kept beside the tiers (``screening.json``): a search run again (a budget
    refused after the screening, say) judges them again without loading a tier or the reference; a tier made
    again is screened again; a cache that cannot be read is said in a line and the pass measures all the same."""
    from measure.engine.options import SessionConfig
    from measure.tools import explore as explore_module
    from measure.tools.screen_cache import NAME, ScreenCache

    same, bad = tmp_path / "lm-small-same", tmp_path / "lm-small-bad"
    for folder in (same, bad):
        shutil.copytree(LM, folder)
    _head(bad, None)
    golden = load_golden(bundled.GOLDEN)
    rows = type(golden)(golden.path, golden.sha256, golden.rows[:6])
    policy = explore_policy(Policy(), "plain")

    def screen(cache: ScreenCache) -> tuple[list[Candidate], list[str], dict[str, float]]:
        found = [
            Candidate("lm-small-fp32", NAMED["int8"], "lm-small-same", same),
            Candidate("lm-small-fp32", NAMED["int4"], "lm-small-bad", bad),
        ]
        said: list[str] = []
        row_s: dict[str, float] = {}
        screen_candidates(
            found, {"lm-small-fp32": LM}, rows, SessionConfig(), policy, "plain", said.append, row_s, cache
        )
        return found, said, row_s

    first, _, first_s = screen(ScreenCache.open(tmp_path))
    assert (tmp_path / NAME).is_file()
    loads = explore_module.load_tier

    def nothing_loaded(*args, **kwargs):
        raise AssertionError("a tier screened before was loaded again")

    monkeypatch.setattr(explore_module, "load_tier", nothing_loaded)
    again, said, again_s = screen(ScreenCache.open(tmp_path))
    assert [c.screen for c in again] == [c.screen for c in first] and again_s == first_s
    assert [c.dropped for c in again] == [None, "fidelity"] and again[1].reason == first[1].reason
    assert sum("screened before" in line for line in said) == 2
    monkeypatch.setattr(explore_module, "load_tier", loads)
    onnx.save(onnx.load(str(same / "model.onnx")), str(same / "model.onnx"))  # the tier made again
    _, said, _ = screen(ScreenCache.open(tmp_path))
    assert not any("lm-small-same: screened before" in line for line in said)
    assert any("lm-small-bad: screened before" in line for line in said)
    (tmp_path / NAME).write_text("{not json", encoding="utf-8")
    redone, said, _ = screen(ScreenCache.open(tmp_path))
    assert [c.screen for c in redone] == [c.screen for c in first]
    assert any(NAME in line and "screened again" in line for line in said)


def test_the_search_policy_holds_every_tier_to_the_roles_bounds():
    policy = explore_policy(Policy(), "plain")
    assert {policy.bound("kld_mean_max", r) for r in ("plain", "lite", "verifier", "default")} == {0.01}
    assert explore_policy(Policy(), "lite").bound("same_top1_min", "plain") == 0.93


def test_explore_on_a_decoder_only_and_a_seq2seq_model(tmp_path, capsys):
    """Two recipes on lm-small-fp32 and small-fp32 in one record, under three minutes: ``head-kept`` keeps
    ``/lm_head/MatMul``, which the seq2seq graphs do not have, so it is dropped there at the quantize stage with
    the quantizer's reason. The baseline int8 of lm-small-fp32 is made beforehand with its LM head scrambled (the
    search uses a tier it made before as it is): its screening fails it, and it is timed all the same, as the
    run's plain tier. The record validates; every candidate is in it, and the measured ones are its tiers, judged
    against their references; ``measure show`` reads each recipe against the baseline; the site renders it."""
    from measure.tools.quantize import quantize_recipe

    grid = tmp_path / "grid.toml"
    grid.write_text(
        '[[recipes]]\nname = "head-kept"\nbase = "int8-nbits"\n[recipes.keep]\nnodes = ["/lm_head/MatMul"]\n'
    )
    quantize_recipe(LM, tmp_path / "ex" / "lm-small-int8", NAMED["int8"])  # the baseline, added to the grid
    _int8_head(tmp_path / "ex" / "lm-small-int8")
    started = perf_counter()
    args = [str(LM), str(SEQ), "--grid", str(grid), "--out", str(tmp_path / "ex"), "--results", str(tmp_path / "res")]
    assert main(["explore", *args, "--budget", "100s", "--screen-rows", "6"]) == 0
    elapsed = perf_counter() - started
    assert elapsed < 180, elapsed
    (path,) = (tmp_path / "res").glob("*/*.json")
    doc = load_record(path)  # validated
    record = from_document(doc, str(path))
    ex = record.explore
    assert ex is not None and ex.grid == str(grid) and ex.screen_rows == 6 and ex.role == "plain"
    pairs = {(c.reference, c.recipe_name) for c in ex.candidates}
    assert pairs == {(r, n) for r in ("lm-small-fp32", "small-fp32") for n in ("int8", "head-kept")}
    (dropped,) = [c for c in ex.candidates if c.dropped == "quantize"]
    assert (dropped.reference, dropped.recipe_name, dropped.tier) == ("small-fp32", "head-kept", "small-head-kept")
    assert dropped.reason is not None and "keep.nodes: '/lm_head/MatMul' names no weight MatMul" in dropped.reason
    (base,) = [c for c in ex.candidates if c.baseline and c.reference == "lm-small-fp32"]
    assert base.tier == "lm-small-int8" and base.dropped == "fidelity" and base.screen is not None
    assert base.reason is not None and "mean KLD" in base.reason and base.measured
    assert record.tiers["lm-small-int8"].role == "plain" and ex.baseline_of("lm-small-fp32") == base
    assert [c.recipe_name for c in ex.candidates if c.baseline] == ["int8", "int8"]
    for c in ex.candidates:
        assert c.measured == (c.tier in record.tiers)
        assert c.dropped is None or c.reason
        assert c.dropped == "quantize" or c.screen is not None
        assert parse_recipe(c.recipe, "record") is not None
    measured = {c.tier for c in ex.measured}
    assert set(record.tiers) == measured | {"lm-small-fp32", "small-fp32"}
    assert sum(t.role == "plain" for t in record.tiers.values()) == 1
    assert record.fidelity is not None and {t.tier for t in record.fidelity.tiers} == measured
    assert {t.tier: t.reference for t in record.fidelity.tiers} == {c.tier: c.reference for c in ex.measured}
    assert record.wallclock is not None and doc["complete"]
    kept = json.loads((tmp_path / "ex" / "lm-small-head-kept" / "tier.json").read_text())["quantization"]["kept"]
    assert kept == {"model.onnx": ["/lm_head/MatMul"]}
    assert (tmp_path / "ex" / "explore.toml").is_file()
    md = tmp_path / "md"
    assert main(["render", "--results", str(tmp_path / "res"), "--out", str(md)]) == 0
    (page,) = (md / "runs").glob(f"*{record.run_id}.md")
    for text in (page.read_text(), (md / "wallclock.md").read_text()):
        assert all(t in text for t in measured)
    capsys.readouterr()
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "lm-small-int8 (int8 of lm-small-fp32): dropped at fidelity: " in shown
    assert "; timed as the baseline" in shown
    for c in ex.measured:
        if c.reference == "lm-small-fp32" and not c.baseline:  # whichever survived on this CPU
            assert f"{c.tier} ({c.recipe_name} of lm-small-fp32): measured; " in shown
            assert "x the time of baseline int8 (lm-small-int8)" in shown


def test_the_suite_config_the_search_writes_loads_with_one_plain_tier(tmp_path):
    """With survivors the first is plain and each is judged against its reference; with none the first reference
    anchors the ratios, so the references alone still make a valid run."""
    from measure.engine.options import SessionConfig
    from measure.suites.config import load_config
    from measure.tools.explore import suite_config_text

    refs = {"lm-small-fp32": LM, "small-fp32": SEQ}
    policy = explore_policy(Policy(), "plain")
    kept = [Candidate("small-fp32", NAMED["int8"], "small-int8", bundled.DEMO_DIR / "small-int8")]
    for survivors, plain in ((kept, "small-int8"), ([], "lm-small-fp32")):
        path = tmp_path / f"{plain}.toml"
        path.write_text(suite_config_text(refs, survivors, bundled.GOLDEN, SessionConfig(), policy, plain))
        config = load_config(path)
        assert config.plain.name == plain
        assert {t.name: t.reference for t in config.tiers if t.reference} == {c.tier: c.reference for c in survivors}
        assert not config.framing.node_leg and not config.wallclock.profile
        assert config.policy.bound("kld_mean_max", "verifier") == 0.01
