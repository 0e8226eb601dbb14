"""Storage benchmark: what one machine's month of records takes, stored one ``.json.gz`` a record (as the results
branch keeps them) or as one month archive (``measure archive``: identical parts stored once). Prints figures only.

The archive is measure's own (:mod:`measure.record.archive`): each record's stored text cut at its top-level
keys, every distinct part kept once. A part repeats only when it is the same text (framing facts while the
outputs do not change, the tiers' fingerprints, the config); the wall-clock part differs from run to run. It
reports each form's size a record and what reading every record back costs, and checks that every record's bytes
come back exactly.

Two kinds of copies of one real record, since a cross-record store sees what they share:

- *drift*: as ``bench_site.py`` makes them, each case's samples scaled by a seeded drift of a few %. Scaled
  copies of the same samples share their digits' patterns, which a compressor with a long window exploits
  (xz over 20 of them: 39 kB a record, below the samples' own entropy): they flatter any cross-record store.
- *independent*: each copy also re-deals every row's repeats (one random order per row and case, applied to
  all of the case's sample fields together, and to each tier's call costs), so no copy's sample sequence is
  another's. Each value is still one the real run measured.

Run: ``python benchmarks/bench_storage.py [--record FILE] [--records 100]``
(default record: the newest under ./results, made by ``measure run``).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from measure.record import archive
from measure.record.io import load_record, stored_bytes
from measure.record.pack import compress
from measure.record.tree import record_paths

ROOT = Path(__file__).resolve().parent.parent


def _redeal(group: dict[str, Any], rng: np.random.Generator, drift: float, digits: int) -> None:
    """Every sample field of one case (or one tier's call costs) drifted, each row's repeats re-dealt."""
    arrays = {
        k: np.asarray(v, dtype=float)
        for k, v in group.items()
        if k.endswith("_s") and isinstance(v, list) and v and isinstance(v[0], list)
    }
    if not arrays:
        return
    shape = max((a.shape for a in arrays.values()), key=len)
    order = np.argsort(rng.random(shape), axis=0)  # one random order of the repeats per row
    for k, a in arrays.items():
        moved = np.take_along_axis(a, order, axis=0) if a.shape == shape else a
        group[k] = np.round(moved * drift, digits).tolist()


def copies(doc: dict[str, Any], n: int, independent: bool) -> list[bytes]:
    """``n`` records of one machine and month, as ``measure run`` stores them (packed JSON, before gzip)."""
    rng, drifts = np.random.default_rng(20261205), random.Random(20261205)
    digits = round(-math.log10((doc.get("wallclock") or {}).get("resolution_s", 1e-9)))
    out = []
    for i in range(n):
        d = copy.deepcopy(doc)
        wallclock = d.get("wallclock") or {}
        groups = list(wallclock.get("cases", {}).values())
        if independent:
            groups += list((wallclock.get("call_costs") or {}).get("tiers", {}).values())
        for group in groups:
            drift = drifts.lognormvariate(0, 0.05)
            if independent:
                _redeal(group, rng, drift, digits)
                continue
            for k, v in group.items():  # as bench_site.py's copies
                if k.endswith("_s") and isinstance(v, list) and v and isinstance(v[0], list):
                    group[k] = [[round(x * drift, digits) for x in rep] for rep in v]
        d["run_id"] = f"20260901T{i // 60:04d}{i % 60:02d}Z-{i:06x}"
        d["started_at"] = f"2026-09-01T{i // 60 % 24:02d}:{i % 60:02d}:00Z"
        out.append(stored_bytes(d, Path(f"{d['run_id']}.json")))
    return out


def month_archive(records: list[bytes], folder: Path) -> tuple[Path, int, int]:
    """The records as one month archive (:mod:`measure.record.archive`, what ``measure archive`` writes), with
    the number of distinct parts it keeps and of parts in all."""
    members = {f"20260901T{i // 60:04d}{i % 60:02d}Z-{i:06x}.json": r for i, r in enumerate(records)}
    cut = [archive.parts(r.decode("utf-8")) for r in records]
    path = archive.write_archive(folder / f"2026-09{archive.SUFFIX}", members)
    return path, len({p for c in cut for p in c}), sum(map(len, cut))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, default=None)
    ap.add_argument("--records", type=int, default=100, help="records in the month (default 100)")
    args = ap.parse_args()
    record = args.record or (record_paths(ROOT / "results") or [None])[-1]
    if record is None:
        sys.exit("no record: run `measure run` first or pass --record")
    doc = load_record(Path(record))
    print(f"record {record}; {args.records} copies as one machine's month")
    print(f"{'copies':<12}{'.json.gz kB':>12}{'read ms':>9}{'archive kB':>11}{'read ms':>9}{'parts':>10}")
    for independent in (False, True):
        records = copies(doc, args.records, independent)
        singles = [compress(r) for r in records]
        t = time.perf_counter()
        back = [gzip.decompress(s) for s in singles]
        single_ms = (time.perf_counter() - t) / len(records) * 1e3
        with tempfile.TemporaryDirectory() as tmp:
            path, distinct, total = month_archive(records, Path(tmp))
            packed = path.read_bytes()
            t = time.perf_counter()
            unpacked = list(archive.read_archive(path).values())
            pack_ms = (time.perf_counter() - t) / len(records) * 1e3
        if back != records or unpacked != records:
            sys.exit("a record did not come back byte for byte")
        per = sum(map(len, singles)) / len(records) / 1e3
        print(
            f"{'independent' if independent else 'drift':<12}{per:>12.1f}{single_ms:>9.2f}"
            f"{len(packed) / len(records) / 1e3:>11.1f}{pack_ms:>9.2f}{f'{distinct}/{total}':>10}"
        )


if __name__ == "__main__":
    main()
