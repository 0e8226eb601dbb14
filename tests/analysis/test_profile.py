"""The cost profile on the real demo tiers: load time, first token, peak memory, threads, and older records."""

from __future__ import annotations

import math
import sys
from dataclasses import replace

import numpy as np
import pytest
from tests_support import ROOT, write_config

from measure.analysis.comparison import compare_records
from measure.analysis.profile import metric_samples, tier_costs
from measure.analysis.record_analysis import analyse
from measure.cli import main
from measure.errors import MeasureError
from measure.record.io import load, load_record
from measure.record.model import from_document
from measure.site.charts import Palette
from measure.site.context import RunLinks
from measure.site.metrics import metrics
from measure.site.pages.wallclock import wallclock_page
from measure.suites import resources
from measure.suites.config import load_config
from measure.suites.runner import run

OLD_RECORDS = [ROOT / "tests" / "data" / "record-v1.json", ROOT / "tests" / "data" / "record-v2.json"]


def _finite_positive(values) -> bool:
    return len(values) > 0 and all(math.isfinite(v) and v > 0 for v in np.ravel(values))


def test_load_and_first_token_samples_exist_for_every_tier(both_suites):
    doc, _ = both_suites
    profile = doc["wallclock"]["profile"]
    assert set(profile["tiers"]) == set(doc["tiers"])
    for name, t in profile["tiers"].items():
        assert len(t["load_cold_s"]) == 2 and _finite_positive(t["load_cold_s"]), name
        assert len(t["load_warm_s"]) == 2 and _finite_positive(t["load_warm_s"]), name
        case = doc["wallclock"]["cases"][name]
        assert len(case["first_token_s"]) == 3 and all(len(rep) == 16 for rep in case["first_token_s"])
        assert _finite_positive(case["first_token_s"])
        for first, wall in zip(np.ravel(case["first_token_s"]), np.ravel(case["wall_s"]), strict=True):
            assert first <= wall  # the first token is part of the row's decode
    for case in doc["wallclock"]["cases"].values():
        assert ("first_token_s" in case) == (case["kind"] == "greedy")


def test_worker_memory_of_fp32_exceeds_int8(both_suites):
    """base-fp32's weights are about 4x base-int8's: its one-tier worker must peak higher."""
    doc, _ = both_suites
    profile = doc["wallclock"]["profile"]
    assert profile["memory"]["unit_bytes"] == (1 if sys.platform == "darwin" else 1024)
    assert profile["memory"]["source"] == ("VmHWM" if sys.platform.startswith("linux") else "ru_maxrss")
    fp32, int8 = (np.median(profile["tiers"][n]["peak_rss_bytes"]) for n in ("base-fp32", "base-int8"))
    baseline = np.median(profile["baseline"]["peak_rss_bytes"])
    assert fp32 > int8 > baseline
    costs = {c.tier: c for c in tier_costs(from_document(doc, "test"))}
    assert costs["base-fp32"].memory_bytes.value > costs["base-int8"].memory_bytes.value > 0
    assert costs["base-fp32"].memory_bytes.value - costs["base-int8"].memory_bytes.value > 2_000_000


def test_analysis_states_percentiles_and_ratios(both_suites):
    doc, _ = both_suites
    record = from_document(doc, "test")
    costs = {c.tier: c for c in tier_costs(record)}
    for c in costs.values():
        assert c.row_ms.p50.value <= c.row_ms.p90.value <= c.row_ms.p99.value
        assert c.row_ms.p90.lo <= c.row_ms.p90.value <= c.row_ms.p90.hi
        assert c.first_token_ms.value > 0 and c.next_token_ms.value > 0
        assert c.load_cold_ms.value > 0 and c.load_warm_ms.value > 0
    assert costs["base-int8"].size_vs_plain == 1.0 and costs["base-int8"].memory_vs_plain is None
    assert costs["small-int4"].size_vs_plain < 0.5
    assert costs["small-int4"].memory_vs_plain.value < 1
    found = {(v.topic, v.subject): v for v in analyse(record).verdicts}
    assert found["lite-smaller", "small-int4"].outcome == "success"
    assert found["lite-lighter", "small-int4"].outcome == "success"
    assert ("lite-faster-load", "small-int4") in found
    m = metrics({"m": analyse(record)})["machines"]["m"]["profile"]
    assert m["small-int4"]["memory_bytes"]["value"] > 0 and m["base-fp32"]["first_token_ms"]["value"] > 0


def test_compare_gates_on_profile_metrics(both_suites):
    doc, _ = both_suites
    record = from_document(doc, "test")
    for metric in ("memory_bytes", "load_cold_ms", "first_token_ms", "row_p99_ms"):
        rows = compare_records(record, record, metric=metric)
        assert {r.case for r in rows} == set(doc["tiers"]), metric
        assert all(r.ratio.value == pytest.approx(1.0) and r.outcome != "slower" for r in rows)
    assert metric_samples(record, "load_warm_ms")["base-fp32"].size == 2


def test_thread_sweep_stores_every_count(tmp_path):
    config = load_config(write_config(tmp_path, rows=3, repeats=2, threads=(1, 2)))
    config = replace(config, wallclock=replace(config.wallclock, profile=False))
    doc = load_record(run(config, ["wallclock"], tmp_path / "results", argv=["test"]))
    sweep = doc["wallclock"]["profile"]["threads"]
    assert sweep["counts"] == [1, 2] and set(doc["wallclock"]["profile"]) == {"threads"}
    for name, t in sweep["tiers"].items():
        assert [r["intra_op_threads"] for r in t["runs"]] == [1, 2], name
        assert all(len(r["wall_s"]) == 2 and _finite_positive(r["wall_s"]) for r in t["runs"])
        assert t["fastest"] in (1, 2)
    costs = tier_costs(from_document(doc, "test"))
    assert all(set(c.threads_ms_per_token) == {1, 2} and c.fastest_threads in (1, 2) for c in costs)


def test_thread_counts_are_checked(tmp_path):
    path = write_config(tmp_path, threads=(1, 1))
    with pytest.raises(MeasureError, match=r"wallclock\.threads: expected each count once"):
        load_config(path)
    path.write_text(path.read_text(encoding="utf-8").replace("threads = [1, 1]", "threads = [0]"), encoding="utf-8")
    with pytest.raises(MeasureError, match="thread counts >= 1"):
        load_config(path)


@pytest.mark.parametrize("path", OLD_RECORDS, ids=lambda p: p.name)
def test_records_without_profile_load_show_and_render(path, capsys):
    record = load(path)
    assert record.wallclock.profile is None
    costs = tier_costs(record)
    assert all(c.load_cold_ms is None and c.memory_bytes is None and c.first_token_ms is None for c in costs)
    assert all(c.row_ms is not None for c in costs)  # percentiles need only the rows' wall samples
    assert main(["show", str(path)]) == 0
    assert "cost profile" not in capsys.readouterr().out
    page = wallclock_page(analyse(record), RunLinks(frozenset()), Palette())
    assert page.profile.rows == () and page.profile.latency


def test_peak_rss_states_its_unit(monkeypatch):
    peak = resources.peak_rss()
    assert peak.bytes == peak.raw * peak.unit_bytes > 0
    monkeypatch.setattr(resources.sys, "platform", "darwin")
    mac = resources.peak_rss()
    assert (mac.source, mac.unit_bytes, mac.platform) == ("ru_maxrss", 1, "darwin")


def test_compare_cli_gates_on_a_profile_metric(both_suites, capsys):
    _, path = both_suites
    assert main(["compare", str(path), str(path), "--metric", "memory_bytes", "--fail-on", "slower"]) == 0
    out = capsys.readouterr().out
    assert "new/base memory_bytes" in out and "small-int4" in out


def test_rendered_wallclock_page_and_metrics_carry_the_profile(both_suites, tmp_path):
    import json

    _, path = both_suites
    out = tmp_path / "md"
    assert main(["render", "--results", str(path.parent.parent), "--out", str(out)]) == 0
    page = (out / "wallclock.md").read_text(encoding="utf-8")
    assert "## Cost profile" in page and "### Latency percentiles" in page
    assert ("VmHWM" if sys.platform.startswith("linux") else "ru_maxrss") in page
    machine = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["machines"]
    (profile,) = (m["profile"] for m in machine.values())
    assert profile["base-fp32"]["memory_bytes"]["value"] > profile["base-int8"]["memory_bytes"]["value"]
