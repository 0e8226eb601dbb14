"""The on-disk cache of summaries and comparisons (:class:`SummaryCache`), and the worker processes a cold
build judges many pairs in.

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
from pathlib import Path
from typing import Any

import orjson

from measure.analysis.comparison import CaseSamples, Comparison, Drift, compare_many
from measure.analysis.stats import Estimate
from measure.analysis.summary import Summary
from measure.errors import MeasureError
from measure.policy import Policy
from measure.writing import write_bytes

HEX = frozenset("0123456789abcdef")

ANALYSIS_VERSION = 14
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
        self._memory: dict[tuple[str, str], Any] = {}
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


def summary_workers() -> int:
    """Processes a cold build summarizes in: the CPUs, at most 8; ``MEASURE_WORKERS`` sets it (1: in-process)."""
    named = os.environ.get("MEASURE_WORKERS", "")
    if named.isdigit() and int(named) > 0:
        return int(named)
    return min(os.cpu_count() or 1, 8)
