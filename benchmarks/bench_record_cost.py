"""What one record costs a cold build, stage by stage, on one core and on every core at once. Prints figures only.

A cold site build (``bench_site.py``) reads every record once in the summary workers: read and gunzip, hash,
parse, unpack the packed samples and columns, validate (the schema, then the relations it cannot say), make
the typed record, summarise (every verdict, the samples History compares) and write the summary's cache entry.
This prints each stage's CPU time for copies of one real record (median over ``--copies``, each read from its
own file as a build reads it, its samples drifted as ``bench_site.py``'s are, so no cache serves one copy from
another), so the floor of a cold build is a figure, not a guess: 1,000 records cost at
least 1,000 times the sum over the cores, plus the pages.

It then times the whole worker step, as the build runs it (:func:`measure.results.reader._summarize_file`, cache
entry written), alone and in one process per core at once: on a host whose cores share a physical core or its
caches, a record costs more when every core works, and that, not the one-core figure, is what a build pays.

Run: ``python benchmarks/bench_record_cost.py [--record FILE] [--copies 40]``
(default record: the newest under ./results, made by ``measure run``).
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import orjson

from measure.analysis.rules import fidelity_verdicts, framing_verdicts, profile_verdicts, wallclock_verdicts
from measure.analysis.summary import summarize_record
from measure.record import io
from measure.record.io import load_record
from measure.record.model import from_document
from measure.record.pack import unpack
from measure.record.tree import record_paths
from measure.results.cache import file_sha256
from measure.results.reader import _summarize_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_site import copies  # the copies a site build is timed on

ROOT = Path(__file__).resolve().parent.parent


def _stages(path: Path) -> dict[str, float]:
    """One record's stages, CPU seconds each, in the order a summary worker runs them."""
    spent: dict[str, float] = {}

    def timed(name: str, step: Callable[[], Any]) -> Any:
        started = time.process_time()
        out = step()
        spent[name] = spent.get(name, 0.0) + time.process_time() - started
        return out

    data = timed("read and gunzip", lambda: io.read_bytes(path))
    sha = timed("hash", lambda: file_sha256(data))
    doc = timed("parse JSON", lambda: orjson.loads(data))
    spans: list[Any] = []
    doc = timed("unpack samples and columns", lambda: io.migrate(unpack(doc, str(path), spans, True), str(path)))

    timed("validate (schema, then relations)", lambda: io.validate(doc, str(path), spans))
    record = timed("typed record", lambda: from_document(doc, str(path)))
    summary = timed("summarise", lambda: summarize_record(record, sha))
    timed("cache entry (JSON)", lambda: orjson.dumps(summary.to_dict()))
    policy = record.config.policy  # the verdicts again, after the summary (which they must not find warmed up)
    timed("  of which wall-clock verdicts", lambda: wallclock_verdicts(record, policy))
    timed("  of which cost-profile verdicts", lambda: profile_verdicts(record, policy))
    timed("  of which framing verdicts", lambda: framing_verdicts(record, policy))
    timed("  of which fidelity verdicts", lambda: fidelity_verdicts(record, policy))
    return spent


def _worker_step(paths: list[Path], folder: Path, passes: int = 3) -> float:
    """CPU seconds a summary worker spends on these records, cache entries written (each pass into a cache of its
    own, so no pass finds another's entries): the least of ``passes``, as other jobs on the host only add."""
    gc.disable()
    spent = []
    for n in range(passes):
        started = time.process_time()
        for path in paths:
            _summarize_file(path, folder / f"pass{n}")
        spent.append(time.process_time() - started)
    return min(spent)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, default=None)
    ap.add_argument("--copies", type=int, default=40)
    args = ap.parse_args()
    record = args.record or (record_paths(ROOT / "results") or [None])[-1]
    if record is None:
        sys.exit("no record: run `measure run` first or pass --record")
    doc = load_record(Path(record))
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        copies(doc, range(args.copies), Path(tmp) / "results", gzipped=True)  # bench_site's: every sample drifts
        paths = record_paths(Path(tmp) / "results")
        print(f"record {record}: {paths[0].stat().st_size:,} B gzipped; {args.copies} copies, CPU ms a record")
        gc.disable()
        _stages(paths[0])  # imports, schema compiled, draws made: what a worker pays once
        runs = [_stages(p) for p in paths]
        total = 0.0
        for name in runs[0]:  # the indented verdicts are parts of "summarise": shown, not added again
            ms = 1000 * statistics.median(r[name] for r in runs)
            total += 0.0 if name.startswith(" ") else ms
            print(f"  {name:36s}{ms:8.2f}")
        print(f"  {'sum of the stages':36s}{total:8.2f}")
        gc.enable()
        folder = Path(tmp) / "cache"
        alone = 1000 * _worker_step(paths, folder / "alone") / len(paths)
        with ProcessPoolExecutor(max_workers=cores) as pool:
            each = list(pool.map(_worker_step, [paths] * cores, [folder / f"w{i}" for i in range(cores)]))
        together = 1000 * statistics.median(each) / len(paths)
        print(f"the worker step (_summarize_file, entry written): {alone:.1f} ms a record alone,")
        print(f"  {together:.1f} ms with all {cores} cores at it ({together / alone:.2f}x)")
        print(f"so 1,000 records take at least {together / cores:.1f} s on {cores} cores, before the pages")


if __name__ == "__main__":
    main()
