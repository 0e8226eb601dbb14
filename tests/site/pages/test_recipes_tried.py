"""What ``measure explore`` tried, on the Overview: every candidate with its stage, screening figures and reason.
The record is the demo's two-recipe explore run (tests/data/record-v5-explore.json) with dropped candidates
added by hand, one whose reason carries markup."""

from __future__ import annotations

import copy
import html
import re

from tests_support import DATA_DIR

from measure.analysis.record_analysis import analyse
from measure.cli import main
from measure.record.io import load_record, validate, write_record
from measure.record.model import from_document
from measure.site.pages.recipes_tried import recipes_tried

EXPLORE = load_record(DATA_DIR / "record-v5-explore.json")
HOSTILE = "<script>alert(1)</script> | **bold** [x](javascript:y)"


def _with_dropped() -> dict:
    """Two more candidates on small-fp32: int4 dropped at screening (its reason markup), static int8 refused."""
    doc = copy.deepcopy(EXPLORE)
    measured = doc["explore"]["candidates"][2]
    screened = copy.deepcopy(measured) | {"tier": "small-int4", "dropped": "fidelity", "reason": HOSTILE}
    screened["recipe"] = {"name": "int4<b>", "method": "matmul-nbits", "bits": 4, "block_size": 32}
    screened["recipe"] |= {"symmetric": False, "accuracy_level": None}
    screened["screen"]["outcome"] = "failure"
    refused = {
        "reference": "small-fp32",
        "recipe": {"name": "static", "method": "static-int8", "bits": 8},
        "tier": "small-static",
        "dropped": "quantize",
        "reason": "no calibration rows for this model",
        "screen": None,
    }
    doc["explore"]["candidates"] += [screened, refused]
    validate(doc, "constructed", [])
    return doc


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_every_candidate_is_listed_with_its_stage_figures_and_reason():
    found = recipes_tried(analyse(from_document(_with_dropped(), "constructed")))
    assert found is not None and len(found.rows) == 6
    stages = [_text(r.stage) for r in found.rows]
    assert sum("measured" in s for s in stages) == 4
    assert "dropped at screening" in stages[4] and "dropped at quantize" in stages[5]
    kld = EXPLORE["explore"]["candidates"][2]["screen"]["kld_mean"]
    assert _text(found.rows[4].kld_mean).split() == [f"{kld['value']:.2g}", f"[{kld['lo']:.2g},", f"{kld['hi']:.2g}]"]
    assert _text(found.rows[5].kld_mean) == "-" and _text(found.rows[5].ms_per_token) == "-"
    assert "wallclock.md#tier-small-int8" in found.rows[2].tier  # a measured tier links to its timing
    lead = _text(found.lead)
    assert "6 candidates, 4 measured, 2 dropped (1 dropped at screening, 1 dropped at quantize)" in lead
    assert "the first 6 golden rows" in lead and "plain bounds" in lead


def test_a_record_no_search_made_lists_nothing():
    doc = copy.deepcopy(EXPLORE)
    doc.pop("explore")
    assert recipes_tried(analyse(from_document(doc, "plain run"))) is None


def test_the_overview_of_an_explore_run_lists_the_dropped_candidate_escaped(tmp_path):
    doc = _with_dropped()
    write_record(tmp_path / "results" / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    assert main(["render", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "md")]) == 0
    page = (tmp_path / "md" / "index.md").read_text(encoding="utf-8")
    assert "## Recipes tried" in page
    assert "<script>alert" not in page and "int4<b>" not in page and "](javascript" not in page  # inert text
    row = next(line for line in page.splitlines() if "small-int4" in line and "dropped at screening" in line)
    assert html.unescape(row).count(HOSTILE) == 1 and "int4<b>" in html.unescape(row)
    assert any("small-static" in line and "dropped at quantize" in line for line in page.splitlines())


def test_a_recipes_settings_read_as_words_and_an_unset_one_is_not_said():
    found = recipes_tried(analyse(from_document(_with_dropped(), "constructed")))
    assert found is not None
    said = _text(found.rows[4].recipe)
    assert "4-bit · block 32 · asymmetric" in said and "None" not in said and "accuracy" not in said
