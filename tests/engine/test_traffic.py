"""Bytes per decode step, counted from constructed graphs of known initializer sizes and from the demo tiers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from measure import bundled
from measure.engine.load import load_tier
from measure.engine.traffic import StepTraffic, graph_weight_bytes, kv_bytes_per_position, step_traffic, tensor_bytes
from measure.errors import MeasureError

V, H, F = 64, 16, 48
"""Vocabulary, hidden size and feed-forward size of the constructed graphs."""


def _init(name: str, shape: tuple[int, ...], dtype=np.float32) -> TensorProto:
    return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)


def _model(nodes, inits, inputs=None, outputs=("logits",)) -> onnx.ModelProto:
    inputs = inputs or [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, 1])]
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    graph = helper.make_graph(nodes, "g", inputs, outs, initializer=inits)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )


def _decoder(head: str = "head", tied: bool = False) -> onnx.ModelProto:
    """Gather embedding -> fp32 MatMul -> int8 MatMulInteger (zero point) -> int4 MatMulNBits (scales, zero
    points) -> an fp32 weight through DequantizeLinear (int8 + scale) -> LM head (its own, or the embedding
    transposed when ``tied``); norms and a bias Add that are not counted."""
    inits = [
        _init("embed", (V, H)),
        _init("w_fp32", (H, F)),
        _init("w_int8", (F, H), np.int8),
        _init("w_int8_zp", (), np.int8),
        _init("w_nbits", (H, 1, 16), np.uint8),  # N=16, K=16 at 4 bits in blocks of 32: 1 block of 16 bytes
        _init("w_nbits_scales", (H, 1)),
        _init("w_nbits_zp", (H,), np.uint8),
        _init("w_q", (H, H), np.int8),
        _init("w_q_scale", ()),
        _init("gamma", (H,)),
        _init("bias", (H,)),
    ]
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x0"]),
        helper.make_node("Mul", ["x0", "gamma"], ["x1"]),
        helper.make_node("MatMul", ["x1", "w_fp32"], ["x2"]),
        helper.make_node("DynamicQuantizeLinear", ["x2"], ["x2q", "x2s", "x2z"]),
        helper.make_node("MatMulInteger", ["x2q", "w_int8", "x2z", "w_int8_zp"], ["x3i"]),
        helper.make_node("Cast", ["x3i"], ["x3"], to=TensorProto.FLOAT),
        helper.make_node(
            "MatMulNBits",
            ["x3", "w_nbits", "w_nbits_scales", "w_nbits_zp"],
            ["x4"],
            domain="com.microsoft",
            K=H,
            N=H,
            bits=4,
            block_size=32,
        ),
        helper.make_node("DequantizeLinear", ["w_q", "w_q_scale"], ["w_q_f"]),
        helper.make_node("MatMul", ["x4", "w_q_f"], ["x5"]),
        helper.make_node("Add", ["x5", "bias"], ["x6"]),
    ]
    if tied:
        nodes += [
            helper.make_node("Transpose", ["embed"], ["embed_t"], perm=[1, 0]),
            helper.make_node("MatMul", ["x6", "embed_t"], ["logits"]),
        ]
    else:
        inits.append(_init(head, (H, V)))
        nodes.append(helper.make_node("MatMul", ["x6", head], ["logits"]))
    return _model(nodes, inits)


FP32, INT8, ZP, NBITS, SCALES, NBZP, WQ, WQS, HEAD = (
    H * F * 4,
    F * H,
    1,
    H * 16,
    H * 4,
    H,
    H * H,
    4,
    H * V * 4,
)
ROW = H * 4


def test_a_constructed_graph_gives_exactly_its_bytes_per_token():
    weights, rows, count = graph_weight_bytes(_decoder())
    assert weights == FP32 + INT8 + ZP + NBITS + SCALES + NBZP + WQ + WQS + HEAD
    assert rows == ROW  # one row of the embedding, not the table
    assert count == 9  # the norm gain and the bias Add are not a matrix's


def test_an_embedding_tied_to_the_head_counts_once_whole_as_the_head():
    weights, rows, _ = graph_weight_bytes(_decoder(tied=True))
    assert weights == FP32 + INT8 + ZP + NBITS + SCALES + NBZP + WQ + WQS + V * H * 4
    assert rows == 0


def test_a_weight_in_a_constant_node_counts_like_an_initializer():
    value = numpy_helper.from_array(np.zeros((H, H), dtype=np.float16), "w")
    nodes = [
        helper.make_node("Constant", [], ["w"], value=value),
        helper.make_node("MatMul", ["x", "w"], ["logits"]),
    ]
    x = [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, H])]
    assert graph_weight_bytes(_model(nodes, [], inputs=x))[0] == H * H * 2


def test_a_merged_decoder_counts_its_with_past_branch_only():
    """optimum's If on use_cache_branch: then_branch is every step after the first; its else_branch's own copy
    of a weight is the first call's and is not read per token."""

    def branch(weight: str, n: int) -> onnx.GraphProto:
        out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        return helper.make_graph(
            [helper.make_node("MatMul", ["x", weight], ["y"])], "b", [], [out], [_init(weight, (H, n))]
        )

    node = helper.make_node(
        "If", ["use_cache_branch"], ["logits"], then_branch=branch("with_past", V), else_branch=branch("no_past", 2 * V)
    )
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, H]),
        helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1]),
    ]
    assert graph_weight_bytes(_model([node], [], inputs=inputs))[0] == H * V * 4


def test_four_bit_tensors_count_two_to_a_byte():
    assert tensor_bytes((3, 5), TensorProto.UINT4) == 8
    assert tensor_bytes((4, 4), TensorProto.INT4) == 8
    assert tensor_bytes((2, 3), TensorProto.FLOAT16) == 12


def test_step_traffic_adds_the_cache_per_position_from_the_shape(tmp_path: Path):
    path = tmp_path / "model.onnx"
    onnx.save(_decoder(), path)
    shape = SimpleNamespace(layers=3, heads=2, head_dim=8, kv_dtype=np.float16)
    found = step_traffic(path, shape, "causal")
    per_position = 3 * 2 * 8 * 2 * 2
    assert found == StepTraffic(
        "model.onnx", FP32 + INT8 + ZP + NBITS + SCALES + NBZP + WQ + WQS + HEAD, ROW, per_position, 0, 9
    )
    assert found.bytes_at(10) == found.weights_bytes + ROW + 10 * per_position
    assert kv_bytes_per_position(3, 2, 8, 2) == per_position


def test_a_file_that_is_not_a_graph_is_refused_naming_it(tmp_path: Path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"\xff\xff\xff")
    with pytest.raises(MeasureError, match=r"model\.onnx: not a readable ONNX model"):
        step_traffic(bad, SimpleNamespace(layers=1, heads=1, head_dim=1, kv_dtype=np.float32), "causal")


def test_the_demo_layouts_of_one_model_read_the_same_bytes():
    """The same weights as one graph, split and merged: the step reads the same; the precisions order."""
    found = {
        name: load_tier(bundled.DEMO_DIR / name).traffic()
        for name in ("lm-small-fp32", "lm-small-fp32-split", "lm-small-fp32-merged")
    }
    assert len({(t.weights_bytes, t.embedding_bytes, t.kv_bytes_per_position) for t in found.values()}) == 1
    seq2seq = {
        name: load_tier(bundled.DEMO_DIR / name).traffic() for name in ("small-fp32-merged", "small-fp32-optimum")
    }
    assert len({(t.weights_bytes, t.cross_bytes_per_source_token) for t in seq2seq.values()}) == 1
    base = {p: load_tier(bundled.DEMO_DIR / f"lm-base-{p}").traffic().weights_bytes for p in ("fp32", "int8", "int4")}
    assert base["int4"] < base["int8"] < base["fp32"]


def test_a_demo_tiers_cache_per_position_is_its_shape():
    tier = load_tier(bundled.DEMO_DIR / "lm-base-fp32")
    s = tier.shape
    assert tier.traffic().kv_bytes_per_position == s.layers * s.heads * s.head_dim * 2 * np.dtype(s.kv_dtype).itemsize
    assert tier.traffic().cross_bytes_per_source_token == 0
    assert load_tier(bundled.REFERENCE).traffic().cross_bytes_per_source_token > 0
