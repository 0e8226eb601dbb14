"""A tier's matrix kernels timed alone: the shapes found in constructed graphs, and a graph of copies that runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from measure import bundled
from measure.engine.kernel import copies_for, kernel_model, kernel_shapes, time_kernel

K, N = 64, 32


def _graph(tmp_path: Path) -> Path:
    """Three fp32 MatMuls of one shape, one of another, one MatMulNBits, one MatMulInteger, and a MatMul whose
    weight comes through a Transpose (not timed alone)."""
    inits, nodes = [], []

    def w(name: str, shape: tuple[int, ...], dtype=np.float32) -> str:
        inits.append(numpy_helper.from_array(np.zeros(shape, dtype=dtype), name))
        return name

    for i in range(3):
        nodes.append(helper.make_node("MatMul", ["x", w(f"a{i}", (K, N))], [f"ya{i}"]))
    nodes.append(helper.make_node("MatMul", ["x", w("b", (K, 2 * N))], ["yb"]))
    nodes.append(
        helper.make_node(
            "MatMulNBits",
            ["x", w("q", (N, K // 32, 16), np.uint8), w("s", (N * K // 32,))],
            ["yq"],
            domain="com.microsoft",
            K=K,
            N=N,
            bits=4,
            block_size=32,
            accuracy_level=4,
        )
    )
    nodes.append(helper.make_node("MatMulInteger", ["xq", w("i8", (K, N), np.int8), "xz", w("z", (), np.int8)], ["yi"]))
    nodes.append(helper.make_node("Transpose", [w("e", (N, K))], ["et"], perm=[1, 0]))
    nodes.append(helper.make_node("MatMul", ["x", "et"], ["ye"]))
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, K]),
        helper.make_tensor_value_info("xq", TensorProto.UINT8, [1, K]),
        helper.make_tensor_value_info("xz", TensorProto.UINT8, []),
    ]
    outs = [
        helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None) for n in nodes if n.op_type != "Transpose"
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, outs, initializer=inits),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def test_each_operator_gets_its_most_read_shape_and_every_nodes_bytes(tmp_path: Path):
    shapes = {s.op: s for s in kernel_shapes(_graph(tmp_path))}
    assert list(shapes) == ["MatMul", "MatMulInteger", "MatMulNBits"]
    mm = shapes["MatMul"]
    assert mm.nodes == 3 and mm.weights_bytes == K * N * 4  # 3 x 8 kB beat 1 x 16 kB
    assert mm.op_bytes == 3 * K * N * 4 + K * 2 * N * 4  # the transposed weight is not read directly
    nbits = shapes["MatMulNBits"]
    assert nbits.attributes == {"K": K, "N": N, "bits": 4, "block_size": 32, "accuracy_level": 4}
    assert nbits.weights_bytes == N * (K // 32) * 16 + N * (K // 32) * 4
    assert shapes["MatMulInteger"].inputs[0] is None and shapes["MatMulInteger"].inputs[2] is None
    assert copies_for(mm, 10 * K * N * 4) == 10 and copies_for(mm, 1) == 1


def test_every_shape_runs_alone_as_copies_on_one_activation(tmp_path: Path):
    for shape in kernel_shapes(_graph(tmp_path)):
        data, feed = kernel_model(shape, 3)
        assert set(feed) == ({"a", "a_zero"} if shape.op == "MatMulInteger" else {"a"})
        model = onnx.load_from_string(data)
        assert sum(n.op_type == shape.op for n in model.graph.node) == 3
        assert {n.input[0] for n in model.graph.node} == {"a"}
        found = time_kernel(shape, 3, threads=1, passes=2)
        assert len(found) == 2 and min(found) > 0, shape.op


def test_a_demo_int4_tier_has_its_nbits_settings_in_its_kernel():
    (nbits,) = [s for s in kernel_shapes(bundled.DEMO_DIR / "lm-base-int4" / "model.onnx") if s.op == "MatMulNBits"]
    assert nbits.attributes["block_size"] == 32 and nbits.attributes["bits"] == 4
