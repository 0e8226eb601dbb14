"""Site build benchmark: a site built over 1, 100, 1,000 and 10,000 records. Prints figures only.

The records are copies of one real demo record with varied dates, run ids and
machines (five machine ids), so every page, the history and the machines
table grow as they would over months of CI. Reports the build time per size,
the time per record, and the weight of the largest page. Each size is built
twice: *cold* (the first build, no summary cache, as on a fresh CI machine)
and *warm* (one new record, then a second build with the cache the first one
left in ``.cache/measure``, as the publish job finds the index committed beside
the records and as ``mkdocs serve`` rebuilds when a record is added). *stored MB*
is the results tree as written (``--gzip``: as the results branch keeps it; ``--archive``: with each machine's
past months then folded into month archives, as the publish job's ``measure archive`` does).
``--site`` picks the generator: ``mkdocs build --strict`` (the default) or
``properdocs build --strict`` with the plugin, or ``measure render`` into docs/results
followed by ``zensical build --strict`` (both timed together; warm, the render finds its summary
cache and rewrites no file that did not change).

Run: ``python benchmarks/bench_site.py [--record FILE] [--sizes 1 100 1000 10000] [--site zensical] [--gzip]
[--archive]``
(default record: the newest under ./results, made by ``measure run``).
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from measure.record.io import load_record, record_name, write_record
from measure.record.months import archive_months
from measure.record.tree import record_paths
from measure.site.hosts import HOSTS, zensical_toml

ROOT = Path(__file__).resolve().parent.parent


def copies(doc: dict, numbers: range, out: Path, gzipped: bool = False) -> None:
    """Records number ``numbers``, 7 hours apart over five machines, each case's timings (every sample field: a
    slower run is slower in every part of its decodes, so the fields keep the relations a real run's have) scaled by
    a seeded drift of a few % (rounded to the record's ``resolution_s``, as the suites record them), stored as
    ``measure run`` (``--gzip``: as the publish job's ``measure merge --gzip``) stores them."""
    start = datetime(2026, 1, 1)
    rng = random.Random(20261203 + numbers.start)
    digits = round(-math.log10((doc.get("wallclock") or {}).get("resolution_s", 1e-9)))
    for i in numbers:
        d = copy.deepcopy(doc)
        for case in (d.get("wallclock") or {}).get("cases", {}).values():
            drift = rng.lognormvariate(0, 0.05)
            for key, value in case.items():
                if key.endswith("_s") and value and isinstance(value[0], list):
                    case[key] = [[round(x * drift, digits) for x in rep] for rep in value]
        when = start + timedelta(hours=7 * i)
        d["started_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        d["finished_at"] = (when + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        d["run_id"] = when.strftime("%Y%m%dT%H%M%SZ") + f"-{i:06x}"
        d["machine_id"] = f"{doc['machine_id']}-m{i % 5}"
        write_record(out / d["machine_id"] / record_name(d["run_id"], gzipped), d)


def make_copies(doc: dict, numbers: range, out: Path, gzipped: bool = False) -> None:
    """:func:`copies` in one process per CPU, in chunks (writing 10,000 gzipped records takes minutes)."""
    from concurrent.futures import ProcessPoolExecutor

    step = max(1, min(500, len(numbers) // (os.cpu_count() or 1) or 1))
    chunks = [range(i, min(i + step, numbers.stop)) for i in range(numbers.start, numbers.stop, step)]
    with ProcessPoolExecutor() as pool:
        list(pool.map(copies, [doc] * len(chunks), chunks, [out] * len(chunks), [gzipped] * len(chunks)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 100, 1000, 10000])
    ap.add_argument("--site", choices=list(HOSTS), default="mkdocs")
    ap.add_argument("--gzip", action="store_true", help="store the copies as .json.gz, as a results branch does")
    ap.add_argument(
        "--archive",
        action="store_true",
        help="then fold past months into month archives (measure archive), as the publish job does",
    )
    args = ap.parse_args()
    record = args.record or (record_paths(ROOT / "results") or [None])[-1]
    if record is None:
        sys.exit("no record: run `measure run` first or pass --record")
    doc = load_record(Path(record))  # the plain document: the copies are packed again as they are written
    print(f"record {record} ({Path(record).stat().st_size:,} B), built with {HOSTS[args.site].build}")
    bin_ = Path(sys.executable).parent
    head = f"{'records':>8}{'stored MB':>11}{'cold s':>9}{'warm s':>9}{'ms/record':>11}{'pages':>8}{'largest page':>16}"
    print(head + "  largest")
    notes: list[str] = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            make_copies(doc, range(n), tmp / "results", args.gzip)
            if args.archive:
                started = time.perf_counter()
                archived = archive_months(tmp / "results")
                took = time.perf_counter() - started
                folded = sum(a.added for a in archived)
                notes.append(f"{n}: {folded} records folded into {len(archived)} month archives in {took:.1f} s")
            stored = sum(p.stat().st_size for p in (tmp / "results").rglob("*") if p.is_file())
            shutil.copytree(ROOT / "docs", tmp / "docs")
            if args.site == "zensical":
                (tmp / "zensical.toml").write_text(zensical_toml("measure RESULTS"), encoding="utf-8")
                steps = [
                    [str(bin_ / "measure"), "render", "--out", "docs/results", "--cache", ".cache/measure"],
                    [str(bin_ / "zensical"), "build", "--strict"],
                ]
            else:
                config = tmp / HOSTS[args.site].config
                config.write_text((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), encoding="utf-8")
                steps = [[str(bin_ / args.site), "build", "--strict", "-q", "-f", str(config)]]
            env = dict(os.environ, MEASURE_RESULTS=str(tmp / "results"), NO_MKDOCS_2_WARNING="1")
            times = []
            for build in ("cold", "warm"):
                if build == "warm":
                    copies(doc, range(n, n + 1), tmp / "results", args.gzip)  # one new record, as CI adds them
                started = time.perf_counter()
                for argv in steps:
                    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tmp)
                    if done.returncode:
                        sys.exit(done.stderr[-2000:])
                times.append(time.perf_counter() - started)
            pages = list((tmp / "site").rglob("index.html"))
            largest = max(pages, key=lambda p: p.stat().st_size)
            print(
                f"{n:>8}{stored / 1e6:>11.1f}{times[0]:>9.1f}{times[1]:>9.1f}{1000 * times[0] / n:>11.1f}"
                f"{len(pages):>8}"
                f"{largest.stat().st_size:>14,} B  {largest.relative_to(tmp / 'site')}"
            )

    for line in notes:
        print(line)


if __name__ == "__main__":
    main()
