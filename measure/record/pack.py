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
* first leg: a later framing leg's tier fact (a list or an object) that is the
  first leg's (Python onnxruntime's) for the same tier, to the byte, is stored
  as ``{"~first_leg": true}`` (record version 5 on): the runtimes that decode as
  Python does repeat its output ids, outputs and often its framing blocks, a
  hundred kilobytes apart, further than gzip looks back.

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
FIRST_LEG = "~first_leg"
SHARED_FROM = 5
"""The record version from which later legs' facts may be stored as the first leg's: a version-4 document is
stored as a version-4 reader can unpack it."""
SHARED_LEAST = 64
"""Facts shorter than this (JSON bytes) are stored as they are: a marker would save nothing."""
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


def _repeat(value: Any, n: int, shared: bool = False) -> list[Any]:
    """``n`` copies of a fact stored once: each its own object, so changing one row never changes another
    (``shared``: the one object ``n`` times, for a reader that never changes the document)."""
    if shared or not isinstance(value, (list, dict)):
        return [value] * n
    import orjson

    data = orjson.dumps(value)
    return [orjson.loads(data) for _ in range(n)]


_WALKED = (dict, list)
_WALKED_TYPES = frozenset(_WALKED)


def _unpack_rows(n: int, columns: dict[str, Any], shared: bool) -> list[dict[str, Any]]:
    """A packed list's rows from its columns (a column stored as ``{SAME: value}`` repeats one value)."""
    cols = {k: _repeat(v[SAME], n, shared) if type(v) is dict and list(v) == [SAME] else v for k, v in columns.items()}
    if not all(isinstance(v, list) and len(v) == n for v in cols.values()):
        raise ValueError("a packed list's columns differ in length from its rows")
    walk = [k for k, v in cols.items() if not _WALKED_TYPES.isdisjoint(map(type, v))]  # the rest are scalars
    rows = [{k: v[i] for k, v in cols.items()} for i in range(n)]
    for row in rows:
        for k in walk:
            row[k] = _unpack_columns(row[k], shared)
    return rows


def _unpack_columns(node: Any, shared: bool = False) -> Any:
    """``node`` with every packed list made rows again; ``shared``: see :func:`_repeat`."""
    if type(node) is list:
        return [_unpack_columns(v, shared) if type(v) in _WALKED else v for v in node] if nested(node) else node
    if type(node) is not dict:
        return node
    if len(node) == 2 and ROWS in node and COLUMNS in node:
        n, columns = node[ROWS], node[COLUMNS]
        if isinstance(columns, dict) and type(n) is int:
            return _unpack_rows(n, columns, shared)
    return {k: _unpack_columns(v, shared) if type(v) in _WALKED else v for k, v in node.items()}


def _tiers_by_name(leg: Any) -> dict[str, dict[str, Any]] | None:
    """A leg's tier entries by name; None where there is no such list or a name is not unique."""
    tiers = leg.get("tiers") if isinstance(leg, dict) else None
    if not isinstance(tiers, list) or not all(isinstance(t, dict) and isinstance(t.get("tier"), str) for t in tiers):
        return None
    named = {t["tier"]: t for t in tiers}
    return named if len(named) == len(tiers) else None


def _share_first_leg(framing: dict[str, Any]) -> dict[str, Any]:
    """``framing`` with each later leg's tier facts that equal the first leg's (to the byte) as markers."""
    legs = framing.get("legs")
    if not isinstance(legs, list) or len(legs) < 2:
        return framing
    first = _tiers_by_name(legs[0])
    if not first:
        return framing
    out_legs = [legs[0]]
    for leg in legs[1:]:
        if _tiers_by_name(leg) is None:
            out_legs.append(leg)
            continue
        tiers = []
        for t in leg["tiers"]:
            ref = first.get(t["tier"], {})
            shared = {}
            for key, value in t.items():
                if isinstance(value, (list, dict)) and key in ref:
                    text = _json(value)
                    if len(text) >= SHARED_LEAST and text == _json(ref[key]):
                        shared[key] = {FIRST_LEG: True}
            tiers.append({k: shared.get(k, v) for k, v in t.items()})
        out_legs.append({**leg, "tiers": tiers})
    return {**framing, "legs": out_legs}


def _marker(value: Any) -> bool:
    return type(value) is dict and len(value) == 1 and value.get(FIRST_LEG) is True


def _restore_first_leg(framing: Any, shared: bool = False) -> Any:
    """Each marker of :func:`_share_first_leg` replaced by its own copy of the first leg's fact (``shared``: by
    the fact itself, see :func:`_repeat`)."""
    legs = framing.get("legs") if isinstance(framing, dict) else None
    if not isinstance(legs, list) or len(legs) < 2:
        return framing
    first = None
    for leg in legs[1:]:
        for t in leg.get("tiers", ()) if isinstance(leg, dict) and isinstance(leg.get("tiers"), list) else ():
            if not isinstance(t, dict):
                continue
            for key, value in t.items():
                if not _marker(value):
                    continue
                first = _tiers_by_name(legs[0]) if first is None else first
                ref = (first or {}).get(t.get("tier"), {})  # type: ignore[arg-type]
                if key not in ref:
                    raise ValueError(f"{t.get('tier')!r}'s {key} is stored as the first leg's, which has none")
                t[key] = _repeat(ref[key], 1, shared)[0]
    return framing


def pack(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as a file stores it; unpacking gives back ``doc`` exactly, or ``doc`` is stored as it is."""
    out = dict(doc)
    try:
        if isinstance(doc.get("wallclock"), dict):
            out["wallclock"] = pack_seconds(doc["wallclock"])
        if isinstance(doc.get("framing"), dict):
            framing = doc["framing"]
            version = doc.get("schema_version")
            if type(version) is int and version >= SHARED_FROM:
                framing = _share_first_leg(framing)
            out["framing"] = _pack_columns(framing)
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
    record model straight away and never writes the document out: no float object per sample), and let a fact
    stored once stand for every place it fills as one object, not copies (a reader that never changes the
    document cannot tell).
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
            doc["framing"] = _restore_first_leg(_unpack_columns(doc["framing"], arrays), arrays)
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
