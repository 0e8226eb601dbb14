"""The bandwidth probe: cache sizes from each source, the buffer they decide, and the record part it writes.

No test asserts what this machine's bandwidth is: only that the probe read what it says, at the counts it says.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests_support import DATA_DIR

from measure.record.io import load_record, validate
from measure.record.model import from_document
from measure.record.model.bandwidth import CacheLevel, Caches, bandwidth_of
from measure.suites import bandwidth
from measure.suites.bandwidth import LEAST_BYTES, MOST_BYTES, buffer_bytes, lscpu_caches, probe, run_probe, sysfs_caches

LSCPU = """\
Architecture:                            x86_64
L1d cache:                               64 KiB (2 instances)
L1i cache:                               64 KiB (2 instances)
L2 cache:                                2 MiB (2 instances)
L3 cache:                                32 MiB (1 instance)
NUMA node(s):                            1
"""


def _index(root: Path, cpu: int, i: int, level: int, kind: str, size: str, shared: str) -> None:
    d = root / f"cpu{cpu}" / "cache" / f"index{i}"
    d.mkdir(parents=True)
    for name, value in (("level", str(level)), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
        (d / name).write_text(value + "\n")


def test_sysfs_counts_each_cache_instance_once_by_the_cpus_sharing_it(tmp_path: Path):
    """Two CCXs of two cores: four L2s, two L3s of 16 MiB, so 32 MiB of last-level cache in all."""
    for cpu in range(4):
        _index(tmp_path, cpu, 0, 1, "Data", "32K", str(cpu))
        _index(tmp_path, cpu, 2, 2, "Unified", "1024K", str(cpu))
        _index(tmp_path, cpu, 3, 3, "Unified", "16384K", "0-1" if cpu < 2 else "2-3")
    found = sysfs_caches(tmp_path)
    assert found is not None and found.source == "sysfs"
    assert CacheLevel(3, "Unified", 16 * 2**20, 2) in found.levels
    assert CacheLevel(2, "Unified", 2**20, 4) in found.levels
    assert found.last_level_bytes == 32 * 2**20
    assert sysfs_caches(tmp_path / "absent") is None


def test_lscpu_sizes_are_every_instance_together():
    found = lscpu_caches(LSCPU)
    assert found is not None and found.source == "lscpu"
    assert CacheLevel(1, "Data", 32 * 2**10, 2) in found.levels
    assert CacheLevel(1, "Instruction", 32 * 2**10, 2) in found.levels
    assert found.last_level_bytes == 32 * 2**20
    assert lscpu_caches("Architecture: x86_64\n") is None


def test_macos_reads_sysctl(monkeypatch):
    """Apple silicon: the performance cluster's L2, no L3 key; the buffer stays at its floor."""
    answers = {"hw.perflevel0.l2cachesize": "16777216", "hw.l2cachesize": "4194304", "hw.l3cachesize": ""}
    monkeypatch.setattr(bandwidth, "_run", lambda *argv: answers.get(argv[-1], ""))
    found = bandwidth.sysctl_caches()
    assert found == Caches("sysctl", (CacheLevel(2, "Unified", 16 * 2**20, 1),))
    assert buffer_bytes(found) == LEAST_BYTES


def test_the_buffer_is_four_times_the_last_level_cache_within_its_bounds():
    def llc(size: int) -> Caches:
        return Caches("sysfs", (CacheLevel(3, "Unified", size, 1),))

    assert buffer_bytes(llc(96 * 2**20)) == 384 * 2**20
    assert buffer_bytes(llc(8 * 2**20)) == LEAST_BYTES
    assert buffer_bytes(llc(2**30)) == MOST_BYTES
    assert buffer_bytes(Caches("unknown", ())) == LEAST_BYTES
    assert Caches("unknown", ()).last_level_bytes is None


def test_a_probe_reads_at_the_runs_count_first_then_one_thread():
    part = probe(2, size=8 * 2**20, passes=3)
    assert part["buffer_bytes"] == 8 * 2**20
    assert [r["threads"] for r in part["runs"]] == [2, 1]
    assert all(len(r["read_s"]) == 3 and min(r["read_s"]) > 0 for r in part["runs"])
    view = bandwidth_of(part)
    assert view is not None and view.threads == 2
    assert view.bytes_per_s() == pytest.approx(8 * 2**20 / sorted(part["runs"][0]["read_s"])[1])
    assert view.bytes_per_s(3) is None
    assert [r["threads"] for r in probe(1, size=2**20, passes=1)["runs"]] == [1]


def test_the_probe_runs_in_its_own_process_and_its_part_is_schema_valid():
    """A record holding the probe's part under the cost profile is valid (the part is optional)."""
    part = run_probe(1, size=4 * 2**20, passes=2)
    doc = load_record(DATA_DIR / "record-v4.json")
    doc["wallclock"]["profile"]["bandwidth"] = part
    validate(doc, "probe.json")
    assert part["caches"]["source"] in ("sysfs", "lscpu", "sysctl", "unknown")


def test_a_run_records_the_probe_and_every_tiers_bytes(both_suites):
    """The demo run's cost profile starts with the probe; every tier has its step counted, int4 under int8 under
    fp32; the demo's tiers fit in any last-level cache this century, so none gets a ratio."""
    from measure.analysis.roofline import roofline

    doc, _ = both_suites
    probe = doc["wallclock"]["profile"]["bandwidth"]
    assert [r["threads"] for r in probe["runs"]] == [1] and len(probe["runs"][0]["read_s"]) == bandwidth.PASSES
    assert probe["buffer_bytes"] >= LEAST_BYTES
    steps = {name: t["traffic"] for name, t in doc["tiers"].items()}
    assert set(steps) == {"base-fp32", "base-int8", "small-int4"}
    assert (
        steps["small-int4"]["weights_bytes"] < steps["base-int8"]["weights_bytes"] < steps["base-fp32"]["weights_bytes"]
    )
    found = roofline(from_document(doc, "run.json"))
    assert found is not None and found.bandwidth is not None
    if found.bandwidth.last_level_bytes:
        assert {t.limit for t in found.tiers} == {"cache"}
        assert "kernels" not in doc["wallclock"]["profile"]  # no tier beyond the cache: no kernel timed alone
