"""Raw JSON values as the record views hold them: read-only numpy arrays (repeats x rows) and int tuples."""

from __future__ import annotations

from typing import Any

import numpy as np


def array(rows: list[list[float]]) -> np.ndarray:
    a = np.asarray(rows, dtype=float)
    if a.ndim != 2:
        a = a.reshape(len(rows), -1)
    a.flags.writeable = False
    return a


def ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values or ())


def vector(values: Any) -> np.ndarray:
    a = np.asarray(values or [], dtype=float)
    a.flags.writeable = False
    return a


def table(rows: list[list[float]], width: int) -> np.ndarray:
    """Repeats x ``width`` samples; zero repeats (a run stopped before the first) gives an empty table."""
    if not rows:
        a = np.zeros((0, width))
        a.flags.writeable = False
        return a
    return array(rows)


def cube(values: list[list[list[float]]], widths: int, rows: int) -> np.ndarray:
    """Repeats x widths x rows, read-only; zero repeats give an empty cube of the right shape."""
    a = np.asarray(values, dtype=float).reshape(len(values), widths, rows)
    a.flags.writeable = False
    return a
