"""The Wall-clock page's memory-bandwidth section and summary.csv's bound columns, from records built to hold them."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path

import pytest
from tests_support import DATA_DIR, real_size_record, with_bandwidth

from measure.analysis.record_analysis import analyse
from measure.record.io import load_record, write_atomic
from measure.record.model import from_document
from measure.site.charts import Palette
from measure.site.context import RunLinks
from measure.site.pages.roofline import roofline_figure
from measure.site.pages.wallclock import wallclock_page
from measure.site.render import render_results

WEIGHTS = {"lm-base-fp32": 540_000_000, "lm-base-int8": 220_000_000, "lm-small-int4": 2_000_000}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, str]:
    doc = with_bandwidth(real_size_record(), WEIGHTS)
    results = tmp_path_factory.mktemp("roofline") / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    return render_results(results).pages


def _page(pages: dict[str, str], name: str) -> str:
    return next(text for path, text in pages.items() if path.endswith(name))


def test_the_wallclock_page_states_the_bound_beside_the_machines_bandwidth(rendered):
    text = _page(rendered, "wallclock.md")
    section = text[text.index("## Memory-bandwidth bound") :]
    assert "This machine: read bandwidth 10.0 GB/s on 1 thread&#40;s&#41;" in section
    assert "caches &#40;sysfs&#41;: L3 32 MiB" in section
    row = next(line for line in section.splitlines() if "bound-lm-base-fp32" in line)
    assert "| 540.00 |" in row and "| 54.000 |" in row
    small = next(line for line in section.splitlines() if "bound-lm-small-int4" in line)
    assert "| in cache |" in small
    assert "lm-small-int4 reads 2.0 MB per token, which fits in the last-level cache" in section
    assert 'id="wallclock-roofline"' in section


def test_the_roofline_chart_draws_each_tier_and_the_bandwidth_line(rendered):
    text = _page(rendered, "wallclock.md")
    attr = re.search(r'id="wallclock-roofline"[^>]*data-figure="([^"]+)"', text)
    assert attr is not None
    figure = json.loads(html.unescape(attr.group(1)))
    names = [t["name"] for t in figure["data"]]
    assert set(WEIGHTS) <= set(names)
    line = next(t for t in figure["data"] if t["mode"] == "lines")
    (x0, x1), (y0, y1) = line["x"], line["y"]
    assert y0 / x0 == pytest.approx(0.1, rel=1e-4) and y1 / x1 == pytest.approx(0.1, rel=1e-4)  # 10 GB/s: 0.1 ms/MB
    assert figure["layout"]["xaxis"]["type"] == "log" and figure["layout"]["shapes"][0]["x0"] == pytest.approx(
        32 * 2**20 / 1e6
    )


def test_summary_csv_carries_bytes_bound_and_efficiency(rendered):
    rows = {r["tier"]: r for r in csv.DictReader(io.StringIO(_page(rendered, "summary.csv")))}
    fp32 = rows["lm-base-fp32"]
    assert int(fp32["bytes_per_token"]) == 540_000_000
    assert float(fp32["bound_ms_per_token"]) == pytest.approx(54.0)
    assert 0 < float(fp32["bandwidth_efficiency"]) < 1
    assert rows["lm-small-int4"]["bandwidth_efficiency"] == ""  # in cache: no ratio
    assert rows["base-fp32"]["bytes_per_token"] == ""  # not counted


def test_a_record_without_counts_has_no_section_and_no_probe_no_chart():
    old = from_document(load_record(DATA_DIR / "record-v4.json"), "r.json")
    assert wallclock_page(analyse(old), RunLinks(frozenset()), Palette()).roofline is None
    doc = with_bandwidth(real_size_record(), WEIGHTS)
    del doc["wallclock"]["profile"]["bandwidth"]
    page = wallclock_page(analyse(from_document(doc, "r.json")), RunLinks(frozenset()), Palette())
    assert page.roofline is not None and page.roofline.machine is None and page.roofline.chart is None
    a = analyse(from_document(doc, "r.json"))
    assert a.roofline is not None and roofline_figure(a.roofline, Palette()) is None


def test_the_page_template_renders_the_section_only_with_counts(tmp_path: Path):
    doc = real_size_record()
    results = tmp_path / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    assert "Memory-bandwidth bound" not in _page(render_results(results).pages, "wallclock.md")
