"""The onnxruntime-node leg on the real demo tiers: same logits as Python onnxruntime, skipped cleanly without Node."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests_support import (
    DATA_DIR,
    assert_same_framing,
    build,
    causal_rows,
    html,
    ort_node_installed,
    python_causal_facts,
    site_project,
    write_config,
)

from measure import bundled
from measure.engine.load import load_tier
from measure.engine.tier import Tier
from measure.record.io import SCHEMA_VERSION, load_record, write_atomic
from measure.suites.config import load_config
from measure.suites.golden import GoldenRows
from measure.suites.legs import contract, node_driver
from measure.suites.runner import run

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not on PATH (.ci/run installs it)")
needs_ort_node = pytest.mark.skipif(
    shutil.which("node") is None or not ort_node_installed(),
    reason="needs Node.js and onnxruntime-node: `npm ci --ignore-scripts --no-audit --no-fund` (the README's "
    "test command and .ci/run run it where npm is)",
)


def _rows(tier: Tier, golden: GoldenRows, n: int) -> tuple[list[node_driver.NodeRow], list[list[int]]]:
    rows, decoded = [], []
    for row in golden.rows[:n]:
        ids = tier.source_ids(row.input)
        tokens = list(tier.greedy(row.input).tokens)
        rows.append(
            node_driver.NodeRow(ids, [tier.special.decoder_start, *tokens], tier.default_max_new_tokens(len(ids)))
        )
        decoded.append(tokens)
    return rows, decoded


@needs_ort_node
@pytest.mark.parametrize("folder", [bundled.REFERENCE, bundled.SMALL_OPTIMUM], ids=["simple", "optimum"])
def test_fp32_single_step_logits_match_python_onnxruntime(folder, golden):
    tier = load_tier(folder)
    rows, decoded = _rows(tier, golden, 6)
    answer = node_driver.run_tier(tier, rows, [2, "whole"], first_row_logits=True)
    python, _ = tier.feed_prefix(rows[0].source_ids, rows[0].prefix, 1)
    node = np.asarray(answer["first_row_single_logits"], dtype=np.float64)
    assert node.shape == python.shape
    assert np.abs(node - python).max() <= 1e-5
    assert answer["output_ids"] == decoded  # node's own greedy decode, token by token
    assert answer["version"] == "1.30.0"  # the version package-lock.json pins
    assert [b["block"] for b in answer["blocks"]] == [2, "whole"]
    assert all(b["argmax_total"] == sum(len(r.prefix) for r in rows) for b in answer["blocks"])


@needs_ort_node
def test_int8_framing_facts_are_measured_not_assumed(base_int8, golden):
    rows, _ = _rows(base_int8, golden, 4)
    answer = node_driver.run_tier(base_int8, rows, [4])
    (block,) = answer["blocks"]
    assert len(block["layers"]) == base_int8.shape.layers
    assert block["present_max_abs_diff"] > 1e-4  # dynamic int8 requantizes per call: batched moves the values
    assert len(block["first_divergent_step"]) == 4


@needs_ort_node
def test_static_int8_qdq_tier_decodes_and_frames_under_node(golden):
    tier = load_tier(bundled.PLAIN_STATIC)
    rows, _ = _rows(tier, golden, 4)
    answer = node_driver.run_tier(tier, rows, [2, 4])
    # its own greedy decode of every row; whether it equals Python onnxruntime's (another onnxruntime version,
    # quantized kernels) is the leg's finding, recorded per machine, never assumed here
    assert len(answer["output_ids"]) == len(rows)
    for ids, row in zip(answer["output_ids"], rows, strict=True):
        assert len(ids) <= row.max_new_tokens and all(0 <= t < tier.shape.vocab_size for t in ids)
    for block in answer["blocks"]:
        assert block["argmax_total"] == sum(len(r.prefix) for r in rows)
        assert len(block["layers"]) == tier.shape.layers


@needs_ort_node
def test_a_graph_node_cannot_load_is_a_failure_with_onnxruntime_words(golden):
    tier = load_tier(bundled.SMALL_MERGED)  # saved with ONNX IR 14; onnxruntime-node 1.30 reads up to 13
    rows, _ = _rows(tier, golden, 1)
    with pytest.raises(
        contract.LegFailed, match=r"small-fp32-merged: onnxruntime-node failed: Load model .*IR version"
    ):
        node_driver.run_tier(tier, rows, [2])


@needs_node
def test_missing_onnxruntime_node_is_unavailable_with_the_fix(tmp_path, monkeypatch, base_fp32, golden):
    script = tmp_path / "framing.mjs"  # a copy far from the project's node_modules
    shutil.copy2(node_driver.SCRIPT, script)
    monkeypatch.setattr(node_driver, "SCRIPT", script)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEASURE_NODE_MODULES", raising=False)
    rows, _ = _rows(base_fp32, golden, 1)
    with pytest.raises(contract.LegUnavailable, match=r"onnxruntime-node is not installed .*npm ci --ignore-scripts"):
        node_driver.run_tier(base_fp32, rows, [2])


@needs_ort_node
def test_the_suite_records_both_legs_with_runtime_versions(both_suites):
    doc, _ = both_suites
    python, node, *_ = doc["framing"]["legs"]  # then the browser leg, where it runs
    assert (python["runtime"], python["version"]) == ("onnxruntime", doc["environment"]["onnxruntime"])
    assert (node["runtime"], node["version"], node["status"]) == ("onnxruntime-node", "1.30.0", "measured")
    assert node["host"].startswith("Node.js v")
    assert [t["tier"] for t in node["tiers"]] == [t["tier"] for t in python["tiers"]]
    for p, n in zip(python["tiers"], node["tiers"], strict=True):
        assert n["status"] == "measured" and n["precision"] == p["precision"]
        if p["precision"] == "fp32":
            assert n["output_ids"] == p["output_ids"]
            assert n["blocks"][0]["logits_max_abs_diff"] < 1e-4


def test_without_node_on_path_the_leg_is_skipped_and_the_site_builds(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    config = write_config(tmp_path, rows=4, repeats=2)
    path = run(load_config(config), ["framing"], tmp_path / "results", argv=["test"])
    doc = load_record(path)
    assert doc["complete"] is True
    node = doc["framing"]["legs"][1]
    assert node["status"] == "skipped"
    assert node["tiers"] == [] and node["version"] is None
    assert "was not found on PATH" in node["reason"]
    monkeypatch.setenv("PATH", os.defpath)
    project = site_project(tmp_path / "project")
    done = build(project, tmp_path / "results")
    assert done.returncode == 0, done.stderr[-3000:]
    page = html(project, "results/framing")
    assert "Runtime × precision" in page
    assert "was not found on PATH" in page


def test_node_leg_off_in_the_config_records_one_leg(tmp_path):
    config = write_config(tmp_path, rows=2, repeats=2)
    config.write_text(config.read_text(encoding="utf-8") + "node_leg = false\nweb_leg = false\n", encoding="utf-8")
    doc = load_record(run(load_config(config), ["framing"], tmp_path / "results", argv=["test"]))
    assert [leg["runtime"] for leg in doc["framing"]["legs"]] == ["onnxruntime"]


def test_script_ships_inside_the_package():
    assert node_driver.SCRIPT.is_file()
    assert node_driver.SCRIPT.parent.parent == Path(node_driver.__file__).parent


def test_a_leg_reason_is_escaped_on_the_page(tmp_path):
    doc = load_record(DATA_DIR / f"record-v{SCHEMA_VERSION}.json")
    hostile = "<img src=x onerror=alert(1)> | `x`"
    node = doc["framing"]["legs"][1]
    node["tiers"][0] = {"tier": node["tiers"][0]["tier"], "status": "failed", "reason": hostile}
    write_atomic(tmp_path / "results" / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    project = site_project(tmp_path / "project")
    done = build(project, tmp_path / "results")
    assert done.returncode == 0, done.stderr[-3000:]
    page = html(project, "results/framing")
    assert "<img src=x" not in page
    assert "failed: &#60;img src=x onerror=alert&#40;1&#41;&#62; &#124; &#96;x&#96;" in page


# --- decoder-only tiers (issue 44): the prompt prefilled in one call, then one token per call ---


@needs_ort_node
@pytest.mark.parametrize("name", ["lm-base-int8", "genai-base-int4", "lm-small-fp32-split"])
def test_a_decoder_only_tier_under_node_gives_python_onnxruntimes_facts(name, golden):
    tier = load_tier(bundled.DEMO_DIR / name)
    rows, decoded = causal_rows(tier, golden, 6)
    answer = node_driver.run_tier(tier, rows, [2, "whole"], first_row_logits=True)
    python, _ = tier.feed_prefix(rows[0].source_ids, rows[0].prefix[1:], 1)  # prompt row, then one token a call
    node = np.asarray(answer["first_row_single_logits"], dtype=np.float64)
    assert node.shape == python.shape == (len(rows[0].prefix), tier.shape.vocab_size)
    assert np.abs(node - python).max() <= 1e-4
    assert answer["output_ids"] == decoded  # its own greedy decode, row by row
    assert_same_framing(answer, python_causal_facts(tier, rows, [2, "whole"]), 1e-4)
    assert answer["prefill"][0]["argmax_total"] == sum(len(r.source_ids) for r in rows)


@needs_ort_node
def test_a_divergence_on_a_decoder_only_tier_names_row_step_tokens_and_both_margins(golden):
    from measure.suites.legs.process import divergences as _divergence

    tier = load_tier(bundled.DEMO_DIR / "lm-base-fp32")
    rows, decoded = causal_rows(tier, golden, 2)
    # Python's decode of row 1 with one token changed: node's argmax leaves it there, as a flip would
    forged = [*decoded[1][:2], (decoded[1][2] + 1) % tier.shape.vocab_size, *decoded[1][3:]]
    rows[1] = node_driver.NodeRow(rows[1].source_ids, node_driver.prefix(tier, rows[1].source_ids, forged), 64, 7, "x")
    answer = node_driver.run_tier(tier, rows, [2])
    (found,) = answer["divergence"]
    assert (found["row"], found["step"], found["token"], found["expected"]) == (1, 2, decoded[1][2], forged[2])
    assert found["margin"] > 0
    (entry,) = _divergence(tier, rows, golden, answer["divergence"])
    assert entry["line"] == golden.rows[1].line
    assert entry["python_margin"] == pytest.approx(-found["margin"], abs=1e-4)  # same logits, other sign
