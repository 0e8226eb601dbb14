"""Merge run records from many folders (downloaded CI artifacts) into one results tree.

Each record lands at ``<machine_id>/<run_id>.json`` as its own content says,
whatever folder it came in. A record already there with the same content
(canonical JSON, so key order and whitespace do not matter) is counted once;
one with the same ids but other content is a conflict: it is kept beside the
existing file as ``<run_id>.conflict-<hash>.json`` and reported, and the
existing file is never overwritten. Conflict files do not match the run-id
pattern, so no page or gate counts them twice. A file that is not a valid
record is reported by name and skipped; everything else still merges. The
same content under two file names is merged (and counted) once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from measure.errors import MeasureError
from measure.record import archive
from measure.record.io import load_record, read_bytes, record_name
from measure.record.pack import compress, is_gzip
from measure.writing import write_bytes


def content_hash(doc: dict) -> str:
    import orjson

    return hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class MergeReport:
    added: list[Path] = field(default_factory=list)
    duplicates: list[Path] = field(default_factory=list)
    """Sources whose content was already in the tree (or earlier in this merge)."""
    conflicts: list[tuple[Path, Path]] = field(default_factory=list)
    """(source, where it was kept) for same ids with other content."""
    invalid: list[str] = field(default_factory=list)
    """One line per file that is not a valid record: the file and what is wrong."""


def _hash_of_file(path: Path) -> str:
    return content_hash(load_record(path))


def merge(sources: list[Path], into: Path, gzipped: bool = False) -> MergeReport:
    """Merge every record under ``sources`` into ``into``; only ``into`` is written, and only inside it.

    ``gzipped``: new records land as ``<run-id>.json.gz`` (their JSON bytes as they came, gzipped), so a
    results branch stays small; a record already in the tree counts whichever of the two names it has.

    A corrupt file already in the tree is reported and left alone (the record
    that would go there is kept beside it as a conflict), so one bad file
    never stops the rest. Records with the same content count once, whatever
    their file names.
    """
    report = MergeReport()
    seen: set[str] = set()
    for path in record_files(sources, into):
        try:
            doc = load_record(path)
        except MeasureError as exc:
            report.invalid.append(str(exc))
            continue
        digest = content_hash(doc)
        if digest in seen:
            report.duplicates.append(path)
            continue
        seen.add(digest)
        _place(path, doc, digest, into, report, gzipped)
    return report


def record_files(sources: list[Path], into: Path) -> list[Path]:
    """The record files under ``sources``, in order: no calibration file, no conflict copy."""
    if into.exists() and not into.is_dir():
        raise MeasureError(f"{into}: --into is not a folder; expected a results tree (or a new folder)")
    for src in sources:
        if not src.exists():
            raise MeasureError(f"{src}: no such file or folder to merge")
    files = sorted(
        {p for src in sources for p in ([src] if src.is_file() else [*src.rglob("*.json"), *src.rglob("*.json.gz")])}
    )
    # a month archive's records merge one by one, as the files they were
    files = [m for p in files for m in ([p / n for n in archive.member_names(p)] if archive.is_archive(p) else [p])]
    return [p for p in files if p.name != "calibration.json" and ".conflict-" not in p.name]


def _place(path: Path, doc: dict, digest: str, into: Path, report: MergeReport, gzipped: bool) -> None:
    """File one new record at ``<machine-id>/<run-id>.json`` (or ``.json.gz``), or beside a different one there
    as a conflict."""
    folder = into / doc["machine_id"]
    names = [folder / record_name(doc["run_id"], z) for z in (gzipped, not gzipped)]
    found = next((p for p in names if p.exists() or p.is_symlink()), None) or _archived(folder, doc["run_id"])
    target = found or names[0]
    if target.resolve() == path.resolve():
        return
    if found is None:
        _copy(path, target, into)
        report.added.append(target)
        return
    try:
        same = not target.is_symlink() and _hash_of_file(target) == digest
    except MeasureError as exc:
        report.invalid.append(f"{exc} (already in the tree; left as it is)")
        same = False
    kept = folder / f"{doc['run_id']}.conflict-{digest[:12]}.json{'.gz' if gzipped else ''}"
    if same or kept.exists():
        report.duplicates.append(path)
    else:
        _copy(path, kept, into)
        report.conflicts.append((path, kept))


def _archived(folder: Path, run_id: str) -> Path | None:
    """The run's record in its month's archive in ``folder`` (``measure archive``), if that holds it."""
    box = folder / f"{run_id[:4]}-{run_id[4:6]}{archive.SUFFIX}"
    name = record_name(run_id)
    return box / name if box.is_file() and name in archive.member_names(box) else None


def _copy(src: Path, dst: Path, into: Path) -> None:
    """Copy a record into the tree: atomically, inside it, never through a symlink; its JSON bytes as they are,
    gzipped when ``dst`` is a ``.json.gz``."""
    data = read_bytes(src)
    write_bytes(dst, compress(data) if is_gzip(dst) else data, root=into)
