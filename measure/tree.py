"""The results tree: ``<results>/<machine-id>/<run-id>.json`` plus one ``calibration.json`` per machine.

Every folder query is written here once: which files are records, the newest
complete record per machine (optionally at one commit), and where a machine's
calibration lives. Commands, the calibration and the site all ask this module,
so "the current record" means the same thing on every page and in every gate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from measure.errors import MeasureError
from measure.record import RUN_ID, load, write_atomic

CALIBRATION_FILE = "calibration.json"


class Dated(Protocol):
    """What the folder queries read of a record or of its cached summary."""

    @property
    def run_id(self) -> str: ...
    @property
    def machine_id(self) -> str: ...
    @property
    def started_at(self) -> str: ...
    @property
    def complete(self) -> bool: ...
    @property
    def commit(self) -> str | None: ...


T = TypeVar("T", bound=Dated)


def record_paths(results: Path) -> list[Path]:
    """Every record under a results tree, oldest run first; conflict copies and other files are not records."""
    if not results.is_dir():
        # a mistyped path in CI must not publish a site that says "no run"
        what = "is not a folder" if results.exists() else "no such folder"
        raise MeasureError(f"{results}: {what}; expected a results tree of <machine-id>/<run-id>.json")
    found = (p for p in results.glob("*/*.json") if RUN_ID.fullmatch(p.stem))
    return sorted(found, key=lambda p: (p.stem, p.parent.name))


@dataclass(frozen=True)
class Entry:
    """A validated record file and what the folder queries read of it (the record itself is not kept)."""

    path: Path
    run_id: str
    machine_id: str
    started_at: str
    complete: bool
    commit: str | None


def entries(results: Path) -> list[Entry]:
    """Every record of a tree, each loaded and validated once (a bad one is a one-line error naming it)."""
    out = []
    for path in record_paths(results):
        r = load(path)
        out.append(Entry(path, r.run_id, r.machine_id, r.started_at, r.complete, r.commit))
    return out


def in_time_order(items: Iterable[T]) -> list[T]:
    return sorted(items, key=lambda r: (r.started_at, r.run_id))


def newest(items: Iterable[T], machine: str | None = None, commit: str | None = None) -> T | None:
    """The newest complete record, of one machine and (by prefix) one commit when given."""
    found = None
    for r in in_time_order(items):
        if not r.complete or machine not in (None, r.machine_id):
            continue
        if commit is not None and not (r.commit or "").startswith(commit):
            continue
        found = r
    return found


def newest_per_machine(items: Iterable[T]) -> dict[str, T]:
    """Machine id -> its newest complete record, machines in name order."""
    latest: dict[str, T] = {}
    for r in in_time_order(items):
        if r.complete:
            latest[r.machine_id] = r
    return dict(sorted(latest.items()))


def by_machine(items: Iterable[T]) -> dict[str, list[T]]:
    """Machine id -> its complete records, oldest first."""
    out: dict[str, list[T]] = {}
    for r in in_time_order(items):
        if r.complete:
            out.setdefault(r.machine_id, []).append(r)
    return dict(sorted(out.items()))


def calibration_path(results: Path, machine_id: str) -> Path:
    return results / machine_id / CALIBRATION_FILE


def read_calibration(results: Path, machine_id: str) -> tuple[Path, Any] | None:
    """The parsed JSON of a machine's calibration file, or None when none was written."""
    import orjson

    path = calibration_path(results, machine_id)
    if not path.is_file():
        return None
    try:
        return path, orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise MeasureError(f"{path}: not a readable JSON calibration ({exc})") from exc


def write_calibration(results: Path, machine_id: str, doc: dict[str, Any]) -> Path:
    path = calibration_path(results, machine_id)
    write_atomic(path, doc, root=results)
    return path
