"""The on-disk cache of summaries and comparisons, and the results tree read through it.

Entries are keyed by the record file's sha256 and :data:`ANALYSIS_VERSION`;
an entry that does not parse, names another file or another version is
rebuilt, never trusted. Comparisons between consecutive records are cached
the same way, keyed by both files' hashes, the band, the drift and the
policy. The cache folder is disposable: deleting it costs one cold build.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from measure.analysis.comparison import CaseSamples, Comparison, Drift, compare_many
from measure.analysis.stats import Estimate
from measure.analysis.summary import Summary, summarize_record
from measure.errors import MeasureError
from measure.policy import Policy
from measure.record import archive
from measure.record.blobs import git_blobs
from measure.record.io import load, load_record, read_bytes
from measure.record.model import Record, from_document
from measure.record.tree import record_paths
from measure.writing import write_bytes

HEX = frozenset("0123456789abcdef")

ANALYSIS_VERSION = 8
"""Bump whenever a summary's content or a comparison's rules change: every cache entry is then rebuilt."""


def file_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def comparison_key(
    base: Summary, new: Summary, tolerance: float | None, drift: Drift | None = None, metric: str = "wall"
) -> str:
    spread = None if drift is None else [drift.sd, drift.df]
    what = [ANALYSIS_VERSION, base.sha256, new.sha256, tolerance, spread, vars(new.policy), metric]
    return hashlib.sha256(orjson.dumps(what, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _comparison_to_list(c: Comparison) -> list[Any]:
    est = [[e.value, e.lo, e.hi, None, None, e.level] for e in (c.ratio, c.base, c.new)]
    return [c.case, c.kind, c.outcome, *est, c.p_change, c.p_same, c.tolerance, c.df]


def _comparison_from_list(x: list[Any]) -> Comparison:
    case, kind, outcome, r, b, n, p_change, p_same, tol, df = x
    return Comparison(
        str(case), str(kind), str(outcome), Estimate(*r), Estimate(*b), Estimate(*n), p_change, p_same, tol, df
    )


class SummaryCache:
    """Summaries and comparisons under one folder (``None``: an in-memory cache for this build only).

    Writes are atomic (temp file + rename), so two builds sharing a folder never read half an entry.
    """

    def __init__(self, folder: Path | None) -> None:
        self.root = folder
        """The folder as given (its entries live under ``v<ANALYSIS_VERSION>/``): what a worker opens it by."""
        self.folder = None if folder is None else folder / f"v{ANALYSIS_VERSION}"
        self._memory: dict[str, Any] = {}
        self._checked: set[Path] = set()
        """Entry folders already resolved inside the cache and made (see :func:`~measure.writing.write_bytes`)."""
        self.hits = 0
        self.misses = 0
        self.hashed = 0
        """Record files read to find their sha256 (neither the stamp index nor git knew it)."""

    def _path(self, kind: str, key: str) -> Path | None:
        return None if self.folder is None else self.folder / kind / key[:2] / f"{key}.json"

    def _read(self, kind: str, key: str) -> Any:
        if (kind, key) in self._memory:
            return self._memory[(kind, key)]
        path = self._path(kind, key)
        if path is None:
            return None
        try:
            return orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None

    def _write(self, kind: str, key: str, value: Any) -> None:
        self._memory[(kind, key)] = value
        path = self._path(kind, key)
        if path is None:
            return
        with contextlib.suppress(OSError, MeasureError):  # an unwritable cache only costs the next build time
            write_bytes(path, orjson.dumps(value), root=self.folder, durable=False, checked=self._checked)

    def hashes(self) -> dict[str, list[Any]]:
        """The index of record files already hashed: path -> [size, mtime_ns, sha256] (empty when unreadable)."""
        found = self._read("index", "files")
        return found if isinstance(found, dict) else {}

    def put_hashes(self, index: dict[str, list[Any]]) -> None:
        self._write("index", "files", index)

    def blob_sha(self, blob: str) -> str | None:
        """The sha256 of the record bytes git names ``blob`` (see :mod:`measure.record.blobs`), if hashed before."""
        found = self._read("blobs", blob)
        sha = found.get("sha256") if isinstance(found, dict) else None
        return sha if isinstance(sha, str) and len(sha) == 64 and all(c in HEX for c in sha) else None

    def put_blob_sha(self, blob: str, sha256: str) -> None:
        self._write("blobs", blob, {"sha256": sha256})

    def entry(self, kind: str, key: str) -> Any:
        """Another layer's JSON entry (the site keeps each paged run's facts here): None when absent or unreadable;
        whoever stored it checks what it reads."""
        return self._read(kind, key)

    def put_entry(self, kind: str, key: str, value: Any) -> None:
        self._write(kind, key, value)

    def summary(self, sha256: str) -> Summary | None:
        found = self._read("summaries", sha256)
        try:
            summary = Summary.from_dict(found) if isinstance(found, dict) else None
        except (KeyError, TypeError, ValueError, IndexError):
            summary = None
        if summary is None or summary.sha256 != sha256:
            self.misses += 1
            return None
        self.hits += 1
        return summary

    def put_summary(self, summary: Summary) -> None:
        self._write("summaries", summary.sha256, summary.to_dict())

    def comparisons(
        self, base: Summary, new: Summary, tolerance: float | None, drift: Drift | None = None, metric: str = "wall"
    ) -> list[Comparison]:
        """``compare`` of two consecutive records in one metric, from the cache when the pair was judged before."""
        return self.comparisons_many([(base, new)], tolerance, drift, metric)[0]

    def comparisons_many(
        self,
        pairs: list[tuple[Summary, Summary]],
        tolerance: float | None,
        drift: Drift | None = None,
        metric: str = "wall",
        outcomes: frozenset[str] | None = None,
    ) -> list[list[Comparison]]:
        """:meth:`comparisons` of many (BASE, NEW) pairs; those the cache lacks are judged together
        (:func:`~measure.analysis.comparison.compare_many`), several times quicker than one by one.

        ``outcomes``: only the comparisons with one of these outcomes (History reads the faster and slower
        calls of a year of pairs: the others are never made into objects); None: all of them.
        """
        keys = [comparison_key(base, new, tolerance, drift, metric) for base, new in pairs]
        out = [self._cached_comparisons(key, outcomes) for key in keys]
        missing = [i for i, found in enumerate(out) if found is None]
        jobs = [(pairs[i][0].samples_of(metric), pairs[i][1].samples_of(metric), pairs[i][1].policy) for i in missing]
        for i, rows in zip(missing, _compare_all(jobs, tolerance, drift, metric), strict=True):
            self._write("comparisons", keys[i], rows)
            out[i] = [_comparison_from_list(x) for x in rows if outcomes is None or x[2] in outcomes]
        return [found or [] for found in out]

    def _cached_comparisons(self, key: str, outcomes: frozenset[str] | None = None) -> list[Comparison] | None:
        found = self._read("comparisons", key)
        if isinstance(found, list):
            try:
                if not all(isinstance(x, list) and len(x) == 10 for x in found):  # filtered out or not, broken
                    return None
                return [_comparison_from_list(x) for x in found if outcomes is None or x[2] in outcomes]
            except (TypeError, ValueError):
                pass
        return None


Job = tuple[dict[str, CaseSamples], dict[str, CaseSamples], Policy]

PARALLEL_PAIRS = 1024
"""Pairs to judge from which a build judges them in worker processes (a cold build of a long history)."""


def _compare_rows(jobs: list[Job], tolerance: float | None, drift: Drift | None, metric: str) -> list[list[Any]]:
    """:func:`compare_many` as cache rows: what a worker sends back (a few numbers a case, not objects)."""
    return [[_comparison_to_list(c) for c in result] for result in compare_many(jobs, tolerance, drift, metric=metric)]


def _compare_all(jobs: list[Job], tolerance: float | None, drift: Drift | None, metric: str) -> list[list[Any]]:
    """:func:`_compare_rows` of every job, split over the summary workers when there are many: each part is
    judged exactly as the whole would be (every job's numbers are its own; batching only shares the work)."""
    workers = summary_workers()
    if len(jobs) < PARALLEL_PAIRS or workers < 2:
        return _compare_rows(jobs, tolerance, drift, metric)
    from concurrent.futures import ProcessPoolExecutor

    size = -(-len(jobs) // workers)
    parts = [jobs[i : i + size] for i in range(0, len(jobs), size)]
    n = len(parts)
    with ProcessPoolExecutor(max_workers=workers, initializer=gc.disable) as pool:
        done = pool.map(_compare_rows, parts, [tolerance] * n, [drift] * n, [metric] * n)
        return [rows for part in done for rows in part]


@dataclass(frozen=True)
class Loaded:
    """A results tree as the site reads it: a summary per distinct record, and where each came from."""

    root: Path
    summaries: list[Summary]
    paths: dict[str, Path]
    """sha256 -> the record's file."""

    def record(self, summary: Summary, suites: bool = True, data: bytes | None = None) -> Record:
        """The full record a summary came from; ``suites=False`` leaves out the wall-clock and framing parts
        (a run page needs the environment, tiers and config only); ``data``: the file's bytes (gunzipped), when
        the caller has read them. Bytes that still hash to the summary's sha256 were validated when it was made;
        anything else is validated again."""
        path = self.paths[summary.sha256]
        data = read_bytes(path) if data is None else data
        without = () if suites else ("wallclock", "framing")
        doc = load_record(path, data, validated=file_sha256(data) == summary.sha256, without=without, arrays=True)
        return from_document(doc, str(path))


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


PARALLEL_MIN = 16
"""Unhashed records from which a build reads them in worker processes (fewer are quicker in-process)."""


def summary_workers() -> int:
    """Processes a cold build summarizes in: the CPUs, at most 8; ``MEASURE_WORKERS`` sets it (1: in-process)."""
    named = os.environ.get("MEASURE_WORKERS", "")
    if named.isdigit() and int(named) > 0:
        return int(named)
    return min(os.cpu_count() or 1, 8)


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
    loose = []
    for path in paths:
        box = archive.container(path)
        (archives.setdefault(box, []) if box is not None else loose).append(path)
    size = max(1, min(64, len(paths) // (4 * workers)))
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
        if ids.get(path) is not None:
            cache.put_blob_sha(ids[path], read.sha256)
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
