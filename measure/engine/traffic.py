"""The bytes a decode step reads, counted from the step's graph: what the memory-bandwidth bound divides.

At batch 1 a step multiplies one token's activations by every weight matrix once, so its time is bounded below
by the bytes those weights take as stored (an int4 block with its scales and zero points, an int8 matrix with
its zero point, an fp32 one) over the memory's bandwidth. Counted here, from the graph read without its
weights (:func:`~measure.engine.skeleton.load_skeleton` keeps each initializer's dims and data type):

* **weights**: every initializer a matrix-multiplying operator reads (MatMul, Gemm, MatMulInteger, MatMulNBits,
  DynamicQuantizeMatMul, MatMulIntegerToFloat, QLinearMatMul, QGemm, FusedMatMul, Attention's packed
  weights), with each input it takes beside the weight (scales, zero points, a Gemm's bias) and whatever
  reaches it through a DequantizeLinear, Transpose, Cast, Reshape and the like, each at its stored width;
  the LM head is one of them, read whole;
* **embedding rows**: one row of each table a Gather (or GatherBlockQuantized, its scales and zero points
  too) reads, a step gathering one token; a table tied to the LM head is counted once, whole, as the head;
* **the key/value cache** per position: layers x key/value heads x head size x 2 x the cache's width, from
  the tier's shape (:func:`kv_bytes_per_position`); what a step reads of it depends on how many positions
  it has, which the run knows (the golden rows' prompts and outputs), not the graph.

Left out on purpose: per-channel vectors outside those operators (norm gains, a bias added after a MatMul,
the scalar scale a dynamic-int8 graph multiplies its output by): a few kB against megabytes. A merged
decoder's step takes its with-past branch only (:data:`CACHE_BRANCH`); the first call's branch is not counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from measure.engine.skeleton import load_skeleton
from measure.errors import MeasureError

if TYPE_CHECKING:
    import onnx

READERS: dict[str, tuple[int, ...] | None] = {
    "MatMul": None,
    "Gemm": None,
    "FusedMatMul": None,
    "MatMulInteger": None,
    "MatMulIntegerToFloat": None,
    "DynamicQuantizeMatMul": None,
    "MatMulNBits": None,
    "QLinearMatMul": None,
    "QGemm": None,
    "Attention": None,
    "QAttention": None,
}
"""Operators that read a weight matrix whole each step, and which of their inputs count (None: every one)."""
GATHERS: dict[str, tuple[int, ...]] = {"Gather": (0,), "GatherBlockQuantized": (0, 2, 3)}
"""Operators that read one row of a table per token, and which inputs are tables (data, scales, zero points)."""
THROUGH: dict[str, tuple[int, ...] | None] = {
    "DequantizeLinear": None,
    "Transpose": (0,),
    "Cast": (0,),
    "Reshape": (0,),
    "Identity": (0,),
    "Squeeze": (0,),
    "Unsqueeze": (0,),
    "Flatten": (0,),
}
"""Operators a stored weight passes through on its way to a reader (which inputs carry it; None: all)."""
_SUB_BYTE_BITS = {"INT4": 4, "UINT4": 4, "FLOAT4E2M1": 4}


@dataclass(frozen=True)
class StepTraffic:
    """What one decode step of a tier reads, by part; the key/value cache per position (its positions vary)."""

    graph: str
    """The per-step graph's file name (the last a decode calls: the with-past or merged decoder)."""
    weights_bytes: int
    """Initializers the matrix-multiplying operators read, scales and zero points with them; the LM head whole."""
    embedding_bytes: int
    """One row of each gathered embedding table not tied to the head."""
    kv_bytes_per_position: int
    """The self-attention cache's bytes per cached position: layers x kv heads x head size x 2 x width."""
    cross_bytes_per_source_token: int = 0
    """Encoder-decoder tiers: what each step reads per source token of the encoder's output (its hidden
    state, or its cross-attention keys and values where the graph takes them cached); 0 for decoder-only."""
    weights: int = 0
    """How many initializers ``weights_bytes`` counts."""

    def bytes_at(self, positions: float, source_tokens: float = 0.0) -> float:
        """A step's bytes with ``positions`` cached positions (and ``source_tokens`` for an encoder-decoder)."""
        kv = self.kv_bytes_per_position * positions + self.cross_bytes_per_source_token * source_tokens
        return self.weights_bytes + self.embedding_bytes + kv

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tensor_bytes(dims: list[int] | tuple[int, ...], data_type: int) -> int:
    """A tensor's stored bytes: its elements at their width (4-bit types two to a byte, rounded up)."""
    import onnx

    count = 1
    for d in dims:
        count *= int(d)
    name = onnx.TensorProto.DataType.Name(data_type)
    if name in _SUB_BYTE_BITS:
        return (count * _SUB_BYTE_BITS[name] + 7) // 8
    if name in ("STRING", "UNDEFINED"):
        return 0
    return count * onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize


CACHE_BRANCH = "use_cache_branch"
"""An optimum merged decoder's If condition: true takes ``then_branch``, the with-past step every decode step
after the first takes (its ``else_branch`` is the first call's, which may hold its own copy of the weights)."""


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """A graph and every subgraph a step may run (a merged decoder's with-past branch only)."""
    import onnx

    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if node.op_type == "If" and list(node.input[:1]) == [CACHE_BRANCH] and attr.name != "then_branch":
                continue
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _graphs(g)


@dataclass(frozen=True)
class _Tensors:
    """One model's stored tensors (initializers and Constant values: dims and data type), what produces every other
    tensor, and its nodes, over the main graph and every subgraph."""

    stored: dict[str, tuple[tuple[int, ...], int]]
    producers: dict[str, onnx.NodeProto]
    nodes: list[onnx.NodeProto]

    def stores(self, name: str, depth: int = 0) -> set[str]:
        """The stored tensors that reach ``name`` through :data:`THROUGH` operators only."""
        if name in self.stored:
            return {name}
        node = self.producers.get(name)
        if node is None or node.op_type not in THROUGH or depth > 8:
            return set()
        carried = THROUGH[node.op_type]
        picked = node.input if carried is None else [node.input[i] for i in carried if i < len(node.input)]
        return set().union(*(self.stores(i, depth + 1) for i in picked if i))


def _tensors(model: onnx.ModelProto) -> _Tensors:
    stored: dict[str, tuple[tuple[int, ...], int]] = {}
    producers: dict[str, onnx.NodeProto] = {}
    nodes: list[onnx.NodeProto] = []
    for g in _graphs(model.graph):
        stored.update({t.name: (tuple(t.dims), t.data_type) for t in g.initializer})
        for node in g.node:
            nodes.append(node)
            if node.op_type == "Constant" and node.output:
                value = next((a.t for a in node.attribute if a.name == "value" and a.type == a.TENSOR), None)
                if value is not None:
                    stored[node.output[0]] = (tuple(value.dims), value.data_type)
                    continue
            producers.update({out: node for out in node.output if out})
    return _Tensors(stored, producers, nodes)


def _gathered_tables(node: onnx.NodeProto, tensors: _Tensors) -> dict[str, int]:
    """The stored tables a gather reads rows of, each with its row count along the gathered axis."""
    axis = next((int(a.i) for a in node.attribute if a.name in ("axis", "gather_axis")), 0)
    tables: dict[str, int] = {}
    for i in GATHERS[node.op_type]:
        for name in tensors.stores(node.input[i]) if i < len(node.input) and node.input[i] else ():
            dims = tensors.stored[name][0]
            if len(dims) >= 2:  # a table, not a shape vector
                tables[name] = dims[axis % len(dims)]
    return tables


def graph_weight_bytes(model: onnx.ModelProto) -> tuple[int, int, int]:
    """(weights bytes, embedding-row bytes, initializers counted as weights) of one graph, as the module says."""
    tensors = _tensors(model)
    weights: set[str] = set()
    tables: dict[str, int] = {}
    for node in tensors.nodes:
        if node.op_type in READERS:
            for name in node.input:
                weights |= tensors.stores(name) if name else set()
        elif node.op_type in GATHERS:
            tables.update(_gathered_tables(node, tensors))
    stored = tensors.stored
    weights_bytes = sum(tensor_bytes(*stored[n]) for n in weights)
    row_bytes = sum(tensor_bytes(*stored[n]) // max(1, count) for n, count in tables.items() if n not in weights)
    return weights_bytes, row_bytes, len(weights)


def kv_bytes_per_position(layers: int, kv_heads: int, head_dim: int, width: int) -> int:
    """One cached position's keys and values over every layer."""
    return layers * kv_heads * head_dim * 2 * width


def _cross_bytes(model: onnx.ModelProto, shape: Any, width: int) -> int:
    """What an encoder-decoder step reads per source token: the cached cross-attention keys and values where the
    graph takes them (optimum's ``past_key_values.*.encoder.*``), else the encoder's hidden state
    (``encoder_hidden_states``: the keys and values are recomputed from it, their weights counted as weights)."""
    import onnx

    names = [value.name for value in model.graph.input]
    if any(n.startswith("past_key_values.") and ".encoder." in n for n in names):
        return kv_bytes_per_position(shape.layers, shape.heads, shape.head_dim, width)
    for value in model.graph.input:
        if value.name == "encoder_hidden_states":
            t = value.type.tensor_type
            last = t.shape.dim[-1].dim_value if t.shape.dim else 0
            hidden = last or shape.heads * shape.head_dim
            return hidden * onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).itemsize
    return kv_bytes_per_position(shape.layers, shape.heads, shape.head_dim, width)


def step_traffic(path: Path, shape: Any, kind: str) -> StepTraffic:
    """One tier's per-step traffic from its step graph ``path`` and its ``shape`` (``layers``, ``heads``: the
    key/value heads, ``head_dim``, ``kv_dtype``); ``kind`` ``seq2seq`` adds the encoder's output it reads."""
    import numpy as np

    try:
        model = load_skeleton(path)
    except Exception as exc:
        raise MeasureError(f"{path}: not a readable ONNX model ({exc})") from exc
    weights, rows, count = graph_weight_bytes(model)
    width = np.dtype(shape.kv_dtype).itemsize
    cross = _cross_bytes(model, shape, width) if kind == "seq2seq" else 0
    per_position = kv_bytes_per_position(shape.layers, shape.heads, shape.head_dim, width)
    return StepTraffic(Path(path).name, weights, rows, per_position, cross, count)
