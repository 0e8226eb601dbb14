"""Which records of a results tree go into month archives, and putting them there (``measure archive``).

A machine's month is archived once it is over: every month before the newest record's, leaving each machine's
newest :data:`KEEP` runs as their own files (a run page offers its record file; the newest are the ones read
again). Late records of an archived month are folded into its archive by the next ``measure archive``. Nothing is
removed until the archive holding it has been written and read back byte for byte.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from measure.errors import MeasureError
from measure.record import archive
from measure.record.io import read_bytes, record_stem
from measure.record.tree import record_paths

KEEP = 20
"""Each machine's newest runs left as their own files (as many as the site gives a page of their own)."""


@dataclass(frozen=True)
class Archived:
    path: Path
    records: int
    """Records the archive holds now."""
    added: int
    """Record files folded in (and removed)."""
    before: int
    """Bytes of the files it replaced (the added records and the archive as it was)."""
    after: int


def _month(path: Path) -> str:
    stem = record_stem(path)
    return f"{stem[:4]}-{stem[4:6]}"


def due(results: Path, keep: int = KEEP) -> dict[Path, list[Path]]:
    """Archive file -> the record files to fold into it: every month of a machine before the tree's newest
    month, less each machine's newest ``keep`` runs. Months are read from the run ids (``YYYYMMDD...``)."""
    paths = record_paths(results)
    if not paths:
        return {}
    newest = max(_month(p) for p in paths)
    by_machine: dict[Path, list[Path]] = defaultdict(list)
    for p in paths:
        by_machine[(archive.container(p) or p).parent].append(p)
    out: dict[Path, list[Path]] = defaultdict(list)
    for folder, runs in by_machine.items():
        runs.sort(key=lambda p: record_stem(p))
        kept = set(runs[-keep:]) if keep > 0 else set()
        for p in runs:
            if archive.container(p) is None and p not in kept and _month(p) < newest:
                out[folder / f"{_month(p)}{archive.SUFFIX}"].append(p)
    return dict(out)


def archive_months(results: Path, keep: int = KEEP) -> list[Archived]:
    """Fold every due record file into its month's archive (see :func:`due`); a file is removed only once the
    archive holding it has been written and read back byte for byte."""
    done = []
    for target, files in sorted(due(results, keep).items()):
        members = archive.read_archive(target) if target.exists() else {}
        before = target.stat().st_size if target.exists() else 0
        for path in files:
            data = read_bytes(path)  # as it is: an archive gives back the bytes it was given, valid or not
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:  # an archive holds text parts: these bytes could not come back
                raise MeasureError(
                    f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); a record is UTF-8 JSON; nothing "
                    f"archived for this month (repair or move the file, then archive again)"
                ) from exc
            name = f"{record_stem(path)}.json"
            if name in members and members[name] != data:
                raise MeasureError(
                    f"{path}: run {record_stem(path)} is already in {target} with other content; "
                    "nothing archived for this month (keep one of the two)"
                )
            members[name] = data
            before += path.stat().st_size
        archive.write_archive(target, dict(sorted(members.items())), results)
        for path in files:
            path.unlink()
        done.append(Archived(target, len(members), len(files), before, target.stat().st_size))
    return done
