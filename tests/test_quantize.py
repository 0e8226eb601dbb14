"""Quantization as a measure function: real onnxruntime quantizers, real graphs, fingerprinted output."""

from __future__ import annotations

import json

import pytest

from measure import bundled
from measure.artifacts import load_tier
from measure.decode import greedy
from measure.errors import MeasureError
from measure.quantize import quantize_tier


def test_int8_quantization_writes_a_working_dynamic_int8_tier(tmp_path, golden):
    out = quantize_tier(bundled.SMALL_FP32, tmp_path / "q8", "int8")
    tier = load_tier(out)
    fp = tier.fingerprint()
    assert fp.precision == "int8-dynamic"
    assert fp.total_bytes < load_tier(bundled.SMALL_FP32).fingerprint().total_bytes / 2
    meta = json.loads((out / "tier.json").read_text())
    assert meta["quantization"]["method"] == "onnxruntime.quantize_dynamic"
    assert meta["quantization"]["from"] == "small-fp32"
    hits = sum(greedy(tier, r.input).text == r.output for r in golden.rows)
    assert hits >= len(golden) * 0.7


def test_int4_quantization_records_bits_and_block(tmp_path):
    out = quantize_tier(bundled.SMALL_FP32, tmp_path / "q4", "int4", block_size=16)
    fp = load_tier(out).fingerprint()
    assert fp.precision == "int4"
    assert {g.nbits["block_size"] for g in fp.graphs} == {16}
    assert json.loads((out / "tier.json").read_text())["quantization"]["block_size"] == 16


def test_optimum_layout_quantizes_every_graph(tmp_path):
    out = quantize_tier(bundled.SMALL_OPTIMUM, tmp_path / "oq8", "int8")
    fp = load_tier(out).fingerprint()
    assert [g.precision for g in fp.graphs] == ["int8-dynamic"] * 3


def test_refuses_a_non_empty_output_folder(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    with pytest.raises(MeasureError, match="output folder is not empty"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "busy", "int8")
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"


def test_refuses_unknown_target_and_bad_block(tmp_path):
    with pytest.raises(MeasureError, match="expected one of int8, int4"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int2")
    with pytest.raises(MeasureError, match="power of two"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int4", block_size=24)
