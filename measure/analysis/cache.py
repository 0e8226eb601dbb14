"""The on-disk cache of summaries and comparisons, and the results tree read through it.

Entries are keyed by the record file's sha256 and :data:`ANALYSIS_VERSION`;
an entry that does not parse, names another file or another version is
rebuilt, never trusted. Comparisons between consecutive records are cached
the same way, keyed by both files' hashes, the band, the drift and the
policy. The cache folder is disposable: deleting it costs one cold build.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from measure.analysis.comparison import Comparison, Drift, compare_many
from measure.analysis.stats import Estimate
from measure.analysis.summary import Summary, summarize_record
from measure.errors import MeasureError
from measure.record.io import load, load_record, read_bytes
from measure.record.model import Record, from_document
from measure.record.tree import record_paths
from measure.writing import write_bytes

ANALYSIS_VERSION = 7
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
        self.folder = None if folder is None else folder / f"v{ANALYSIS_VERSION}"
        self._memory: dict[str, Any] = {}
        self.hits = 0
        self.misses = 0

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
            write_bytes(path, orjson.dumps(value), root=self.folder)

    def hashes(self) -> dict[str, list[Any]]:
        """The index of record files already hashed: path -> [size, mtime_ns, sha256] (empty when unreadable)."""
        found = self._read("index", "files")
        return found if isinstance(found, dict) else {}

    def put_hashes(self, index: dict[str, list[Any]]) -> None:
        self._write("index", "files", index)

    def summary(self, sha256: str) -> Summary | None:
        found = self._read("summaries", sha256)
        try:
            summary = Summary.from_dict(found) if isinstance(found, dict) else None
        except (KeyError, TypeError, ValueError):
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
    ) -> list[list[Comparison]]:
        """:meth:`comparisons` of many (BASE, NEW) pairs; those the cache lacks are judged together
        (:func:`~measure.analysis.comparison.compare_many`), several times quicker than one by one."""
        keys = [comparison_key(base, new, tolerance, drift, metric) for base, new in pairs]
        out = [self._cached_comparisons(key) for key in keys]
        missing = [i for i, found in enumerate(out) if found is None]
        jobs = [(pairs[i][0].samples_of(metric), pairs[i][1].samples_of(metric), pairs[i][1].policy) for i in missing]
        for i, result in zip(missing, compare_many(jobs, tolerance, drift, metric=metric), strict=True):
            self._write("comparisons", keys[i], [_comparison_to_list(c) for c in result])
            out[i] = result
        return [found or [] for found in out]

    def _cached_comparisons(self, key: str) -> list[Comparison] | None:
        found = self._read("comparisons", key)
        if isinstance(found, list):
            try:
                return [_comparison_from_list(x) for x in found]
            except (TypeError, ValueError):
                pass
        return None


@dataclass(frozen=True)
class Loaded:
    """A results tree as the site reads it: a summary per distinct record, and where each came from."""

    root: Path
    summaries: list[Summary]
    paths: dict[str, Path]
    """sha256 -> the record's file."""

    def record(self, summary: Summary, suites: bool = True) -> Record:
        """The full record a summary came from; ``suites=False`` leaves out the wall-clock and framing parts
        (a run page needs the environment, tiers and config only). Bytes that still hash to the summary's
        sha256 were validated when it was made; anything else is validated again."""
        path = self.paths[summary.sha256]
        data = read_bytes(path)
        without = () if suites else ("wallclock", "framing")
        doc = load_record(path, data, validated=file_sha256(data) == summary.sha256, without=without, arrays=True)
        return from_document(doc, str(path))

    def text(self, summary: Summary) -> str:
        """The record file's JSON as it is stored (a ``.json.gz`` gunzipped): what a run page offers for download,
        a record any measure verb reads."""
        return read_bytes(self.paths[summary.sha256]).decode("utf-8")


def _summarize_file(path: Path, sha256: str) -> Summary:
    """A cache miss: load, validate and summarize one record (run in worker processes on a cold build)."""
    return summarize_record(load(path, read_bytes(path)), sha256)


PARALLEL_MIN = 16
"""Cache misses from which a build summarizes in worker processes (fewer are quicker in-process)."""


def summary_workers() -> int:
    """Processes a cold build summarizes in: the CPUs, at most 8; ``MEASURE_WORKERS`` sets it (1: in-process)."""
    named = os.environ.get("MEASURE_WORKERS", "")
    if named.isdigit() and int(named) > 0:
        return int(named)
    return min(os.cpu_count() or 1, 8)


def _summarize_all(missing: list[tuple[Path, str]]) -> list[Summary]:
    workers = summary_workers()
    if len(missing) < PARALLEL_MIN or workers < 2:
        return [_summarize_file(path, sha) for path, sha in missing]
    from concurrent.futures import ProcessPoolExecutor

    paths, hashes = zip(*missing, strict=True)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_summarize_file, paths, hashes, chunksize=max(1, len(missing) // (4 * workers))))


def _sha_of(path: Path, known: dict[str, list[Any]], seen: dict[str, list[Any]]) -> str:
    """The file's sha256, from the cache's index when its size and modification time (ns) are unchanged.

    As git's index does: a file rewritten keeps neither its mtime_ns nor, in practice, both; such a file is
    hashed again. A warm build of a long history then reads no record it has read before.
    """
    try:
        st = path.stat()
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read record ({exc.strerror})") from exc
    key, stamp = str(path), [st.st_size, st.st_mtime_ns]
    entry = known.get(key)
    if isinstance(entry, list) and len(entry) == 3 and entry[:2] == stamp and isinstance(entry[2], str):
        sha = entry[2]
    else:
        sha = file_sha256(read_bytes(path))
    seen[key] = [*stamp, sha]
    return sha


def load_results(results: Path, cache: SummaryCache) -> Loaded:
    """Summaries of every record under ``results``; a bad record is a one-line error naming it.

    The same content under two file names is one record (it would otherwise pair with itself).
    Records the cache does not hold are summarized in worker processes when there are many.
    """
    found: dict[str, Summary | None] = {}
    paths: dict[str, Path] = {}
    missing = []
    known = cache.hashes()
    seen: dict[str, list[Any]] = {}
    for path in record_paths(results):
        sha = _sha_of(path, known, seen)
        if sha in paths:
            continue
        paths[sha] = path
        found[sha] = cache.summary(sha)
        if found[sha] is None:
            missing.append((path, sha))
    for summary in _summarize_all(missing):
        cache.put_summary(summary)
        found[summary.sha256] = summary
    if seen != known:
        cache.put_hashes(seen)
    return Loaded(results, [s for s in found.values() if s is not None], paths)
