"""The decision block and the speed-fidelity chart say what constructed records mean (tests_support.timed_cases)."""

from __future__ import annotations

import copy
import html
import re

import pytest
from tests_support import DATA_DIR, timed_cases

from measure.analysis.decision import decide
from measure.analysis.headline import headline
from measure.analysis.recipe_advice import advise
from measure.analysis.record_analysis import analyse
from measure.cli import main
from measure.record.io import load_record, validate, write_record
from measure.record.model import from_document
from measure.site.pages.decision import decision_block

PAIR = ("small-int4->base-int8@k2", "small-int4->base-int8@k4")


@pytest.fixture(scope="module")
def golden() -> dict:
    return load_record(DATA_DIR / "record-v4.json")


def _block(doc: dict):
    validate(doc, "constructed", [])
    a = analyse(from_document(doc, "constructed"))
    d = decide(a)
    return d, decision_block(d, headline(a))


def _text(md: str) -> str:
    """What a reader sees of one Markdown line: no tags, no bold marks, a link's text only."""
    seen = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", re.sub(r"<[^>]+>", "", md)).replace("**", "")
    return html.unescape(seen)


def _same_model(doc: dict) -> dict:
    for t in doc["fidelity"]["tiers"]:
        if t["tier"] == "small-int4":
            t["reference"] = "base-fp32"
    return doc


def test_a_pair_slower_than_the_fastest_greedy_tier_reads_not_viable_on_quantized_artifacts(golden):
    ms = {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10, PAIR[0]: 0.16, PAIR[1]: 0.15}
    _, block = _block(timed_cases(golden, ms))
    (line,) = map(_text, block.speculative)
    assert line.startswith("✗ Speculative decoding is not viable on quantized CPU artifacts")
    assert "no pair beats small-int4, the fastest greedy tier of its kind" in line
    assert re.search(r"at its best k=4 0\.15\d ms/token, 1\.[45]\d× \[", line), line
    # each interval says its own level where it stands: the Bonferroni one against the fastest tier, 95% the other
    assert re.search(
        r"1\.[45]\d× \[[\d.]+, [\d.]+\] the time of small-int4 \(97\.5% interval, Bonferroni over k;", line
    )
    assert re.search(r"; 0\.7\d× \[[\d.]+, [\d.]+\] of its verifier base-int8 alone, 95\.0% interval\)", line), line
    assert "Intervals at" not in line
    assert "(encoder-decoder)" not in line  # one kind in the record: no kind named


def test_the_int4_line_says_int4_kernels_lose_to_int8_and_size_stays_apart(golden):
    _, block = _block(_same_model(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.26})))
    (line,) = map(_text, block.precision)
    assert line.startswith("Precision, the base-fp32 model alone:")
    assert re.search(
        r"small-int4 \(int4, accuracy level \d[^)]*\) 1\.3\d× \[[\d.]+, [\d.]+\] the time of base-int8", line
    )
    assert line.endswith("int4 kernels lose to int8 here.")
    assert not any("Model size" in _text(x) for x in block.precision)


def test_a_faster_tier_that_fails_fidelity_is_named_with_its_figure_and_the_next_one_shipped(golden):
    doc = _same_model(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10}))
    doc["config"]["policy"]["kld_mean_max"] = {"plain": 0.01, "lite": 1e-9, "default": 0.05}
    _, block = _block(doc)
    (ship,) = block.ship
    text = _text(ship)
    assert text.startswith("✓ Ship base-int8 for the base-fp32 model:")
    assert "0.50× [" in text and "the time of base-fp32" in text
    assert re.search(r"Faster but not faithful: small-int4 \(mean KLD [\d.e-]+ > 1e-09\)", text), text
    assert 'href="wallclock.md#tier-base-int8"' in ship or "(wallclock.md#tier-base-int8)" in ship  # evidence
    assert "framing.md#fidelity-base-int8" in ship


def test_the_gates_line_lists_each_gated_check(golden):
    _, block = _block(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10}))
    text = _text(block.gates)
    assert text.startswith("Gates: `measure check` gates ")
    assert "decoding is O(T)" in text and "not a gate" in text


def test_a_pair_whose_output_leaves_greedy_says_so_beside_its_speed(golden):
    ms = {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10, PAIR[0]: 0.16, PAIR[1]: 0.15}
    doc = timed_cases(golden, ms)
    acc = next(a for a in doc["framing"]["acceptance"] if not a["self"])
    acc["preserved"], acc["differing"] = acc["rows"] - 1, [{"line": 1, "input": "a", "speculative": "b", "greedy": "c"}]
    d, block = _block(doc)
    assert d.speculative[0].preserved == (acc["rows"] - 1, acc["rows"])
    (line,) = map(_text, block.speculative)
    assert f"✗ output equals greedy on {acc['rows'] - 1} of {acc['rows']} rows" in line
    _, kept = _block(timed_cases(golden, ms))
    assert "output equals greedy" not in _text(kept.speculative[0])  # said only where it fails


def test_an_unjudged_quantized_tier_is_never_shipped_and_the_line_says_how_to_judge_it(golden):
    """small-int4 left without a reference (as a run records it): no ship line takes it, the Overview names it with
    the reason the run gave, and its Summary verdict is not a clean pass."""
    doc = _same_model(timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10}))
    doc["fidelity"]["tiers"] = [t for t in doc["fidelity"]["tiers"] if t["tier"] != "small-int4"]
    doc["fidelity"]["unjudged"] = [{"tier": "small-int4", "reason": "no full-precision tier of its kind holds it"}]
    d, block = _block(doc)
    assert d.unjudged == (("small-int4", "no full-precision tier of its kind holds it"),)
    ships = [_text(s) for s in block.ship]
    assert not any("Ship small-int4" in s for s in ships)
    (said,) = [s for s in ships if s.startswith("? Not judged")]
    assert "small-int4 (no full-precision tier of its kind holds it)" in said and 'reference = "TIER"' in said


def test_without_any_judged_tier_the_hint_names_the_tiers_and_not_a_setting_already_set(golden):
    doc = timed_cases(golden, {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10})
    doc["fidelity"]["tiers"] = []
    doc["fidelity"]["unjudged"] = [
        {"tier": "base-int8", "reason": "no full-precision tier of its kind holds its weights"},
        {"tier": "small-int4", "reason": "no full-precision tier of its kind holds its weights"},
    ]
    _, block = _block(doc)
    (ship,) = map(_text, block.ship)
    assert "fidelity not measured, so no tier is judged fit to ship: base-int8, small-int4 have no reference" in ship
    assert "[framing] fidelity = true" not in ship


def test_the_framing_line_counts_positions_times_framings_and_names_a_tier_whose_prompt_changes():
    """A decode position is fed in every framing: 1 changed of 240 is 80 positions × 3 framings; a tier whose
    prompt alone changes is named too, never counted among those that decode identically."""
    import copy

    doc = copy.deepcopy(load_record(DATA_DIR / "record-v3-lm.json"))
    tiers = {t["tier"]: t for t in doc["framing"]["legs"][0]["tiers"]}
    tiers["base-int8"]["blocks"][0]["argmax_agree"] -= 1
    tiers["lm-base-int8"]["prefill"][0]["argmax_agree"] -= 2
    _, block = _block(doc)
    line = _text(block.framing)
    assert "base-int8 (output: 1 of 240 argmax decisions change (80 positions × 3 framings))" in line
    assert re.search(
        r"lm-base-int8 \(prompt: \d+ of [\d,]+ prompt decisions change \(\d+ positions × \d framings\)\)", line
    )
    assert "the other 3 tier(s) decode identically, prompt and output" in line


EXPLORE = DATA_DIR / "record-v5-explore.json"


def _strict_run(explore: dict) -> dict:
    """The explore run's tiers as a later ordinary run whose policy no quantized tier meets (KLD bound 1e-12)."""
    doc = copy.deepcopy(explore)
    doc.pop("explore")
    doc["config"]["policy"]["kld_mean_max"] = 1e-12
    doc["started_at"] = "2030-01-01T00:00:00Z"
    doc["finished_at"] = "2030-01-01T00:01:00Z"
    doc["run_id"] = "20300101T000000Z-000000"
    return doc


def test_the_overview_names_the_recipe_an_explore_run_found_when_no_tier_is_fit(tmp_path):
    """Rendered from a results tree: the newest run fails every quantized tier, an older explore run of the same
    models measured recipes that pass; the decision names the one that explore run would ship, per model."""
    explore = load_record(EXPLORE)
    strict = _strict_run(explore)
    machine = explore["machine_id"]
    write_record(tmp_path / "results" / machine / f"{explore['run_id']}.json", explore)
    write_record(tmp_path / "results" / machine / f"{strict['run_id']}.json", strict)
    assert main(["render", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "md")]) == 0
    seen = _text((tmp_path / "md" / "index.md").read_text(encoding="utf-8"))
    searched = analyse(from_document(explore, "explore"))
    for model in ("lm-small-fp32", "small-fp32"):
        ship = next(s for s in decide(searched).ships if s.model == model)
        assert ship.tier is not None
        recipe = next(c.recipe_name for c in searched.record.explore.candidates if c.tier == ship.tier.tier)
        assert f"Try recipe {recipe} for the {model} model" in seen, seen[:3000]
        assert f"its tier {ship.tier.tier} took" in seen
    assert f"in explore run {explore['run_id']}" in seen


def test_without_an_explore_run_the_overview_gives_the_command():
    strict = _strict_run(load_record(EXPLORE))
    a = analyse(from_document(strict, "strict"))
    d = decide(a)
    block = decision_block(d, headline(a), (), advise(d, a.record))
    said = [_text(x) for x in block.ship if "What to try" in x]
    assert len(said) == 2 and all("measure explore /" in s and "drops those that fail fidelity" in s for s in said)
