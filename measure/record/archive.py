"""Month archives: one machine's records of one month in one file, what the runs share stored once.

A year of CI writes some 10,000 records; gzipped one by one, each keeps its own copy of what consecutive runs of
a machine share: the framing facts while the outputs do not change, the tiers' fingerprints, the config. An
archive, ``<machine-id>/<YYYY-MM>.archive.json.gz``, cuts each record's stored text at its top-level keys and
keeps every distinct part once (``benchmarks/bench_storage.py``: 92 kB a record against 110 kB gzipped one by
one). Its records read back byte for byte, so each keeps its sha256, its cached summary and its name: every verb
reads ``<archive>/<run-id>.json`` as it reads a record file.

The file is two gzip members, so one plain ``gunzip`` reads it whole and a reader that wants only the names
stops after the first: the index ``{"measure_archive": 1, "members": {name: [part, ...]}}``, then the parts, a
JSON list of strings.
"""

from __future__ import annotations

import os
import zlib
from collections import OrderedDict
from pathlib import Path

import orjson

from measure.errors import MeasureError
from measure.record.pack import MAX_JSON_BYTES, compress
from measure.writing import json_text, reason, write_bytes

SUFFIX = ".archive.json.gz"
VERSION = 1
_OPENED: OrderedDict[tuple[str, int, int], tuple[dict[str, list[int]], list[str]]] = OrderedDict()
_KEEP_OPENED = 2
MAX_INDEX_BYTES = 1 << 26
"""The most an archive's index may unpack to (64 MiB: names and part numbers of far more records than a month)."""


def is_archive(path: Path) -> bool:
    return path.name.endswith(SUFFIX)


def container(path: Path) -> Path | None:
    """The archive a record path names a member of (``<archive>/<run-id>.json``), or None for a record file."""
    return path.parent if is_archive(path.parent) else None


def machine_folder(path: Path) -> Path:
    """The machine folder a record lives in: its own, or its month archive's (absolute, so a record named from
    inside its folder, ``measure show <run-id>.json``, is in its folder too)."""
    return (container(path) or path).absolute().parent


def stamp(path: Path) -> os.stat_result:
    """The file stamp that says whether a record changed: its archive's, for a member."""
    return (container(path) or path).stat()


def _bad(path: Path, why: str) -> MeasureError:
    return MeasureError(f"{path}: not a readable month archive ({why})")


def _inflate(path: Path, data: bytes, limit: int = MAX_JSON_BYTES) -> tuple[bytes, bytes]:
    """One gzip member of ``data`` and what follows it."""
    inflate = zlib.decompressobj(wbits=31)
    try:
        out = inflate.decompress(data, limit)
    except zlib.error as exc:
        raise _bad(path, str(exc)) from exc
    if inflate.unconsumed_tail:
        raise _bad(path, f"unpacks to over {limit:,} bytes")
    if not inflate.eof:
        raise _bad(path, "truncated: the stream ends early")
    return out, inflate.unused_data


def _index(path: Path, raw: bytes) -> dict[str, list[int]]:
    try:
        found = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _bad(path, f"index: {exc.msg}") from exc
    members = found.get("members") if isinstance(found, dict) else None
    if not isinstance(found, dict) or found.get("measure_archive") != VERSION or not isinstance(members, dict):
        raise _bad(path, f"expected an index of version {VERSION} with its members")
    for name, parts in members.items():
        if not isinstance(parts, list) or not all(type(i) is int and i >= 0 for i in parts):
            raise _bad(path, f"member {name!r}: expected a list of part numbers")
    return members


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read month archive ({reason(exc)})") from exc


def member_names(path: Path) -> list[str]:
    """The record names an archive holds, read from its index alone (the first few kB of the file)."""
    try:
        with path.open("rb") as f:
            inflate, raw = zlib.decompressobj(wbits=31), b""
            while not inflate.eof:
                chunk = f.read(1 << 16)
                if not chunk:
                    raise _bad(path, "truncated: the index ends early")
                raw += inflate.decompress(chunk)
                if len(raw) > MAX_INDEX_BYTES:
                    raise _bad(path, f"index unpacks to over {MAX_INDEX_BYTES:,} bytes")
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read month archive ({reason(exc)})") from exc
    except zlib.error as exc:
        raise _bad(path, str(exc)) from exc
    return list(_index(path, raw))


def _decode(path: Path, data: bytes) -> tuple[dict[str, list[int]], list[str]]:
    """An archive file's index and parts, checked."""
    raw, rest = _inflate(path, data)
    members = _index(path, raw)
    text, after = _inflate(path, rest)
    if after:
        raise _bad(path, "bytes after the end of the parts")
    try:
        parts = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise _bad(path, f"parts: {exc.msg}") from exc
    if not isinstance(parts, list) or not all(type(p) is str for p in parts):
        raise _bad(path, "parts: expected a list of strings")
    if any(i >= len(parts) for refs in members.values() for i in refs):
        raise _bad(path, "a member names a part the archive does not hold")
    return members, parts


def _join(parts: list[str], refs: list[int]) -> bytes:
    return "".join(parts[i] for i in refs).encode("utf-8")


def _open(path: Path) -> tuple[dict[str, list[int]], list[str]]:
    """An archive's index and parts, checked; the last few opened are kept (a cold build reads each archive's
    records one after another), by path and file stamp."""
    try:
        st = path.stat()
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read month archive ({reason(exc)})") from exc
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key in _OPENED:
        _OPENED.move_to_end(key)
        return _OPENED[key]
    members, parts = _decode(path, _read_file(path))
    _OPENED[key] = (members, parts)
    while len(_OPENED) > _KEEP_OPENED:
        _OPENED.popitem(last=False)
    return members, parts


def read_archive(path: Path) -> dict[str, bytes]:
    """Every record an archive holds: name -> its JSON bytes, exactly as stored before it was archived."""
    members, parts = _open(path)
    return {name: _join(parts, refs) for name, refs in members.items()}


def read_member(path: Path) -> bytes:
    """The JSON bytes of ``<archive>/<name>``."""
    archive = container(path)
    assert archive is not None
    members, parts = _open(archive)
    if path.name not in members:
        raise MeasureError(f"{path}: no record {path.name} in month archive {archive}")
    return _join(parts, members[path.name])


def parts(text: str) -> list[str]:
    """A stored record's text cut at its top-level keys, or whole when writing the top-level values one by one
    does not give it back byte for byte (a record written by another tool, or by hand)."""
    try:
        found = orjson.loads(text)
    except orjson.JSONDecodeError:
        return [text]
    if not isinstance(found, dict) or not found:
        return [text]
    try:  # each part as measure writes a record (one line, no newline of its own)
        cut = [
            ("{" if i == 0 else ",") + json_text(k, "")[:-1] + ":" + json_text(v, "")[:-1]
            for i, (k, v) in enumerate(found.items())
        ]
    except MeasureError:
        return [text]
    cut.append(text[len("".join(cut)) :] if text.startswith("".join(cut)) else "")
    return cut if "".join(cut) == text and cut[-1] in ("}", "}\n") else [text]


def archive_bytes(members: dict[str, bytes]) -> bytes:
    """The archive file of these records (name -> JSON bytes), every distinct part once."""
    known: dict[str, int] = {}
    index = {
        name: [known.setdefault(p, len(known)) for p in parts(data.decode("utf-8"))] for name, data in members.items()
    }
    head = orjson.dumps({"measure_archive": VERSION, "members": index})
    # the parts at level 6: on a month of them level 9 takes twice as long for 1% fewer bytes
    return compress(head) + compress(orjson.dumps(list(known)), level=6)


def write_archive(path: Path, members: dict[str, bytes], root: Path | None = None) -> Path:
    """Write an archive and read it back: every record must come back byte for byte before the caller may
    remove the files it came from."""
    data = archive_bytes(members)
    index, parts_ = _decode(path, data)
    if {name: _join(parts_, refs) for name, refs in index.items()} != members:
        raise MeasureError(f"{path}: the archive would not give its records back byte for byte; nothing written")
    return write_bytes(path, data, root)
