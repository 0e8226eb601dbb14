"""Raw JSON values as the record views hold them: read-only numpy arrays (repeats x rows) and int tuples."""

from __future__ import annotations

from typing import Any

import numpy as np


def floats(values: Any) -> np.ndarray:
    """``values`` as a float array: a packed field read as one already (read-only, shared), or a new one."""
    return np.asarray(values, dtype=float)


def present(values: Any) -> bool:
    """Whether a field holds samples: a non-empty list, or array (a packed field may arrive as one)."""
    return values is not None and len(values) > 0


def array(rows: list[list[float]]) -> np.ndarray:
    """Repeats x rows, read-only; no repeat at all gives an empty table."""
    a = floats(rows)
    if a.ndim != 2:
        a = a.reshape(len(rows), -1) if a.size else np.zeros((len(rows), 0))
    a.flags.writeable = False
    return a


def ints(values: Any) -> tuple[int, ...]:
    return tuple(map(int, values or ()))


def vector(values: Any) -> np.ndarray:
    a = floats(values if present(values) else [])
    a.flags.writeable = False
    return a


def table(rows: list[list[float]], width: int) -> np.ndarray:
    """Repeats x ``width`` samples; zero repeats (a run stopped before the first) gives an empty table."""
    if not present(rows):
        a = np.zeros((0, width))
        a.flags.writeable = False
        return a
    return array(rows)


def cube(values: list[list[list[float]]], widths: int, rows: int) -> np.ndarray:
    """Repeats x widths x rows, read-only; zero repeats give an empty cube of the right shape."""
    a = floats(values).reshape(len(values), widths, rows)
    a.flags.writeable = False
    return a
