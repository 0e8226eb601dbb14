"""What a number from a tier's config files may be before measure allocates by it.

A config number that sizes an allocation (a cache buffer of ``max_length`` or
``max_position_embeddings`` positions, a logits row of ``vocab_size``) is
checked here first: a value no machine could hold is a config error naming the
file and the field, never numpy's ``MemoryError`` from inside a decode.
"""

from __future__ import annotations

import os
from pathlib import Path

from measure.errors import MeasureError


def machine_bytes() -> int:
    """This machine's physical memory (what no single allocation of a run can exceed)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):  # not every platform names them
        return 1 << 40


def _size(n: float) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n / 1024:.3g} KiB"


def require_fits(source: Path | str, field: str, value: int, need_bytes: int, what: str) -> None:
    """Refuse ``field = value`` when the ``what`` it sizes (``need_bytes``) exceeds this machine's memory."""
    have = machine_bytes()
    if need_bytes > have:
        raise MeasureError(
            f"{source}: field {field}: {value} would need {_size(need_bytes)} for {what}; this machine has "
            f"{_size(have)} of memory (expected a value the model was built for)"
        )
