"""The process's peak resident set, read where it is this process's own, with its unit stated.

``getrusage(RUSAGE_SELF).ru_maxrss`` counts kibibytes on Linux and bytes on
macOS (getrusage(2) on each). On Linux it is also no use for a worker
process: the kernel keeps the larger of the old and new peaks across
``fork`` + ``exec`` (``setmax_mm_hiwater_rss`` in ``exec_mmap``), so a
worker started by a 200 MB parent reports at least 200 MB whatever it does.
There the peak is read from ``VmHWM`` in ``/proc/self/status`` (kB, the
high-water mark of this process image alone); elsewhere from ``ru_maxrss``.
The record keeps the source, the unit and the bytes, so no reader guesses.
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RU_MAXRSS_UNIT_BYTES = {"darwin": 1}
"""Bytes per ``ru_maxrss`` unit by ``sys.platform``; every other supported platform (Linux) counts KiB."""
STATUS = Path("/proc/self/status")


@dataclass(frozen=True)
class PeakRss:
    bytes: int
    source: str
    """``VmHWM`` (/proc/self/status) or ``ru_maxrss`` (getrusage)."""
    raw: int
    """The value as the source gave it."""
    unit_bytes: int
    """Bytes per unit of ``raw``: 1024 for VmHWM and Linux ru_maxrss, 1 for macOS ru_maxrss."""
    platform: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "source": self.source,
            "raw": self.raw,
            "unit_bytes": self.unit_bytes,
            "platform": self.platform,
        }


def _vm_hwm_kib() -> int | None:
    try:
        for line in STATUS.read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss() -> PeakRss:
    """This process's peak resident set so far."""
    hwm = _vm_hwm_kib() if sys.platform.startswith("linux") else None
    if hwm is not None:
        return PeakRss(hwm * 1024, "VmHWM", hwm, 1024, sys.platform)
    raw = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    unit = RU_MAXRSS_UNIT_BYTES.get(sys.platform, 1024)
    return PeakRss(raw * unit, "ru_maxrss", raw, unit, sys.platform)
