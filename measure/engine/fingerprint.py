"""What a tier *is*, read from its files: sizes, hashes, precision, opset.

Precision is read from the graph's operators, never from a folder name, so a
mislabelled tier is reported as what it is.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from measure.engine.skeleton import load_skeleton
from measure.errors import MeasureError

if TYPE_CHECKING:
    import onnx

_DYNAMIC_INT8 = {"DynamicQuantizeLinear", "DynamicQuantizeMatMul", "MatMulIntegerToFloat"}
_STATIC_INT8 = {"QLinearMatMul", "QLinearConv", "QGemm"}


@dataclass(frozen=True)
class FileFingerprint:
    name: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class GraphFingerprint:
    """One ONNX graph: its precision class and the parameters that define it."""

    file: str
    precision: str
    """fp32, fp16, int8-dynamic, int8-static or int4 (MatMulNBits); mixed kinds joined with '+'."""
    opset: int
    ops: dict[str, int]
    """Counts of the operators that decide precision (MatMul, MatMulInteger, MatMulNBits, ...)."""
    nbits: dict[str, int] | None = None
    """For MatMulNBits graphs: bits, block_size, accuracy_level (0 when unset)."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_fingerprint(path: Path) -> FileFingerprint:
    return FileFingerprint(name=path.name, bytes=path.stat().st_size, sha256=sha256_file(path))


def graph_fingerprint(path: Path) -> GraphFingerprint:
    # onnx is imported in the functions that read the graph, not at the top: it costs a second per process
    # (ml_dtypes), which every process that only loads and decodes a tier (the cost profile's workers,
    # `measure decode`) would pay; the graph is read without its weights, which would double a large tier's
    # memory while it is loaded
    try:
        model = load_skeleton(path)
    except Exception as exc:
        raise MeasureError(f"{path}: not a readable ONNX model ({exc})") from exc
    ops, nbits = _counted_ops(model)
    precision = _precision(ops, nbits, model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return GraphFingerprint(file=path.name, precision=precision, opset=opset, ops=dict(ops), nbits=nbits)


def _counted_ops(model: onnx.ModelProto) -> tuple[Counter[str], dict[str, int] | None]:
    """How many of each operator that says a precision the graph holds, and the first MatMulNBits' settings."""
    import onnx

    ops: Counter[str] = Counter()
    nbits: dict[str, int] | None = None
    for node in _all_nodes(model.graph):
        if node.op_type in {"MatMul", "Gemm", "MatMulInteger", "MatMulNBits"} | _DYNAMIC_INT8 | _STATIC_INT8 | {
            "QuantizeLinear",
            "DequantizeLinear",
        }:
            ops[node.op_type] += 1
        if node.op_type == "MatMulNBits" and nbits is None:
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
            nbits = {
                "bits": int(attrs.get("bits", 4)),
                "block_size": int(attrs.get("block_size", 0)),
                "accuracy_level": int(attrs.get("accuracy_level", 0)),
            }
    return ops, nbits


def _precision(ops: Counter[str], nbits: dict[str, int] | None, model: onnx.ModelProto) -> str:
    """The graph's precision from its operators (``int4+int8-dynamic`` where it mixes), else its initializers'."""
    import onnx

    kinds = []
    if ops["MatMulNBits"]:
        kinds.append(f"int{nbits['bits'] if nbits else 4}")
    if any(ops[o] for o in _DYNAMIC_INT8) or (ops["MatMulInteger"] and not ops["QuantizeLinear"]):
        kinds.append("int8-dynamic")
    elif any(ops[o] for o in _STATIC_INT8) or ops["QuantizeLinear"]:
        kinds.append("int8-static")
    if not kinds:
        halves = any(init.data_type == onnx.TensorProto.FLOAT16 for init in model.graph.initializer)
        kinds.append("fp16" if halves else "fp32")
    return "+".join(kinds)


def _all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Nodes of a graph and of its subgraphs (the branches of a merged decoder's If)."""
    import onnx

    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _all_nodes(g)


@dataclass(frozen=True)
class TierFingerprint:
    """Everything needed to say which artifact was measured."""

    name: str
    layout: str
    precision: str
    files: tuple[FileFingerprint, ...]
    graphs: tuple[GraphFingerprint, ...]
    layers: int
    heads: int
    head_dim: int
    vocab_size: int
    tokenizer: str
    total_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types (tuples become lists), as stored in run records."""
        d = asdict(self)
        d["files"] = [dict(f) for f in d["files"]]
        d["graphs"] = [dict(g) for g in d["graphs"]]
        return d


def tier_precision(graphs: tuple[GraphFingerprint, ...]) -> str:
    """The tier's label: the decoder's precision wins over an fp32 encoder, distinct kinds are joined."""
    kinds = list(dict.fromkeys(g.precision for g in graphs))
    quantized = [k for k in kinds if k not in ("fp32", "fp16")]
    return "+".join(quantized) if quantized else "+".join(kinds)


def fingerprint_tier(
    name: str, layout: str, folder: Path, graph_files: list[Path], shape: Any, tokenizer: str
) -> TierFingerprint:
    """A loaded tier's fingerprint, either model kind: every file of ``folder`` hashed, the graphs it decodes
    with read for precision and operators, the shape (``layers``, ``heads``, ``head_dim``, ``vocab_size``)."""
    graphs = tuple(graph_fingerprint(p) for p in graph_files)
    files = tuple(file_fingerprint(p) for p in sorted(folder.iterdir()) if p.is_file())
    return TierFingerprint(
        name=name,
        layout=layout,
        precision=tier_precision(graphs),
        files=files,
        graphs=graphs,
        layers=shape.layers,
        heads=shape.heads,
        head_dim=shape.head_dim,
        vocab_size=shape.vocab_size,
        tokenizer=tokenizer,
        total_bytes=sum(f.bytes for f in files),
    )
