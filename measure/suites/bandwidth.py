"""The machine's memory read bandwidth, probed: the denominator of each tier's memory-bandwidth bound.

A pass reads a float32 buffer well beyond the last-level cache once: 4 x its size over every instance, at least
:data:`LEAST_BYTES`, split evenly across the run's intra-op threads (and again with one thread), each thread
taking numpy's max over its slice. The buffer is paged as onnxruntime's weights are (an anonymous mapping,
no huge-page advice: :func:`read_passes`). A max, not a sum: numpy vectorizes the max with SIMD and reads about 80 GB/s
from L2 on a 2020s x86 core, while its pairwise sum tops out near 25 GB/s, no faster than memory itself, so a
sum would time the adder. numpy releases the GIL in the reduction, so the threads read at once. One untimed
pass first faults the pages in; then the counts' passes are interleaved (A B A B ...), so a neighbour's burst
on a shared machine hits both alike; each pass's seconds are kept, the median is derived later.

It runs in a fresh process (``python -m measure.suites.bandwidth``), so the buffer never counts in the run's
own peak memory; it adds about a second to a run (the process, the buffer's page faults, 2 x 7 passes).

Cache sizes are read from ``/sys/devices/system/cpu/cpu*/cache/index*`` (Linux, arm64 included where the
kernel exports cacheinfo; each instance counted once by its shared CPUs), else from ``lscpu``, else, on
macOS, from ``sysctl`` (``hw.perflevel0.l2cachesize`` and ``hw.l3cachesize``: Apple silicon reports no L3,
and its system-level cache not at all, which is why the buffer is never under :data:`LEAST_BYTES`), else
they are ``unknown`` and the buffer is :data:`LEAST_BYTES`. The record says which.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import platform
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter
from typing import Any

from measure.record.model.bandwidth import CacheLevel, Caches, bandwidth_part
from measure.suites.child import ask_child

LEAST_BYTES = 256 * 2**20
"""The smallest buffer read: beyond any last-level cache a 2020s desktop or laptop has (Apple's system-level
cache included), whatever the caches report."""
MOST_BYTES = 2 * 2**30
"""The largest: a machine with a larger last-level cache than 512 MiB reads 2 GiB (still 4 x most of it)."""
PASSES = 7
METHOD = (
    "numpy max over a float32 buffer in an anonymous mapping (the heap's pages, as onnxruntime's weights; no huge-page "
    "advice), split evenly across the threads, one untimed pass first"
)
TIMEOUT_S = 120
SYSFS = Path("/sys/devices/system/cpu")


def _size(text: str) -> int:
    """``32K``, ``1024K``, ``16M``, ``32 MiB``, ``512 KiB`` as bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)(?:i?B)?\s*", text, flags=re.I)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(float(m.group(1)) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()])


def sysfs_caches(root: Path = SYSFS) -> Caches | None:
    """Every CPU's caches from sysfs, each instance once (told apart by the CPUs that share it)."""
    seen: dict[tuple[int, str], dict[str, int]] = {}
    for index in sorted(root.glob("cpu[0-9]*/cache/index[0-9]*")):
        try:
            level = int((index / "level").read_text().strip())
            kind = (index / "type").read_text().strip()
            size = _size((index / "size").read_text())
            shared = (index / "shared_cpu_list").read_text().strip() if (index / "shared_cpu_list").exists() else ""
        except (OSError, ValueError):
            continue
        seen.setdefault((level, kind), {})[shared or str(index.parent.parent)] = size
    if not seen:
        return None
    levels = tuple(
        CacheLevel(level, kind, max(sizes.values()), len(sizes)) for (level, kind), sizes in sorted(seen.items())
    )
    return Caches("sysfs", levels)


_LSCPU = re.compile(r"^(L\d)([di]?) cache:\s*(.+?)(?:\s*\((\d+) instances?\))?\s*$", flags=re.M)


def lscpu_caches(text: str) -> Caches | None:
    """``lscpu``'s cache lines (``L3 cache: 32 MiB (1 instance)``): the size it prints is every instance's."""
    levels: list[CacheLevel] = []
    for name, suffix, size, instances in _LSCPU.findall(text):
        kind = {"d": "Data", "i": "Instruction"}.get(suffix, "Unified")
        count = int(instances or 1)
        try:
            levels.append(CacheLevel(int(name[1:]), kind, _size(size) // count, count))
        except ValueError:
            continue
    return Caches("lscpu", tuple(levels)) if levels else None


def _run(*argv: str) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""


def sysctl_caches() -> Caches | None:
    """macOS: the performance cores' L2 (shared per cluster) and an L3 where the CPU has one."""
    levels: list[CacheLevel] = []
    for level, key in ((2, "hw.perflevel0.l2cachesize"), (2, "hw.l2cachesize"), (3, "hw.l3cachesize")):
        value = _run("sysctl", "-n", key).strip()
        if value.isdigit() and int(value) and not any(c.level == level for c in levels):
            levels.append(CacheLevel(level, "Unified", int(value), 1))
    return Caches("sysctl", tuple(levels)) if levels else None


def cache_sizes() -> Caches:
    """The caches from the first source that knows them: sysfs, lscpu, sysctl; else ``unknown``."""
    found = sysfs_caches() if sys.platform.startswith("linux") else None
    if found is None and sys.platform != "darwin":
        found = lscpu_caches(_run("lscpu"))
    if found is None and sys.platform == "darwin":
        found = sysctl_caches()
    return found or Caches("unknown", ())


def buffer_bytes(caches: Caches) -> int:
    """4 x the last-level cache, within :data:`LEAST_BYTES` .. :data:`MOST_BYTES`, a whole number of MiB."""
    want = 4 * (caches.last_level_bytes or 0)
    return min(MOST_BYTES, max(LEAST_BYTES, -(-want // 2**20) * 2**20))


def read_passes(size: int, counts: list[int], passes: int = PASSES) -> dict[int, list[float]]:
    """Seconds per pass over a ``size``-byte buffer at each thread count, passes interleaved across counts.

    The buffer is an anonymous mapping filled with ones (never the zero page), not a numpy allocation: numpy
    advises huge pages for its large arrays, which onnxruntime's weights never get (its arena's pages are the
    heap's), and on a VM with nested paging huge pages alone read 2-3x faster (26 against 9-11 GB/s on the
    2-core host this was written on). The probe reads pages as the model's weights are paged."""
    import numpy as np

    region = mmap.mmap(-1, size)
    data = np.frombuffer(region, dtype=np.float32)
    data.fill(1.0)
    pools = {n: ThreadPoolExecutor(n) for n in counts}
    slices = {n: np.array_split(data, n) for n in counts}
    try:
        for n in counts:  # untimed: the pages are faulted in and each pool's threads started
            list(pools[n].map(np.max, slices[n]))
        out: dict[int, list[float]] = {n: [] for n in counts}
        for _ in range(passes):
            for n in counts:
                start = perf_counter()
                list(pools[n].map(np.max, slices[n]))
                out[n].append(round(perf_counter() - start, 9))
        return out
    finally:
        for pool in pools.values():
            pool.shutdown()
        del data, slices
        with contextlib.suppress(BufferError):  # a view still held (a traceback's frame): freed with it instead
            region.close()


def probe(threads: int, size: int | None = None, passes: int = PASSES) -> dict[str, Any]:
    """The probe in this process: the record's part (``size`` overrides the buffer the caches decide)."""
    caches = cache_sizes()
    size = buffer_bytes(caches) if size is None else size
    counts = list(dict.fromkeys((max(1, threads), 1)))
    runs = read_passes(size, counts, passes)
    return bandwidth_part(METHOD, size, runs, caches, f"{sys.platform} {platform.machine()}")


def run_probe(threads: int, size: int | None = None, passes: int = PASSES) -> dict[str, Any]:
    """The probe in a fresh process (its buffer outside this one's memory); a failure is one line."""
    return ask_child(__name__, {"threads": threads, "size": size, "passes": passes}, "bandwidth probe", TIMEOUT_S)


def threads_of(intra_op_threads: int) -> int:
    """The threads a decode ran on: the session's intra-op count (0: onnxruntime's default, every core)."""
    return intra_op_threads if intra_op_threads > 0 else os.cpu_count() or 1


if __name__ == "__main__":
    asked = json.loads(sys.stdin.read() or "{}")
    found = probe(int(asked.get("threads", 1)), asked.get("size"), int(asked.get("passes", PASSES)))
    json.dump(found, sys.stdout)
