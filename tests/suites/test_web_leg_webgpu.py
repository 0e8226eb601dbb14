"""The onnxruntime-web leg on WebGPU (issue 44): the page again with executionProviders ["webgpu"].

Headless Chromium with WebGPU enabled offers the machine's GPU adapter, or SwiftShader's (software Vulkan) where
there is none: either way its numerics are onnxruntime-web's WebGPU kernels, held here against Python
onnxruntime's facts for the same ids. An absent adapter is built (Chromium without its software rasterizer), not
hoped for; so is a tier the runtime cannot load (a graph saved under an ONNX IR version it does not read).
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import numpy as np
import onnx
import pytest
from tests_support import CHROMIUM, assert_same_framing, causal_rows, python_causal_facts, web_ready

from measure import bundled
from measure.engine.load import load_tier
from measure.engine.options import SessionConfig
from measure.record.io import load_record, validate
from measure.record.model import SOFTWARE_ADAPTER, from_document
from measure.suites.config import load_config
from measure.suites.legs import contract, web_driver
from measure.suites.runner import run

LM = bundled.DEMO_DIR / "lm-small-int4"


needs_web = pytest.mark.skipif(not web_ready(), reason="needs Chromium, Node.js and `npm ci --ignore-scripts`")


@pytest.fixture(scope="module")
def webgpu():
    if not web_ready():
        pytest.skip("no Chromium, Node.js or npm packages here")
    with web_driver.WebRuntime(CHROMIUM, threads=1, provider="webgpu") as runtime:
        yield runtime


def _answer_or_skip(webgpu, tier, rows, blocks, **kw):
    try:
        return webgpu.run_tier(tier, rows, blocks, **kw)
    except contract.LegUnavailable as exc:  # this machine's Chromium offers no adapter: nothing to compare
        pytest.skip(str(exc))


@needs_web
def test_a_decoder_only_tier_on_webgpu_decodes_row_by_row_against_python(webgpu, golden):
    tier = load_tier(LM, SessionConfig(intra_op_threads=1))
    rows, decoded = causal_rows(tier, golden, 2)
    answer = _answer_or_skip(webgpu, tier, rows, [2], first_row_logits=True, timing_repeats=2)
    execution = answer["execution"]
    assert execution["provider"] == "webgpu"
    adapter = execution["adapter"]
    assert set(adapter) >= {"vendor", "architecture", "fallback", "software"}
    assert ("timing" in answer) is not adapter["software"]  # a software adapter's speed is emulation: untimed
    python, _ = tier.feed_prefix(rows[0].source_ids, rows[0].prefix[1:], 1)
    page = np.asarray(answer["first_row_single_logits"], dtype=np.float64)
    assert page.shape == python.shape and np.abs(page - python).max() <= 0.2  # its own shaders: close, not equal
    parted = {d["row"] for d in answer["divergence"]}
    for i, (ids, ours) in enumerate(zip(answer["output_ids"], decoded, strict=True)):
        assert (ids == ours) == (i not in parted)  # every row that leaves Python's is named, only those
    assert_same_framing(answer, python_causal_facts(tier, rows, [2]), 0.2)


@needs_web
def test_a_tier_file_the_webgpu_page_cannot_fetch_fails_and_the_next_tier_runs(webgpu, tier_copy, golden):
    broken = load_tier(tier_copy(LM))
    rows, _ = causal_rows(broken, golden, 1)
    (broken.path / "model.onnx").unlink()  # loaded in Python; gone when the page asks for it
    try:
        with pytest.raises(contract.LegFailed, match=r"onnxruntime-web failed: model.onnx: the page could not fetch"):
            webgpu.run_tier(broken, rows, [2])
    except contract.LegUnavailable as exc:
        pytest.skip(str(exc))
    tier = load_tier(LM)
    rows, _ = causal_rows(tier, golden, 1)
    assert len(_answer_or_skip(webgpu, tier, rows, [2])["output_ids"]) == 1  # a fresh page after the failure


def _ir14_copy(folder: Path) -> Path:
    """The demo tier saved under ONNX IR 14: Python onnxruntime reads it, onnxruntime-web 1.30 does not."""
    shutil.copytree(LM, folder)
    model = onnx.load(str(folder / "model.onnx"))
    model.ir_version = 14
    onnx.save(model, str(folder / "model.onnx"))
    return folder


def _config(tmp_path: Path, tiers: list[tuple[str, Path, str]], framing: str) -> Path:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(bundled.GOLDEN.read_text(encoding="utf-8").splitlines(True)[:1]), encoding="utf-8")
    text = ['golden = "golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for name, path, role in tiers:
        text += ["[[tiers]]", f'name = "{name}"', f"path = {json.dumps(str(path))}", f'role = "{role}"']
    text += ["[framing]", "k = [2]", "node_leg = false", "genai_leg = false", "fidelity = false", framing]
    path = tmp_path / "suite.toml"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


@needs_web
def test_a_tier_the_web_legs_cannot_load_fails_with_its_words_the_next_runs_and_the_record_is_valid(tmp_path):
    broken = _ir14_copy(tmp_path / "lm-ir14")
    tiers = [("lm-ir14", broken, "plain"), ("lm-small-int4", LM, "drafter")]
    config = _config(tmp_path, tiers, f"web_leg = true\nwebgpu_leg = true\nbrowser = {json.dumps(CHROMIUM)}")
    path = run(load_config(config), ["framing"], tmp_path / "results", argv=["test"])
    doc = load_record(path)
    validate(doc, str(path))
    python, wasm, gpu = doc["framing"]["legs"]
    assert (wasm.get("provider"), gpu["provider"]) == (None, "webgpu")
    assert doc["config"]["framing"]["webgpu_leg"] is True
    legs = [wasm] if gpu["status"] == "skipped" else [wasm, gpu]  # no adapter here: the leg says so
    for leg in legs:
        first, second = leg["tiers"]
        assert (first["tier"], first["status"]) == ("lm-ir14", "failed")
        assert "Unsupported model IR version: 14" in first["reason"]
        assert (second["tier"], second["status"]) == ("lm-small-int4", "measured")
        assert second["output_ids"] == python["tiers"][1]["output_ids"] or second["divergence"]
    leg = from_document(doc, "test").legs[2]
    assert leg.name.endswith("(browser, webgpu)")
    if gpu["status"] == "measured" and leg.software_adapter:
        assert leg.execution.adapter.note.endswith(f"({SOFTWARE_ADAPTER})")
        assert "timing" not in gpu["tiers"][1]


@needs_web
def test_without_an_adapter_the_webgpu_leg_is_skipped_with_the_reason(tmp_path):
    # Chromium without its software rasterizer offers no SwiftShader adapter: on a machine with no GPU, none
    wrapper = tmp_path / "chromium-no-adapter"
    wrapper.write_text(f'#!/bin/sh\nexec {json.dumps(CHROMIUM)} "$@" --disable-software-rasterizer\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    config = _config(
        tmp_path,
        [("lm-small-int4", LM, "plain")],
        f"web_leg = false\nwebgpu_leg = true\nbrowser = {json.dumps(str(wrapper))}",
    )
    path = run(load_config(config), ["framing"], tmp_path / "results", argv=["test"])
    doc = load_record(path)
    validate(doc, str(path))
    assert doc["complete"] is True
    _, gpu = doc["framing"]["legs"]
    if gpu["status"] == "measured":
        pytest.skip(f"this machine has a hardware adapter: {gpu['execution']['adapter']}")
    assert (gpu["runtime"], gpu["provider"], gpu["status"], gpu["tiers"]) == (
        "onnxruntime-web",
        "webgpu",
        "skipped",
        [],
    )
    assert gpu["reason"] == "no WebGPU adapter: navigator.gpu.requestAdapter() returned no adapter"


def test_the_webgpu_leg_is_off_unless_the_config_asks(tmp_path):
    config = _config(tmp_path, [("lm-small-int4", LM, "plain")], "web_leg = false")
    assert load_config(config).framing.webgpu_leg is False
    doc = load_record(run(load_config(config), ["framing"], tmp_path / "results", argv=["test"]))
    assert [leg["runtime"] for leg in doc["framing"]["legs"]] == ["onnxruntime"]
