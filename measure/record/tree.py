"""The results tree: ``<results>/<machine-id>/<run-id>.json`` (or ``.json.gz``), a ``calibration.json`` per machine.

Every folder query is written here once: which files are records, the newest
complete record per machine (optionally at one commit), the newest complete
record of each part (wall-clock, cost profile, framing, instruction counts) per
machine, which machine the Overview answers for, and where a machine's
calibration lives. Commands, the calibration and the site all ask this module,
so "the current record" means the same thing on every page and in every gate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from measure.errors import MeasureError, SettingError
from measure.record import archive
from measure.record.io import RUN_ID, load, record_stem, write_atomic
from measure.record.model import PARTS

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


class Carrying(Dated, Protocol):
    """A record or summary that says which parts it carries (``Record.parts``)."""

    @property
    def parts(self) -> tuple[str, ...]: ...


T = TypeVar("T", bound=Dated)
C = TypeVar("C", bound=Carrying)


def record_paths(results: Path) -> list[Path]:
    """Every record under a results tree, oldest run first; conflict copies and other files are not records."""
    if not results.is_dir():
        # a mistyped path in CI must not publish a site that says "no run"
        what = "is not a folder" if results.exists() else "no such folder"
        raise MeasureError(f"{results}: {what}; expected a results tree of <machine-id>/<run-id>.json")
    found = [p for pattern in ("*/*.json", "*/*.json.gz") for p in results.glob(pattern)]
    found += [a / name for a in results.glob(f"*/*{archive.SUFFIX}") for name in archive.member_names(a)]
    return sorted(
        (p for p in found if RUN_ID.fullmatch(record_stem(p))),
        key=lambda p: (record_stem(p), archive.machine_folder(p).name, p.name, str(p)),
    )


@dataclass(frozen=True)
class Entry:
    """A validated record file and what the folder queries read of it (the record itself is not kept)."""

    path: Path
    run_id: str
    machine_id: str
    started_at: str
    complete: bool
    commit: str | None
    parts: tuple[str, ...] = ()


def entries(results: Path) -> list[Entry]:
    """Every record of a tree, each loaded and validated once (a bad one is a one-line error naming it)."""
    out = []
    for path in record_paths(results):
        r = load(path)
        out.append(Entry(path, r.run_id, r.machine_id, r.started_at, r.complete, r.commit, r.parts))
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


def newest_parts(items: Iterable[C], machine: str) -> dict[str, C]:
    """Part -> the newest complete record of ``machine`` that carries it (parts in :data:`PARTS` order).

    This is the machine's current state, suite by suite: after ``measure run --suite wallclock`` the
    wall-clock part is that run's, the framing part still the one of the run before.
    """
    found: dict[str, C] = {}
    for r in in_time_order(items):
        if r.complete and r.machine_id == machine:
            found.update(dict.fromkeys(r.parts, r))
    return {p: found[p] for p in PARTS if p in found}


def current_parts(items: Iterable[C]) -> dict[str, dict[str, C]]:
    """Machine id -> its :func:`newest_parts`, machines in name order (those with a complete record only)."""
    items = list(items)
    machines = sorted({r.machine_id for r in items if r.complete})
    return {m: found for m in machines if (found := newest_parts(items, m))}


@dataclass(frozen=True)
class Reference:
    """The machine the Overview answers for, and why that one."""

    machine: str
    records: int
    """Its complete records."""
    chosen: bool
    """Named by the site's config (else picked by the rule below)."""
    tied: tuple[str, ...] = ()
    """Other machines with as many complete records, passed over by id order."""


def reference_machine(items: Iterable[Dated], chosen: str | None = None) -> Reference | None:
    """``chosen`` when given, else the machine with the most complete records; a tie goes to the first machine id
    in sort order, so the answer does not flip with whichever runner finished last. None for a tree with no
    complete record (a fresh checkout, whatever is chosen); a ``chosen`` machine without one in a tree that has
    records is an error naming it and the machines there are (a typo must not publish another machine's answer)."""
    counts: dict[str, int] = {}
    for r in items:
        if r.complete:
            counts[r.machine_id] = counts.get(r.machine_id, 0) + 1
    if not counts:
        return None
    if chosen:
        if chosen not in counts:
            there = ", ".join(sorted(counts))
            raise SettingError("reference_machine", f"no complete record of machine {chosen!r} (machines: {there})")
        return Reference(chosen, counts[chosen], chosen=True)
    most = max(counts.values())
    machine, *tied = sorted(m for m, n in counts.items() if n == most)
    return Reference(machine, most, chosen=False, tied=tuple(tied))


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
