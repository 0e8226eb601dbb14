"""The record as stored: the same document, packed where it is written and unpacked where it is loaded.

The suites and the record model build and read the plain document; only the
file is compact, so nothing upstream of :mod:`measure.record.io` knows about it.
Two packings, both exact (a value that would not come back bit for bit is
left as it is):

* seconds: under ``wallclock``, every ``*_s`` field of samples as integers of
  the coarsest exact unit, one line of text per field, repeats as differences,
  some fields against others (:mod:`measure.record.sample_codec`).
* columns: under ``framing``, a list of two or more objects with the same keys
  in the same order (legs' tiers, blocks, layers) is stored as
  ``{"~rows": n, "~columns": {key: [values] | {"~same": value}}}``: keys once
  per list, and a fact the same for every entry once.

A packed file can also be gzipped (``.json.gz``); :func:`decompress` reads either.
"""

from __future__ import annotations

import warnings
import zlib
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.record.sample_codec import Unpacked, nested, pack_seconds, unpack_seconds

ROWS = "~rows"
COLUMNS = "~columns"
SAME = "~same"
GZ_SUFFIX = ".json.gz"


def _json(value: Any) -> bytes:
    import orjson

    return orjson.dumps(value)


def _pack_columns(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _pack_columns(v) for k, v in node.items()}
    if not isinstance(node, list) or not nested(node):
        return node
    items = [_pack_columns(v) for v in node]
    if len(items) < 2 or not all(isinstance(v, dict) for v in items):
        return items
    keys = list(items[0])
    if not keys or any(list(v) != keys for v in items):
        return items
    columns: dict[str, Any] = {}
    for key in keys:
        values = [v[key] for v in items]
        first = _json(values[0])
        same = all(_json(v) == first for v in values)
        columns[key] = {SAME: values[0]} if same else values
    return {ROWS: len(items), COLUMNS: columns}


def _repeat(value: Any, n: int) -> list[Any]:
    """``n`` copies of a fact stored once: each its own object, so changing one row never changes another."""
    if not isinstance(value, (list, dict)):
        return [value] * n
    import orjson

    data = orjson.dumps(value)
    return [orjson.loads(data) for _ in range(n)]


_WALKED = (dict, list)


def _unpack_rows(n: int, columns: dict[str, Any]) -> list[dict[str, Any]]:
    """A packed list's rows from its columns (a column stored as ``{SAME: value}`` repeats one value)."""
    cols = {k: _repeat(v[SAME], n) if type(v) is dict and list(v) == [SAME] else v for k, v in columns.items()}
    if not all(isinstance(v, list) and len(v) == n for v in cols.values()):
        raise ValueError("a packed list's columns differ in length from its rows")
    walk = [k for k, v in cols.items() if any(type(x) in _WALKED for x in v)]  # the rest are scalars
    rows = [{k: v[i] for k, v in cols.items()} for i in range(n)]
    for row in rows:
        for k in walk:
            row[k] = _unpack_columns(row[k])
    return rows


def _unpack_columns(node: Any) -> Any:
    if type(node) is list:
        return [_unpack_columns(v) if type(v) in _WALKED else v for v in node] if nested(node) else node
    if type(node) is not dict:
        return node
    if len(node) == 2 and ROWS in node and COLUMNS in node:
        n, columns = node[ROWS], node[COLUMNS]
        if isinstance(columns, dict) and type(n) is int:
            return _unpack_rows(n, columns)
    return {k: _unpack_columns(v) if type(v) in _WALKED else v for k, v in node.items()}


def pack(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as a file stores it; unpacking gives back ``doc`` exactly, or ``doc`` is stored as it is."""
    out = dict(doc)
    try:
        if isinstance(doc.get("wallclock"), dict):
            out["wallclock"] = pack_seconds(doc["wallclock"])
        if isinstance(doc.get("framing"), dict):
            out["framing"] = _pack_columns(doc["framing"])
        back = unpack(out, "(packing)")
        return out if _json(back) == _json(doc) else doc
    except MeasureError:
        return doc
    except TypeError:  # orjson holds integers of 64 bits; JSON (and the schema) has no such bound
        return doc


def unpack(
    doc: dict[str, Any], source: str, spans: list[Unpacked] | None = None, arrays: bool = False
) -> dict[str, Any]:
    """The plain document of a stored one (a plain one comes back as it is); bad packing names the file.

    ``spans``: where to note each seconds field made from packed integers
    (see :class:`~measure.record.sample_codec.Unpacked`).
    ``arrays``: leave those fields as read-only float arrays instead of lists (for a reader that makes the
    record model straight away and never writes the document out: no float object per sample).
    """
    doc = dict(doc)
    failures = (TypeError, ValueError, KeyError, IndexError, RecursionError)
    if isinstance(doc.get("wallclock"), dict):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", DeprecationWarning)  # numpy's "could not be read to its end"
                doc["wallclock"] = unpack_seconds(doc["wallclock"], spans, arrays)
        except failures as exc:
            raise MeasureError(
                f"{source}: {exc}" if str(exc).startswith("field") else f"{source}: field wallclock: {exc}"
            ) from exc
    if isinstance(doc.get("framing"), dict):
        try:
            doc["framing"] = _unpack_columns(doc["framing"])
        except failures as exc:
            raise MeasureError(f"{source}: field framing: packed columns do not unpack ({exc})") from exc
    return doc


def is_gzip(path: Path) -> bool:
    return path.name.endswith(GZ_SUFFIX)


MAX_JSON_BYTES = 1 << 29
"""The most a ``.json.gz`` may unpack to (512 MiB, a hundred times the largest record): a gzip bomb stops here."""


def decompress(path: Path, data: bytes) -> bytes:
    """A record file's JSON bytes: ``data`` itself, or gunzipped for a ``.json.gz`` (a bad one names the file)."""
    if not is_gzip(path):
        return data
    inflate = zlib.decompressobj(wbits=31)  # one gzip member, as :func:`compress` writes
    try:
        out = inflate.decompress(data, MAX_JSON_BYTES)
    except zlib.error as exc:
        raise MeasureError(f"{path}: not a readable gzip record ({exc})") from exc
    if inflate.unconsumed_tail:
        raise MeasureError(f"{path}: gzip record unpacks to over {MAX_JSON_BYTES:,} bytes; not a measure record")
    if not inflate.eof:
        raise MeasureError(f"{path}: not a readable gzip record (truncated: the stream ends early)")
    if inflate.unused_data:
        raise MeasureError(f"{path}: not a readable gzip record (bytes after the end of the stream)")
    return out


def compress(data: bytes, level: int = 9) -> bytes:
    """Gzip with no timestamp or name, so the same record always gives the same bytes (and git stores it once).

    Deflate's filtered strategy: a packed record is mostly short runs of digits that repeat little, which
    Huffman codes better than string matches do (3% smaller than the default strategy; read as any gzip).
    """
    deflate = zlib.compressobj(level, zlib.DEFLATED, 31, 8, zlib.Z_FILTERED)  # wbits 31: one gzip member
    return deflate.compress(data) + deflate.flush()
