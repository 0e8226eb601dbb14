"""A tier's matrix kernels alone: the read rate each reaches at batch 1, against which the bound is read.

A tier far from its memory-bandwidth bound is limited by something else; this says whether it is the kernel. For
each kind of weight-reading operator in a tier's step graph (MatMul, MatMulInteger, DynamicQuantizeMatMul,
MatMulNBits), its most-read weight shape (the one whose nodes read the most bytes per step) is rebuilt as a graph
of one such node per copy of its weights, every copy fed the same one-token activation, with copies enough to
hold :func:`copies_for`'s bytes (beyond the last-level cache, so each call reads its weights from memory as a
decode step does). One ``run`` calls every copy once; its seconds over the copies is one call's time, and the
bytes a call reads over that time the kernel's read rate. The node keeps the tier's attributes (a MatMulNBits'
bits, block size and accuracy level); the weights are seeded random values of the same dims and types, each copy
its own: onnxruntime shares initializers of equal content, so copies of one constant would be read once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from measure.engine.skeleton import load_skeleton
from measure.engine.traffic import tensor_bytes

KINDS = ("MatMul", "MatMulInteger", "DynamicQuantizeMatMul", "MatMulNBits")
"""The operators timed alone; a Gemm or a weight reached through a Transpose or DequantizeLinear is not."""
_KEPT = {"bits", "block_size", "accuracy_level", "K", "N"}


@dataclass(frozen=True)
class KernelShape:
    """One operator with one weight shape, as the step graph holds it."""

    op: str
    domain: str
    inputs: list[list[Any] | None]
    """Per input of the node: ``[dims, data type]`` of a stored tensor, or None for an activation."""
    attributes: dict[str, int]
    nodes: int
    """How many nodes of the graph have this shape."""
    weights_bytes: int
    """Bytes one node reads: its stored inputs."""
    op_bytes: int = 0
    """Bytes every node of this operator in the graph reads, whatever its shape."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def kernel_shapes(path: Path) -> list[KernelShape]:
    """Per operator of :data:`KINDS` in ``path``'s graph, the weight shape whose nodes read the most bytes."""
    import onnx

    graph = load_skeleton(path).graph
    stored = {t.name: [list(t.dims), t.data_type] for t in graph.initializer}
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for node in graph.node:
        if node.op_type not in KINDS or len(node.input) < 2 or node.input[1] not in stored:
            continue
        attrs = {a.name: int(onnx.helper.get_attribute_value(a)) for a in node.attribute if a.name in _KEPT}
        inputs = [stored.get(name) if name else None for name in node.input]
        key = (node.op_type, node.domain, repr(inputs), repr(sorted(attrs.items())))
        groups[key].append((inputs, attrs))
    best: dict[str, KernelShape] = {}
    sizes = {key: sum(tensor_bytes(*i) for i in found[0][0] if i is not None) for key, found in groups.items()}
    per_op: dict[str, int] = defaultdict(int)
    for key, found in groups.items():
        per_op[key[0]] += sizes[key] * len(found)
    for key, found in groups.items():
        (op, domain, _, _), (inputs, attrs), size = key, found[0], sizes[key]
        shape = KernelShape(op, domain, inputs, attrs, len(found), size, per_op[op])
        if op not in best or shape.nodes * size > best[op].nodes * best[op].weights_bytes:
            best[op] = shape
    return [best[op] for op in KINDS if op in best]


def copies_for(shape: KernelShape, least_bytes: int) -> int:
    return max(1, -(-least_bytes // max(1, shape.weights_bytes)))


def _depth(shape: KernelShape) -> int:
    """K: the activation's width."""
    if shape.op == "MatMulNBits":
        return int(shape.attributes["K"])
    return int(shape.inputs[1][0][0])  # type: ignore[index]


def kernel_model(shape: KernelShape, copies: int) -> tuple[bytes, dict[str, Any]]:
    """The graph of ``copies`` nodes of ``shape`` on one shared activation, and its feed."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    k = _depth(shape)
    rng = np.random.default_rng(0)
    integer = shape.op == "MatMulInteger"
    a_type = TensorProto.UINT8 if integer else TensorProto.FLOAT
    feed: dict[str, Any] = {"a": np.full((1, k), 3 if integer else 0.5, dtype=np.uint8 if integer else np.float32)}
    inputs = [helper.make_tensor_value_info("a", a_type, [1, k])]
    nodes, inits, outs = [], [], []
    for c in range(copies):
        names = []
        for i, spec in enumerate(shape.inputs):
            if spec is None and i == 0:
                names.append("a")
            elif spec is None:  # another activation: MatMulInteger's zero point of A
                if "a_zero" not in feed:
                    feed["a_zero"] = np.array(128, dtype=np.uint8)
                    inputs.append(helper.make_tensor_value_info("a_zero", TensorProto.UINT8, []))
                names.append("a_zero")
            else:
                dims, dtype = spec
                np_type = helper.tensor_dtype_to_np_dtype(dtype)
                if np.issubdtype(np_type, np.floating):  # small, like scales and weights; never denormal
                    value = (rng.random(dims, dtype=np.float32) * 0.02 + 0.001).astype(np_type)
                else:
                    value = rng.integers(0, 100, dims).astype(np_type)
                inits.append(numpy_helper.from_array(value, f"w{c}_{i}"))
                names.append(f"w{c}_{i}")
        attributes: dict[str, Any] = dict(shape.attributes)
        nodes.append(helper.make_node(shape.op, names, [f"y{c}"], domain=shape.domain or None, **attributes))
        outs.append(helper.make_tensor_value_info(f"y{c}", TensorProto.INT32 if integer else TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "kernel", inputs, outs, initializer=inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    return model.SerializeToString(), feed


def time_kernel(shape: KernelShape, copies: int, threads: int, passes: int = 7) -> list[float]:
    """Seconds of one call, per pass (a pass calls every copy once), after one untimed pass."""
    import onnxruntime as ort

    data, feed = kernel_model(shape, copies)
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    session.run(None, feed)
    out = []
    for _ in range(passes):
        start = perf_counter()
        session.run(None, feed)
        out.append(round((perf_counter() - start) / copies, 9))
    return out
