"""Seconds as a record file stores them: integers of the coarsest exact unit, one line of text per field.

Under ``wallclock``, every field named ``*_s`` whose value is a rectangular
nesting of lists of floats is stored as integers of the coarsest unit that holds
every value exactly, ``us`` (the suites record samples to the microsecond) or
``ns`` (records before that): ``{"unit": "us", "shape": [repeats, rows],
"diffs": "2710 2362 ... -81 164 ..."}``, the integers row-major as one line of
text (JSON parses one string, numpy reads the numbers in one call, and no float
or int object is made per sample). Along the first axis (the repeats) the first
item is stored as it is and each later one as its difference from the one
before, so a row's repeated timings cost their jitter, not their size; a field
:data:`OFFSETS` relates to others beside it is stored as its difference from
them. ``{"ns": ...}``, the first stored form, is still read. The whole stored
form, and the checks that it comes back bit for bit, is :mod:`measure.record.pack`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

NS = "ns"
"""The first stored form of seconds (records packed before 2026-12-04), ``{"ns": <integer ns>}``; still read."""
UNIT = "unit"
UNITS = {"us": 1e6, "ns": 1e9}
"""Stored units, coarsest first, and how many make a second: a field is stored in the first its values are whole in."""
SHAPE = "shape"
DIFFS = "diffs"
VALUES = "values"
OFFSET = "offset"
OFFSETS: dict[str, dict[str, int]] = {
    "run_s": {"wall_s": 1},
    "cpu_s": {"wall_s": 1},
    "verifier_run_s": {"run_s": 1, "drafter_run_s": -1},
}
"""Fields stored against others in the same object (``value = stored + sum(c * field)``): a session's run time is its
decode's wall time less the loop's overhead, CPU time tracks wall time, and a speculative decode's verifier time is its
run time less the drafter's, so what is stored is the small difference, not a second copy of the same magnitude."""


def _integers(value: Any) -> tuple[str, np.ndarray] | None:
    """``value`` (a non-empty rectangular nesting of lists of floats) as integers of the coarsest unit that holds
    every value exactly; None when there is none (or it is not such a nesting)."""
    if not isinstance(value, list) or not value:
        return None
    try:
        seconds = np.array(value)
    except ValueError:  # ragged
        return None
    if seconds.dtype != np.float64 or not np.isfinite(seconds).all():
        return None
    for unit, per_second in UNITS.items():
        whole = np.rint(seconds * per_second)
        if np.all(whole / per_second == seconds) and np.all(np.abs(whole) < 2**53):
            return unit, whole.astype(np.int64)
    return None


def _pack_fields(node: dict[str, Any]) -> dict[str, Any]:
    """One object's ``*_s`` fields as integers of a unit, each against the fields :data:`OFFSETS` names (when they
    are stored in the same unit and shape), repeats after the first as differences from the one before."""
    found = {k: _integers(v) for k, v in node.items() if k.endswith("_s")}
    out = {}
    for key, value in node.items():
        got = found.get(key)
        if got is None:
            out[key] = pack_seconds(value)
            continue
        unit, ints = got
        entry: dict[str, Any] = {UNIT: unit}
        offset = OFFSETS.get(key, {})
        refs = [found.get(k) for k in offset]
        if offset and all(r is not None and r[0] == unit and r[1].shape == ints.shape for r in refs):
            ints = ints - sum(c * r[1] for c, r in zip(offset.values(), refs, strict=True) if r is not None)
            entry[OFFSET] = dict(offset)
        entry[SHAPE] = list(ints.shape)
        if ints.ndim >= 2 and len(ints) >= 2:
            entry[DIFFS] = _text(np.concatenate([ints[:1], np.diff(ints, axis=0)]))
        else:
            entry[VALUES] = _text(ints)
        out[key] = entry
    return out


def pack_seconds(node: Any) -> Any:
    if isinstance(node, list):
        return [pack_seconds(v) for v in node] if nested(node) else node
    return _pack_fields(node) if isinstance(node, dict) else node


def _text(ints: np.ndarray) -> str:
    """Integers as one line of decimal numbers, row-major: JSON reads it as one string, numpy in one call."""
    return " ".join(map(str, ints.ravel().tolist()))


LARGEST = 10**15
"""Larger values are refused: 31 years in microseconds (no sum of the few stored numbers that make one overflows,
and numpy saturates a longer number it reads at 9.2e18)."""


def _read_text(key: str, text: Any, shape: Any) -> np.ndarray:
    """The integers :func:`_text` wrote, in ``shape``; anything else names the field.

    numpy reads the line in one call and stops at the first thing that is not an integer, which
    :func:`unpack` turns from a warning into an error, so a fraction or a word is never read as a prefix.
    """
    if not isinstance(shape, list) or not shape or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"field {key}: packed seconds need a shape, a list of counts")
    if not isinstance(text, str):
        raise ValueError(f"field {key}: packed seconds are not integers one space apart")
    try:
        ints = np.fromstring(text, dtype=np.int64, sep=" ") if text.strip() else np.zeros(0, dtype=np.int64)
    except (ValueError, DeprecationWarning) as exc:
        raise ValueError(f"field {key}: packed seconds are not integers one space apart") from exc
    if ints.size != math.prod(shape):
        raise ValueError(f"field {key}: {ints.size} packed seconds do not fill the shape {shape}")
    return ints.reshape(shape)


def _stored_ints(key: str, value: Any) -> np.ndarray:
    try:
        ints = np.array(value)
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"field {key}: packed seconds are not a rectangular nesting of integers ({exc})") from exc
    if ints.dtype != np.int64 or ints.ndim == 0:
        raise ValueError(f"field {key}: packed seconds are not whole nanoseconds or microseconds (integers)")
    return ints


def _seconds_of(key: str, entry: dict[str, Any], done: dict[str, np.ndarray]) -> np.ndarray:
    """One packed field as integers of its unit; fields it is stored against come from ``done``."""
    if (DIFFS in entry) == (VALUES in entry) or set(entry) - {UNIT, OFFSET, SHAPE, DIFFS, VALUES}:
        raise ValueError(f"field {key}: packed seconds need a unit, a shape and one of diffs or values")
    ints = _read_text(key, entry.get(DIFFS, entry.get(VALUES)), entry.get(SHAPE))
    if DIFFS in entry:
        ints = np.cumsum(ints, axis=0)
    for name, c in (entry.get(OFFSET) or {}).items():
        if name not in done or done[name].shape != ints.shape or type(c) is not int:
            raise ValueError(f"field {key}: stored against {name}, which is not packed beside it in the same shape")
        ints = ints + c * done[name]
    return ints


def _packed(value: Any) -> bool:
    return isinstance(value, dict) and UNIT in value


@dataclass(frozen=True)
class Unpacked:
    """One seconds field made from packed integers: rectangular floats by construction, so schema validation
    may read a stand-in of it (:func:`stand_in`) instead of every value."""

    parent: dict[str, Any]
    key: str
    lo: float
    hi: float
    depth: int


def stand_in(span: Unpacked) -> list[Any]:
    """What the schema can say of the field, in four numbers' room: its nesting depth, and its least and greatest
    value (every range the schema sets holds for all values when it holds for these two)."""
    value: list[Any] = [span.lo, span.hi]
    for _ in range(span.depth - 1):
        value = [value]
    return value


@dataclass(frozen=True)
class _Reading:
    spans: list[Unpacked] | None
    arrays: bool


def _note(reading: _Reading, out: dict[str, Any], key: str, ints: np.ndarray, per_second: float) -> Any:
    """The field's floats (see :func:`unpack` for ``arrays``), noted in ``spans`` with what its stand-in needs.

    The least and greatest value are found on the integers: dividing by a positive unit keeps their order
    and rounds each quotient alone, so they are the least and greatest of the floats too.
    """
    if ints.size:
        lo, hi = int(ints.min()), int(ints.max())
        if max(-lo, hi) >= LARGEST:
            raise ValueError(f"field {key}: a packed value is {LARGEST:,} units or more; not a duration")
        if reading.spans is not None:
            reading.spans.append(Unpacked(out, key, lo / per_second, hi / per_second, ints.ndim))
    seconds = ints / per_second
    if reading.arrays:
        seconds.flags.writeable = False
        return seconds
    return seconds.tolist()


def _unpack_fields(node: dict[str, Any], reading: _Reading) -> dict[str, Any]:
    pending = {k: v for k, v in node.items() if k.endswith("_s") and _packed(v)}
    done: dict[str, np.ndarray] = {}
    while pending:
        ready = [k for k, v in pending.items() if not set(v.get(OFFSET) or {}) & set(pending)]
        if not ready:
            raise ValueError(f"field {next(iter(pending))}: packed seconds stored against each other in a circle")
        for key in ready:
            entry = pending.pop(key)
            if entry[UNIT] not in UNITS or not isinstance(entry.get(OFFSET, {}), dict):
                raise ValueError(f"field {key}: packed seconds in unit {entry[UNIT]!r}; expected us or ns")
            done[key] = _seconds_of(key, entry, done)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in done:
            out[key] = _note(reading, out, key, done[key], UNITS[value[UNIT]])
        elif key.endswith("_s") and isinstance(value, dict) and list(value) == [NS] and isinstance(value[NS], list):
            out[key] = _note(reading, out, key, _stored_ints(key, value[NS]), 1e9)
        else:
            out[key] = _unpack_node(value, reading)
    return out


def _unpack_node(node: Any, reading: _Reading) -> Any:
    if isinstance(node, list):
        return [_unpack_node(v, reading) for v in node] if nested(node) else node
    return _unpack_fields(node, reading) if isinstance(node, dict) else node


def nested(node: list[Any]) -> bool:
    """Whether a list holds objects or lists to walk into, judged by its first item: a row of numbers, and
    rows of numbers (token ids per row), are passed over in one step (a list mixing both is left as it is,
    which loses nothing)."""
    if not node:
        return False
    first = node[0]
    if type(first) is list:
        return bool(first) and type(first[0]) in (dict, list)
    return type(first) is dict


def unpack_seconds(node: Any, spans: list[Unpacked] | None, arrays: bool) -> Any:
    """The wall-clock part with every packed field read back (see :func:`measure.record.pack.unpack`)."""
    return _unpack_node(node, _Reading(spans, arrays))
