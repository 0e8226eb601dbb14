"""A results tree read for the pages and the verbs: a summary per distinct record, through the cache.

Records not hashed before are read once each, in worker processes when there are many; a fresh checkout's
records are named by their git blob ids (:mod:`measure.record.blobs`) so a committed index spares hashing them.
What the pages compute from the summaries is :mod:`measure.analysis`'s; this stage only finds and reads.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.analysis.calibration import Calibration
from measure.analysis.summary import Summary, summarize_record
from measure.errors import MeasureError
from measure.record import archive
from measure.record.blobs import git_blobs
from measure.record.io import load, load_record, read_bytes
from measure.record.model import Record, from_document
from measure.record.tree import record_paths
from measure.results.cache import SummaryCache, file_sha256, summary_workers
from measure.results.calibration_file import load_calibration

PARALLEL_MIN = 16
"""Unhashed records from which a build reads them in worker processes (fewer are quicker in-process)."""


@dataclass(frozen=True)
class Loaded:
    """A results tree as the site reads it: a summary per distinct record, and where each came from."""

    root: Path
    summaries: list[Summary]
    paths: dict[str, Path]
    """sha256 -> the record's file."""

    def record(self, summary: Summary, suites: bool = True) -> Record:
        """The full record a summary came from; ``suites=False`` leaves out the wall-clock and framing parts
        (a run page needs the environment, tiers and config only)."""
        return self.reread(summary, suites)[0]

    def reread(self, summary: Summary, suites: bool = True) -> tuple[Record, bool]:
        """:meth:`record`, and whether the file still holds the bytes its summary was made of (what is derived
        from it may then be cached under the summary's sha256). Such bytes were validated when the summary was
        made; anything else is validated again."""
        path = self.paths[summary.sha256]
        data = read_bytes(path)
        same = file_sha256(data) == summary.sha256
        without = () if suites else ("wallclock", "framing")
        doc = load_record(path, data, validated=same, without=without, arrays=True)
        return from_document(doc, str(path)), same

    def stored(self, summary: Summary) -> Stored:
        """The record a summary came from as it is published: the file the results tree stores (copied, never
        read: gzipped as the results branch keeps it), or a month archive's member as the JSON it holds."""
        path = self.paths[summary.sha256]
        suffix = ".json.gz" if path.name.endswith(".json.gz") else ".json"
        text = read_bytes(path).decode("utf-8") if archive.container(path) else None
        return Stored(path, suffix, text)

    def calibrations(self, machines: Iterable[str]) -> dict[str, Calibration | None]:
        """Each machine's recorded calibration (``<results>/<machine-id>/calibration.json``), None where none was
        written."""
        return {m: load_calibration(self.root, m) for m in machines}


@dataclass(frozen=True)
class Stored:
    """A record's file as a site publishes it."""

    path: Path
    suffix: str
    """``.json.gz`` for a file stored gzipped, else ``.json`` (a month archive's member too)."""
    text: str | None
    """A month archive's member: the JSON it holds, written out (the archive itself is not published)."""


@dataclass(frozen=True)
class Read:
    """What reading one record file not hashed before gave: its sha256, and its summary or why it has none."""

    sha256: str
    summary: Summary | None
    cached: bool
    """The summary came from the cache (a committed index on a fresh clone), not from the record."""
    error: MeasureError | None = None
    stored: bool = False
    """The worker wrote the new summary into the cache folder itself (the main process need not)."""


def _summarize_file(path: Path, folder: Path | None) -> Read:
    """Hash one record file and summarize it, or take its summary from ``folder``'s cache when that holds it.

    Runs in worker processes on a cold build, so each file is read once, by one process. A bad record comes
    back as its error: a second file with a good record's bytes is skipped as a duplicate, never judged.
    """
    data = read_bytes(path)
    sha = file_sha256(data)
    store = SummaryCache(folder) if folder is not None else None
    cached = store.summary(sha) if store is not None else None
    if cached is not None:
        return Read(sha, cached, True)
    try:
        summary = summarize_record(load(path, data), sha)
    except MeasureError as exc:
        return Read(sha, None, False, exc)
    if store is not None:  # written here, in parallel, rather than one by one in the main process
        store.put_summary(summary)
    return Read(sha, summary, False, stored=store is not None)


def _summarize_group(paths: list[Path], folder: Path | None) -> list[Read]:
    return [_summarize_file(path, folder) for path in paths]


def _summarize_all(paths: list[Path], folder: Path | None) -> list[Read]:
    """:func:`_summarize_file` of each path, in that order; a month archive's members are read by one process,
    one after another, so each archive is opened once (:func:`measure.record.archive.read_archive`)."""
    workers = summary_workers()
    if len(paths) < PARALLEL_MIN or workers < 2:
        ordered = sorted(paths, key=lambda p: (str(archive.container(p) or ""), str(p)))
        read = dict(zip(ordered, _summarize_group(ordered, folder), strict=True))
        return [read[path] for path in paths]
    from concurrent.futures import ProcessPoolExecutor

    archives: dict[Path, list[Path]] = {}
    loose: list[Path] = []
    for path in paths:
        box = archive.container(path)
        (archives.setdefault(box, []) if box is not None else loose).append(path)
    size = max(1, min(16, len(paths) // (4 * workers)))  # 16 at most: the last group a worker takes ends soon
    groups = [loose[i : i + size] for i in range(0, len(loose), size)] + list(archives.values())
    groups.sort(key=len, reverse=True)  # the largest first, so no worker is left with one at the end
    # gc.disable: a worker's objects die by reference count; the collector would only walk them (see site.render)
    with ProcessPoolExecutor(max_workers=workers, initializer=gc.disable) as pool:
        done = pool.map(_summarize_group, groups, [folder] * len(groups))
        found = {p: r for group, reads in zip(groups, done, strict=True) for p, r in zip(group, reads, strict=True)}
    return [found[path] for path in paths]


def _known_sha(path: Path, known: dict[str, list[Any]], seen: dict[str, list[Any]]) -> str | None:
    """The file's sha256 from the cache's index when its size and modification time (ns) are unchanged.

    As git's index does: a file rewritten keeps neither its mtime_ns nor, in practice, both; such a file is
    hashed again (None here). A warm build of a long history then reads no record it has read before.
    """
    try:
        st = archive.stamp(path)  # a month archive's member: the archive's
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read record ({exc.strerror})") from exc
    key, stamp = str(path), [st.st_size, st.st_mtime_ns]
    entry = known.get(key)
    seen[key] = stamp
    if isinstance(entry, list) and len(entry) == 3 and entry[:2] == stamp and isinstance(entry[2], str):
        seen[key] = entry
        return entry[2]
    return None


def _summary(path: Path, sha: str, read: Read | None, cache: SummaryCache) -> Summary:
    """The summary of the first file with these bytes: as a worker read it (``read``), or from the cache by its
    indexed sha256, or read again when the index outlived its summary (a cache folder emptied by hand)."""
    if read is None:
        summary = cache.summary(sha)  # counts its own hit or miss
        if summary is not None:
            return summary
        read = _summarize_file(path, None)
    elif read.cached:
        cache.hits += 1
    else:
        cache.misses += 1
    if read.error is not None:
        raise read.error
    if read.summary is None:  # a read has a summary or an error
        raise MeasureError(f"{path}: not summarized")
    if not read.cached and not read.stored:
        cache.put_summary(read.summary)
    return read.summary


def _blob_id(blobs: dict[str, str], path: Path) -> str | None:
    """What git names a record's bytes by: its file's blob id, or for a month archive's member, the archive's
    blob id and the member's name hashed together (the same archive file always holds the same bytes)."""
    box = archive.container(path)
    if box is None:
        return blobs.get(str(path))
    whole = blobs.get(str(box))
    return None if whole is None else hashlib.sha256(f"{whole}/{path.name}".encode()).hexdigest()


def load_results(results: Path, cache: SummaryCache) -> Loaded:
    """Summaries of every record under ``results``; a bad record is a one-line error naming it.

    The same content under two file names is one record (it would otherwise pair with itself).
    Records not hashed before are read once each, in worker processes when there are many: hashed there,
    and summarized unless the cache holds their summary (a committed index on a fresh clone).
    """
    known = cache.hashes()
    seen: dict[str, list[Any]] = {}
    order = record_paths(results)
    indexed = {path: _known_sha(path, known, seen) for path in order}
    shas = {path: sha for path, sha in indexed.items() if sha is not None}
    blobs = git_blobs(results) if len(shas) < len(order) else {}
    ids = {path: _blob_id(blobs, path) for path in order} if blobs else {}
    for path in order:
        blob = ids.get(path)
        sha = None if path in shas or blob is None else cache.blob_sha(blob)
        if sha is not None:  # a fresh checkout: git names the bytes, the committed index their sha256
            shas[path] = sha
            seen[str(path)] = [*seen[str(path)], sha]
    unhashed = [p for p in order if p not in shas]
    cache.hashed += len(unhashed)
    fresh: dict[Path, Read] = {}
    for path, read in zip(unhashed, _summarize_all(unhashed, cache.root), strict=True):
        shas[path], fresh[path] = read.sha256, read
        blob = ids.get(path)
        if blob is not None:
            cache.put_blob_sha(blob, read.sha256)
    found: dict[str, Summary] = {}
    paths: dict[str, Path] = {}
    for path in order:
        sha = shas[path]
        if sha in paths:
            continue
        paths[sha] = path
        found[sha] = _summary(path, sha, fresh.get(path), cache)
    for path, read in fresh.items():
        seen[str(path)] = [*seen[str(path)], read.sha256]
    if seen != known:
        cache.put_hashes(seen)
    return Loaded(results, list(found.values()), paths)
