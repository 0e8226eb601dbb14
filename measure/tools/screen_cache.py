"""What ``measure explore``'s screening measured, kept beside the tiers it judged (``OUT/screening.json``).

A search run again (a larger budget after one was refused, another role, one more recipe in the grid) judges
the figures it kept instead of decoding them again: on SmolLM2-135M the screening of the default grid took six
minutes of a twenty-minute budget, and a budget refused after it lost them all.

An entry is one tier screened against one reference on the first N golden rows. Its key is what the figures
rest on: measure's version, the golden rows (their sha256 and N), and the files of both folders (name, size,
modification time), so a tier made again or a reference changed is screened again. The policy is no part of the
key: the figures are judged afresh each time. The file only saves time, so one that cannot be read or written
is said in a line and the pass measures as if it were not there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import measure
from measure.errors import MeasureError
from measure.suites.golden import GoldenRows
from measure.writing import json_text, write_text

NAME = "screening.json"
FORMAT = 1
"""The file's own layout version: another one is read as empty."""


@dataclass(frozen=True)
class Screened:
    """A tier's fidelity part from an earlier screening, and the seconds a row took it and its reference."""

    part: dict[str, Any]
    tier_row_s: float
    reference_row_s: float


def folder_files(folder: Path) -> list[list[Any]]:
    """Every file under ``folder`` as (relative name, bytes, mtime in ns): what a tier or a reference is made of."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        found.append([path.relative_to(folder).as_posix(), stat.st_size, stat.st_mtime_ns])
    return found


def screen_key(reference: list[list[Any]], tier: Path, golden: GoldenRows) -> dict[str, Any]:
    """What a tier's screening figures rest on (``reference``: its reference's :func:`folder_files`, walked once
    for all its tiers); an entry stands only while all of it is unchanged."""
    return {
        "measure": measure.__version__,
        "golden": {"sha256": golden.sha256, "rows": len(golden)},
        "reference": reference,
        "tier": folder_files(tier),
    }


@dataclass
class ScreenCache:
    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    note: str | None = None
    """Why the file was not read or not written (said once by the pass), None while all is well."""

    @classmethod
    def open(cls, folder: Path) -> ScreenCache:
        """The cache of ``folder`` (explore's ``--out``); empty where there is none or it cannot be read."""
        path = folder / NAME
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            return cls(path, note=f"{path}: not read ({exc}); every tier is screened again")
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("tiers"), dict):
            return cls(path, note=f"{path}: not a screening cache of format {FORMAT}; every tier is screened again")
        return cls(path, {k: v for k, v in doc["tiers"].items() if isinstance(v, dict)})

    def get(self, tier: str, key: dict[str, Any]) -> Screened | None:
        entry = self.entries.get(tier)
        if entry is None or entry.get("key") != key:
            return None
        try:
            return Screened(dict(entry["part"]), float(entry["tier_row_s"]), float(entry["reference_row_s"]))
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, tier: str, key: dict[str, Any], screened: Screened) -> None:
        """Keep one tier's screening and rewrite the file (a pass stopped later keeps what it measured)."""
        self.entries[tier] = {
            "key": key,
            "part": screened.part,
            "tier_row_s": screened.tier_row_s,
            "reference_row_s": screened.reference_row_s,
        }
        try:
            write_text(self.path, json_text({"format": FORMAT, "tiers": self.entries}, self.path))
        except (MeasureError, OSError) as exc:
            self.entries.pop(tier)
            self.note = self.note or f"{self.path}: not written ({exc}); the next search screens again"
