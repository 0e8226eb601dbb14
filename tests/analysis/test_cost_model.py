"""The measured cost model: timed calls and layouts recorded by a real run on the demo, read typed, analysed, shown.

Figures are checked against the record's own raw samples, recomputed here, never against timings.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from tests_support import DATA_DIR, build, html, site_project, write_config

from measure import bundled
from measure.analysis.cost_model import cost_model
from measure.analysis.record_analysis import analyse
from measure.analysis.speedup import fit_batch_cost
from measure.analysis.stats import paired_ratio, predicted_speedup
from measure.analysis.timings import pair_timings
from measure.errors import MeasureError
from measure.record.io import load, load_record, validate
from measure.record.model import from_document
from measure.site.charts import Palette
from measure.site.context import RunLinks
from measure.site.evidence import row_id
from measure.site.pages.wallclock import wallclock_page
from measure.site.render import render_results
from measure.suites.config import load_config
from measure.suites.runner import run

DATA = DATA_DIR
LAYOUTS = f"""
[[layouts]]
name = "small-fp32"
merged = "{bundled.SMALL_MERGED.as_posix()}"
split = "{bundled.SMALL_OPTIMUM.as_posix()}"
"""


def _config(tmp: Path, rows: int = 6, repeats: int = 3) -> Path:
    path = write_config(tmp, rows=rows, repeats=repeats)
    text = path.read_text(encoding="utf-8").replace(
        "[wallclock]\n", "[wallclock]\nprofile = false\ncall_cost_rows = 4\n"
    )
    path.write_text(text + LAYOUTS, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """One real wall-clock run over 6 golden rows with the call costs (on by default) and one layout pair."""
    tmp = tmp_path_factory.mktemp("callcost")
    path = run(load_config(_config(tmp)), ["wallclock"], tmp / "results", argv=["test"])
    return path, load_record(path), load(path)


def test_the_suite_records_call_costs_per_verifier_width_and_per_drafter(recorded):
    _, doc, _ = recorded
    costs = doc["wallclock"]["call_costs"]
    assert costs["rows"] == 4 and costs["repeats"] == 3
    tiers = costs["tiers"]
    assert set(tiers) == {"base-int8", "small-int4"}  # the pair's verifier and drafter, nothing else
    assert tiers["base-int8"]["n"] == [1, 2, 3, 4, 5]  # k = 2, 4: up to max(k) + 1
    assert tiers["small-int4"]["n"] == [1]
    for t in tiers.values():
        assert np.asarray(t["call_s"]).shape == (3, len(t["n"]), 4)  # repeats x widths x rows
        assert np.all(np.asarray(t["call_s"]) > 0)
        assert len(t["cache_tokens"]) == 4 and all(c >= 1 for c in t["cache_tokens"])


def test_the_suite_records_both_layouts_interleaved_with_the_same_outputs(recorded):
    _, doc, _ = recorded
    pair = doc["wallclock"]["layouts"]["small-fp32"]
    assert pair["same_outputs"] is True and pair["repeats"] == 3
    assert pair["merged"]["layout"] == "optimum-merged" and pair["split"]["layout"] == "optimum"
    assert pair["merged"]["tokens"] == pair["split"]["tokens"]
    for side in ("merged", "split"):
        assert len(pair[side]["wall_s"]) == 3 and all(len(rep) == 6 for rep in pair[side]["wall_s"])


def test_the_model_reads_the_samples_typed_and_read_only(recorded):
    _, doc, record = recorded
    calls = record.wallclock.call_costs.tiers["base-int8"]
    raw = doc["wallclock"]["call_costs"]["tiers"]["base-int8"]["call_s"]
    assert calls.n == (1, 2, 3, 4, 5)
    assert calls.samples(3).tolist() == [float(np.median(rep[2])) for rep in raw]
    assert calls.samples(9) is None
    assert not calls.call_s.flags.writeable
    (layout,) = record.wallclock.layouts
    assert layout.name == "small-fp32" and layout.merged.wall_s.shape == (3, 6)


def test_cost_model_figures_follow_from_the_record(recorded):
    _, doc, record = recorded
    pairs = pair_timings(record)
    model = cost_model(record, pairs)
    assert [r.case for r in model.pairs] == [p.case for p in pairs]
    raw = {name: np.asarray(t["call_s"]) for name, t in doc["wallclock"]["call_costs"]["tiers"].items()}
    for row, p in zip(model.pairs, pairs, strict=True):
        case = doc["wallclock"]["cases"][row.case]
        # each repeat's median over rows, then the median over repeats; n = k + 1 sits at index k
        single = float(np.median(np.median(raw["base-int8"][:, 0, :], axis=1)))
        batched = float(np.median(np.median(raw["base-int8"][:, row.k, :], axis=1)))
        draft = float(np.median(np.median(raw["small-int4"][:, 0, :], axis=1)))
        rounds = sum(case["rounds"])
        tokens = (sum(case["accepted"]) + rounds) / rounds
        drafts = sum(case["drafter_calls"]) / rounds
        pred = row.prediction
        assert (row.single_s, row.batched_s, row.draft_s) == (single, batched, draft)
        assert not row.batched_fitted
        assert pred.acceptance == p.acceptance == sum(case["accepted"]) / sum(case["proposed"])
        assert pred.leviathan == predicted_speedup(p.acceptance, row.k, draft / single)
        assert pred.measured_cost == pytest.approx(tokens * single / (drafts * draft + batched), rel=1e-12)
        assert row.observed == p.observed_speedup
        assert row.efficiency.value == p.observed_speedup.value / pred.measured_cost
        assert pred.efficiency == row.efficiency.value
        # the shortfall split: inside onnxruntime, greedy verifier's run time over the speculative decode's
        greedy_run = np.asarray(doc["wallclock"]["cases"]["base-int8"]["run_s"]).sum(axis=1)
        assert row.inside == paired_ratio(greedy_run, np.asarray(case["run_s"]).sum(axis=1))
        assert row.harness == row.observed.value / row.inside.value
        assert row.in_loop == row.inside.value / pred.measured_cost
        assert row.in_loop * row.harness == pytest.approx(row.efficiency.value, rel=1e-12)


def test_batch_cost_line_and_ratios_are_the_samples_own(recorded):
    _, doc, record = recorded
    (tier,) = cost_model(record, pair_timings(record)).tiers
    raw = np.median(np.asarray(doc["wallclock"]["call_costs"]["tiers"]["base-int8"]["call_s"]), axis=2)
    assert tier.tier == "base-int8" and tier.n == (1, 2, 3, 4, 5)
    assert tier.vs_single[0].value == pytest.approx(1.0)
    assert tier.ratio(3) == paired_ratio(raw[:, 2], raw[:, 0])
    assert tier.line == fit_batch_cost([1, 2, 3, 4, 5] * 3, raw.ravel().tolist())
    assert tier.call_us[0].value == pytest.approx(1e6 * float(np.median(raw[:, 0])))


def test_layout_finding_is_the_paired_ratio_per_token(recorded):
    _, doc, record = recorded
    (finding,) = cost_model(record, pair_timings(record)).layouts
    pair = doc["wallclock"]["layouts"]["small-fp32"]
    tokens = sum(pair["merged"]["tokens"])
    merged = [1000 * sum(rep) / tokens for rep in pair["merged"]["wall_s"]]
    split = [1000 * sum(rep) / tokens for rep in pair["split"]["wall_s"]]
    expected = paired_ratio(merged, split)
    assert finding.ratio.value == pytest.approx(expected.value, rel=1e-12)
    assert (finding.ratio.lo, finding.ratio.hi) == pytest.approx((expected.lo, expected.hi), rel=1e-12)
    assert finding.same_outputs and finding.repeats == 3


def test_a_record_without_the_fields_has_no_cost_model_and_its_page_renders(tmp_path):
    doc = load_record(DATA / "record-v2.json")  # a v2 record, migrated as every reader takes it
    record = from_document(doc, "record-v2.json")
    assert record.wallclock.call_costs is None and record.wallclock.layouts == ()
    a = analyse(record)
    assert a.cost_model is None
    assert wallclock_page(a, RunLinks(frozenset()), Palette()).cost is None
    place = tmp_path / "results" / doc["machine_id"]
    place.mkdir(parents=True)
    shutil.copy(DATA / "record-v2.json", place / f"{doc['run_id']}.json")
    pages = render_results(tmp_path / "results").pages
    page = pages["results/wallclock.md"]
    assert "## Speculative pairs" in page and "Cost model" not in page and "Decoder layouts" not in page


@pytest.mark.parametrize(
    "break_it, field",
    [
        (lambda d: d["wallclock"]["call_costs"]["tiers"]["base-int8"]["call_s"][0].pop(), "call_s"),
        (lambda d: d["wallclock"]["call_costs"]["tiers"]["base-int8"]["call_s"][1][0].pop(), "call_s"),
        (lambda d: d["wallclock"]["call_costs"]["tiers"]["base-int8"]["cache_tokens"].pop(), "cache_tokens"),
        (
            lambda d: d["wallclock"]["call_costs"]["tiers"].update(
                nope=d["wallclock"]["call_costs"]["tiers"]["small-int4"]
            ),
            "nope",
        ),
        (lambda d: d["wallclock"]["layouts"]["small-fp32"]["split"]["wall_s"].pop(), "layouts/small-fp32"),
        (lambda d: d["wallclock"]["layouts"]["small-fp32"]["merged"]["tokens"].pop(), "merged/tokens"),
    ],
)
def test_a_malformed_cost_sample_is_refused_naming_its_field(recorded, break_it, field):
    _, doc, _ = recorded
    bad = copy.deepcopy(doc)
    break_it(bad)
    with pytest.raises(MeasureError, match=field):
        validate(bad, "bad.json")


def test_layouts_config_errors_name_the_key(tmp_path):
    path = _config(tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('split = "', 'split = "/nowhere'), encoding="utf-8")
    with pytest.raises(MeasureError, match=r"layouts\[0\]\.split"):
        load_config(path)
    path.write_text(text + 'colour = "red"\n', encoding="utf-8")
    with pytest.raises(MeasureError, match=r"layouts\[0\]\.colour"):
        load_config(path)
    path.write_text(text.replace("call_cost_rows = 4", "call_cost_rows = 0"), encoding="utf-8")
    with pytest.raises(MeasureError, match="call_cost_rows"):
        load_config(path)


def test_the_demo_config_times_its_merged_and_split_layouts():
    config = load_config()
    assert [(v.name, v.merged, v.split) for v in config.layouts] == [
        ("small-fp32", bundled.SMALL_MERGED, bundled.SMALL_OPTIMUM)
    ]
    assert config.wallclock.call_costs
    assert config.to_dict()["layouts"][0]["name"] == "small-fp32"


def test_the_wall_clock_page_shows_the_cost_model_with_stable_anchors(recorded, tmp_path):
    path, _, _ = recorded
    project = site_project(tmp_path)
    done = build(project, path.parent.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    page = html(project, "results/wallclock")
    assert 'id="cost-model"' in page and 'id="decoder-layouts"' in page
    for case in ("small-int4->base-int8@k2", "small-int4->base-int8@k4"):
        assert f'id="{row_id("cost", case)}"' in page
    assert f'id="{row_id("batch", "base-int8")}"' in page
    assert 'id="where-the-prediction-went"' in page and "measure&#39;s own loop keeps" in page
    for case in ("small-int4->base-int8@k2", "small-int4->base-int8@k4"):
        assert f'id="{row_id("spent", case)}"' in page
    assert f'id="{row_id("layout", "small-fp32")}"' in page
    assert re.search(r"merged costs \d\.\d\d× split per token &#91;\d\.\d\d, \d\.\d\d&#93;", page)
    assert 'id="wallclock-batch-cost"' in page
    assert 'href="#cost-model"' in page  # the speculative pairs table points to it
    metrics = json.loads((project.parent / "site" / "results" / "metrics.json").read_text(encoding="utf-8"))
    (machine,) = metrics["machines"].values()
    assert set(machine["cost_model"]) == {"small-int4->base-int8@k2", "small-int4->base-int8@k4"}
    for figures in machine["cost_model"].values():
        assert figures["harness"] * figures["calls_in_loop_over_alone"] == pytest.approx(figures["efficiency"]["value"])
    assert machine["layouts"]["small-fp32"]["same_outputs"] is True
    methods = html(project, "results/methods")
    assert "measured cost model" in methods.lower() and "efficiency" in methods


def test_a_run_stopped_before_the_first_repeat_reads_without_a_cost_model(recorded):
    _, doc, _ = recorded
    stopped = copy.deepcopy(doc)
    stopped["complete"] = False
    stopped["wallclock"]["call_costs"]["repeats"] = 0
    for t in stopped["wallclock"]["call_costs"]["tiers"].values():
        t["call_s"] = []
    for side in ("merged", "split"):
        stopped["wallclock"]["layouts"]["small-fp32"][side]["wall_s"] = []
        stopped["wallclock"]["layouts"]["small-fp32"][side]["run_s"] = []
    validate(stopped, "stopped.json")
    record = from_document(stopped, "stopped.json")
    assert record.wallclock.call_costs.tiers["base-int8"].samples(1) is None
    model = cost_model(record, pair_timings(record))
    assert model.pairs == () and model.tiers == () and model.layouts == ()


def test_show_prints_the_cost_model_and_the_layout_finding(recorded, capsys):
    from measure.cli import main

    path, _, record = recorded
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    row = cost_model(record, pair_timings(record)).pairs[0]
    assert "cost model (predicted speedups from timed calls" in out
    assert f"{row.prediction.measured_cost:>10.2f}" in out.split(row.case)[-1].splitlines()[0]
    assert "layouts small-fp32: merged costs " in out
