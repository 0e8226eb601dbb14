"""Tier fingerprints: precision read from the graphs, sizes and hashes of every file."""

from __future__ import annotations

import hashlib

from measure import bundled
from measure.engine.load import load_tier


def test_precision_is_read_from_each_graph():
    expected = {
        bundled.REFERENCE: "fp32",
        bundled.PLAIN: "int8-dynamic",
        bundled.LITE: "int4",
        bundled.SMALL_INT8: "int8-dynamic",
        bundled.SMALL_MERGED: "fp32",
    }
    for folder, precision in expected.items():
        fp = load_tier(folder).fingerprint()
        assert fp.precision == precision, folder.name
        assert all(g.opset == 17 for g in fp.graphs)


def test_int4_parameters_come_from_the_graph():
    fp = load_tier(bundled.LITE).fingerprint()
    for graph in fp.graphs:
        assert graph.nbits == {"bits": 4, "block_size": 32, "accuracy_level": 0}
        assert graph.ops["MatMulNBits"] > 0


def test_int8_graph_has_no_float_weight_matmuls_left():
    fp = load_tier(bundled.PLAIN).fingerprint()
    decoder = next(g for g in fp.graphs if g.file == "decoder-kv.onnx")
    assert decoder.ops.get("MatMulInteger", 0) > 0


def test_files_are_hashed_and_sized():
    tier = load_tier(bundled.REFERENCE)
    fp = tier.fingerprint()
    names = {f.name for f in fp.files}
    assert {"encoder.onnx", "decoder-kv.onnx", "tokenizer.json", "tier.json"} <= names
    for f in fp.files:
        data = (bundled.REFERENCE / f.name).read_bytes()
        assert f.bytes == len(data)
        assert f.sha256 == hashlib.sha256(data).hexdigest()
    assert fp.total_bytes == sum(f.bytes for f in fp.files)
    assert fp.to_dict()["layers"] == 3
