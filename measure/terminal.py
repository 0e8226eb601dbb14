"""Text bound for a terminal: record strings never reach it raw.

A record is data from anywhere (a merged CI artifact, a hand-edited file); a
string in it may hold escape sequences that move the cursor, retitle the
window or hide what follows. :func:`clean` turns every control character
(C0, DEL and C1, escape sequences included) into a visible ``\\xNN`` or
``\\uNNNN`` escape, so what is printed is what is stored, inert.

What ``--json`` prints is read by programs: :func:`strict_json` never prints NaN or Infinity (Python's
``json`` writes them by default, and no strict parser reads them back).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from measure.errors import MeasureError

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: object) -> str:
    """``str(value)`` with every control character (and bidirectional override) shown as an escape."""
    return _CONTROL.sub(_escape, str(value))


def columns(rows: list[list[str]], right: set[int] | frozenset[int] = frozenset(), indent: str = "  ") -> list[str]:
    """Rows of cells as lines whose columns never run together: each column as wide as its widest cell (the
    header included), two spaces between; the columns in ``right`` aligned right. An interval with its level
    ("581.954 [567.299, 628.629] at 75.0%") or a seconds-long row percentile widens its column, whatever the
    magnitude, instead of spilling into the next."""
    if not rows:
        return []
    widths = [max(len(row[i]) if i < len(row) else 0 for row in rows) for i in range(max(map(len, rows)))]
    out = []
    for row in rows:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row)]
        out.append((indent + "  ".join(cells)).rstrip())
    return out


def strict_json(value: object, **options: Any) -> str:
    """``json.dumps(value, **options)`` refusing NaN and infinities: one in ``value`` is a one-line error naming
    where it lies (``kld_mean.value``), never output that no strict JSON parser reads."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError as exc:
        where = _nonfinite(value, "")
        raise MeasureError(
            f"--json: {where or 'a value'} is not a finite number (NaN or infinity), which JSON cannot hold; "
            "nothing was printed"
        ) from exc


def _nonfinite(value: object, at: str) -> str | None:
    """The dotted path (``a.b[2]``) of the first NaN or infinite float in ``value``, and the value."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{at or 'the value'} = {value}"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list | tuple) else ()
    for key, item in items:
        found = _nonfinite(item, f"{at}[{key}]" if isinstance(key, int) else f"{at}.{key}" if at else str(key))
        if found is not None:
            return found
    return None
