"""An ONNX file's graph without its weights: what reading a graph's operators, opset and tensor shapes needs.

``onnx.load`` parses the whole file, so a 650 MB graph with its weights inside costs about twice that in memory
for as long as the fingerprint or the leg reading it holds it, beside the tier's own sessions. Here the
protobuf wire format is walked on the file: every field is copied but the tensors' data (``raw_data``,
``float_data`` and the other typed lists) of the graph's initializers, which are skipped by seeking. What
comes back is an ordinary ``ModelProto`` whose initializers keep their name, dims, data type and external-data
entries. Nodes are copied whole (their attribute tensors are small; a subgraph's initializers come along).

The same walk writes a graph with its weights moved beside it (:func:`split_weights`), for onnxruntime-web.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO

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
    model: onnx.ModelProto = onnx.ModelProto.FromString(data)
    return model


ALIGN = 4096
"""Each moved tensor starts at a multiple of this in the data file (the alignment onnxruntime maps files at)."""


class _Mover:
    """Moves ``raw_data`` fields of at least ``least`` bytes from the graph file to ``sink``, streamed, and keeps
    the external-data entries that the tensor holding the field gets in their place."""

    def __init__(self, sink: BinaryIO, location: str, least: int) -> None:
        self.sink, self.location, self.least = sink, location, least
        self.moved = 0
        self.pending = b""

    def move(self, f: IO[bytes], length: int) -> bool:
        if length < self.least:
            return False
        offset = self.sink.tell()
        self.sink.write(b"\0" * (-offset % ALIGN))
        offset = self.sink.tell()
        left = length
        while left:
            chunk = f.read(min(left, 1 << 24))
            if not chunk:
                raise ValueError("truncated field")
            self.sink.write(chunk)
            left -= len(chunk)
        entries = (("location", self.location), ("offset", str(offset)), ("length", str(length)))
        self.pending = b"".join(_entry(k, v) for k, v in entries) + b"\x70\x01"  # data_location = EXTERNAL
        self.moved += length
        return True

    def trailer(self) -> bytes:
        """The entries for the tensor just walked (none if its data stayed inline)."""
        out, self.pending = self.pending, b""
        return out


def _entry(key: str, value: str) -> bytes:
    """One TensorProto.external_data entry (field 13, a StringStringEntryProto) as it is on the wire."""
    k, v = key.encode(), value.encode()
    body = b"\x0a" + _encode(len(k)) + k + b"\x12" + _encode(len(v)) + v
    return b"\x6a" + _encode(len(body)) + body


class _Split:
    """An initializer (TensorProto) whose ``raw_data`` the mover may take."""

    def __init__(self, mover: _Mover) -> None:
        self.mover = mover


def split_weights(path: Path, graph: Path, data: Path, least: int = 1024) -> int:
    """Write ``path``'s model to ``graph`` with the initializers' ``raw_data`` of at least ``least`` bytes moved
    into ``data`` (ONNX external data, beside ``graph``); the bytes moved (0: nothing was, ``data`` is empty).

    Why: onnxruntime-web copies a graph's bytes into its wasm heap and parses them there, so a graph holding its
    weights is held about three times while its session is created (the page's copy, the heap's, the tensors);
    with the weights beside it, twice. The copy is streamed: memory here stays at the graph less its weights.
    Tensors already external keep their entries (their files are beside ``path``); the other fields are
    copied as they are, so the model is the same one, tensor for tensor."""
    with Path(path).open("rb") as f, Path(data).open("wb") as sink:
        size = f.seek(0, 2)
        f.seek(0)
        mover = _Mover(sink, Path(data).name, least)
        out = _message(f, size, {7: {5: _Split(mover)}})
    Path(graph).write_bytes(out)
    return mover.moved


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
            if isinstance(action, _Mover) and action.move(f, length):
                continue
            if isinstance(action, _Split):
                inner = _message(f, start + length, {9: action.mover}) + action.mover.trailer()
            elif isinstance(action, dict):
                inner = _message(f, start + length, action)
            else:
                inner = _read(f, length)
            out += tag + _encode(len(inner)) + inner
            continue
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if action is not _DROP:
            out += tag + body
    if f.tell() != end:
        raise ValueError("field runs past its message")
    return bytes(out)
