"""An ONNX file's graph without its weights: what reading a graph's operators, opset and tensor shapes needs.

``onnx.load`` parses the whole file, so a 650 MB graph with its weights inside costs about twice that in memory
for as long as the fingerprint or the leg reading it holds it, beside the tier's own sessions. Here the
protobuf wire format is walked on the file: every field is copied but the tensors' data (``raw_data``,
``float_data`` and the other typed lists) of the graph's initializers, which are skipped by seeking. What
comes back is an ordinary ``ModelProto`` whose initializers keep their name, dims, data type and external-data
entries. Nodes are copied whole (their attribute tensors are small; a subgraph's initializers come along).
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    import onnx

_DROP = "drop"
_TENSOR: dict[int, object] = {n: _DROP for n in (4, 5, 6, 7, 9, 10, 11)}
"""TensorProto: float_data, int32_data, string_data, int64_data, raw_data, double_data, uint64_data dropped."""
_SPARSE: dict[int, object] = {1: _TENSOR, 2: _TENSOR}
"""SparseTensorProto: its values and indices, each a TensorProto."""
_GRAPH: dict[int, object] = {5: _TENSOR, 15: _SPARSE}
"""GraphProto: initializer, sparse_initializer."""
_MODEL: dict[int, object] = {7: _GRAPH}
"""ModelProto: graph."""


def load_skeleton(path: Path) -> onnx.ModelProto:
    """``path``'s model with its initializers' data left out; ``ValueError`` for a file that is not protobuf."""
    import onnx

    with Path(path).open("rb") as f:
        size = f.seek(0, 2)
        f.seek(0)
        data = _message(f, size, _MODEL)
    return onnx.ModelProto.FromString(data)


def _varint(f: IO[bytes]) -> tuple[int, bytes]:
    """A varint's value and its bytes as they are in the file."""
    raw, value, shift = bytearray(), 0, 0
    while True:
        b = f.read(1)
        if not b:
            raise ValueError("truncated varint")
        raw += b
        value |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return value, bytes(raw)
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 64 bits")


def _encode(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read(f: IO[bytes], n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ValueError("truncated field")
    return data


def _message(f: IO[bytes], end: int, plan: dict[int, object]) -> bytes:
    """The fields from ``f``'s position to ``end``, serialized again, with what ``plan`` drops skipped and what
    it names (a nested plan) walked the same way."""
    out = bytearray()
    while f.tell() < end:
        key, tag = _varint(f)
        field, wire = key >> 3, key & 7
        action = plan.get(field)
        if wire == 0:
            _, body = _varint(f)
        elif wire == 1:
            body = _read(f, 8)
        elif wire == 5:
            body = _read(f, 4)
        elif wire == 2:
            length, _ = _varint(f)
            start = f.tell()
            if start + length > end:
                raise ValueError("field runs past its message")
            if action is _DROP:
                f.seek(start + length)
                continue
            inner = _message(f, start + length, action) if isinstance(action, dict) else _read(f, length)
            out += tag + _encode(len(inner)) + inner
            continue
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if action is not _DROP:
            out += tag + body
    if f.tell() != end:
        raise ValueError("field runs past its message")
    return bytes(out)
