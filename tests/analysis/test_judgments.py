"""One judgment, every page: the Overview, Verdicts, Wall-clock, ``measure show``, summary.csv and metrics.json state
the same answer, reference and interval level for each judgment of a constructed record, read back from what each
one rendered (not a golden file per page)."""

from __future__ import annotations

import contextlib
import copy
import csv
import html
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from tests_support import DATA_DIR, timed_cases

from measure.analysis.decision import decide
from measure.analysis.judgments import judgments
from measure.analysis.record_analysis import analyse
from measure.cli import main
from measure.record.io import load_record, validate, write_atomic
from measure.record.model import from_document
from measure.site.evidence import row_id

PAIR = "small-int4->base-int8"
SYMBOL = {"success": "✓", "failure": "✗", "warning": "!", "inconclusive": "?", "info": "i"}


def _constructed() -> dict:
    """The demo record (base-fp32, base-int8 plain, small-int4 lite; a pair small-int4->base-int8 at k = 2, 4) made
    to say: base-fp32 and small-int4 name one model, ``base``, with two exports (small-int4's source small-fp32 is
    the other); small-int4 is fastest but fails a strict lite bound, so base-int8 ships, and batched framing changes
    one of its decisions; the pair is slower than its verifier at k=2 (✗) and not told from it at k=4 (?), and
    slower than small-int4, the fastest greedy tier; base-int8's repeats drift against base-fp32's, so the paired
    ratio (median of per-repeat ratios) differs from the ratio of the medians."""
    doc = load_record(DATA_DIR / "record-v5.json")
    ms = {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.15, f"{PAIR}@k2": 0.30, f"{PAIR}@k4": 0.20}
    doc = timed_cases(doc, ms)
    for tier in ("base-fp32", "small-int4"):
        doc["tiers"][tier]["model"] = "base"
    doc["config"]["policy"]["kld_mean_max"] = {"plain": 0.01, "lite": 1e-9, "default": 0.05}
    python = doc["framing"]["legs"][0]
    block = next(t for t in python["tiers"] if t["tier"] == "base-int8")["blocks"][0]
    block["argmax_agree"] -= 1
    slow, fast = [1.0, 1.5, 0.8], [0.8, 1.0, 1.25]  # base-int8 over base-fp32: 0.50 by the medians, 0.53 paired
    drifts = {"base-int8": slow, "small-int4": slow, f"{PAIR}@k2": slow, f"{PAIR}@k4": slow, "base-fp32": fast}
    for tier, drift in drifts.items():
        case = doc["wallclock"]["cases"][tier]
        for key, value in case.items():
            if key.endswith("_s") and isinstance(value, list) and len(value) == 3:
                case[key] = (np.asarray(value, dtype=float) * np.array(drift)[:, None]).tolist()
    validate(doc, "constructed", [])
    return doc


def _lm() -> dict:
    """A record of decoder-only tiers (lm-base-fp32, lm-base-int8, lm-small-int4) beside an encoder-decoder plain
    tier (base-int8) and its reference, no fidelity pass: each kind is timed against its own reference."""
    doc = load_record(DATA_DIR / "record-v3-lm.json")
    validate(doc, "constructed", [])
    return doc


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, dict]:
    """Each record rendered once, on first use: every page, show, summary.csv and metrics.json."""
    cache: dict[str, dict] = {}

    def site(name: str) -> dict:
        if name not in cache:
            cache[name] = _render(_constructed() if name == "constructed" else _lm(), tmp_path_factory.mktemp(name))
        return cache[name]

    return site


@pytest.fixture(params=["constructed", "lm"])
def rendered(request, sites) -> dict:
    return sites(request.param)


def _render(doc: dict, tmp: Path) -> dict:
    path = tmp / "results" / doc["machine_id"] / f"{doc['run_id']}.json"
    write_atomic(path, doc)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", str(path)]) == 0
        assert main(["render", "--results", str(tmp / "results"), "--out", str(tmp / "md")]) == 0
    a = analyse(from_document(load_record(path), str(path)))
    md = tmp / "md"
    return {
        "analysis": a,
        "decision": decide(a),
        "judgments": judgments(a),
        "show": out.getvalue(),
        "overview": (md / "index.md").read_text(encoding="utf-8"),
        "verdicts": (md / "verdicts.md").read_text(encoding="utf-8"),
        "wallclock": (md / "wallclock.md").read_text(encoding="utf-8"),
        "csv": list(csv.DictReader(io.StringIO((md / "summary.csv").read_text(encoding="utf-8")))),
        "metrics": json.loads((md / "metrics.json").read_text(encoding="utf-8")),
    }


def _text(markdown: str) -> str:
    """What a reader sees of Markdown: no tags, no bold marks, a link's text only, entities decoded."""
    seen = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", re.sub(r"<[^>]+>", "", markdown)).replace("**", "")
    return html.unescape(seen).replace("\\", "")


def _verdicts_page(page: str) -> dict[tuple[str, str], tuple[str, str, str]]:
    """(question, subject) -> (badge, answer, measured), read from each table under its question heading."""
    out = {}
    question = None
    for line in page.splitlines():
        if line.startswith("## "):
            question = _text(re.sub(r"\s*\{:[^}]*\}\s*$", "", line[3:])).strip()
        elif line.startswith("| <span id=") and question:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            badge, subject, answer, measured = (_text(c).strip() for c in cells[:4])
            out[(question, subject)] = (badge, answer, measured)
    return out


def _show(text: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(question, subject) -> (outcome, answer) from ``measure show``'s verdict lines."""
    out = {}
    block = text.split("\nverdicts\n", 1)[1]
    for line in block.splitlines():
        m = re.match(r"\s+\[(\w+)\s*\] (.+?\?) (.+?): (.+)$", line)
        if m:
            out[(m[2], m[3])] = (m[1], m[4])
    return out


def test_every_judgment_reads_the_same_on_verdicts_show_and_metrics(rendered):
    page, shown = _verdicts_page(rendered["verdicts"]), _show(rendered["show"])
    (machine,) = rendered["metrics"]["machines"].values()
    metrics = {(v["question"], v["subject"]): v for v in machine["verdicts"]}
    for v in rendered["judgments"]:
        key = (v.question, v.subject)
        assert page[key] == (SYMBOL[v.outcome], _text(v.answer), _text(v.measured)), key
        assert shown[key] == (v.outcome, v.answer), key
        m = metrics[key]
        assert (m["outcome"], m["answer"], m["measured"], m["value"]) == (v.outcome, v.answer, v.measured, v.value)
    # the Overview's questions are Verdicts' questions too, each one a heading above its table
    asked = {q for q, _ in page}
    for topic in ("ship",) + (("speculative-viable",) if rendered["analysis"].pairs else ()):
        (question,) = {v.question for v in rendered["judgments"] if v.topic == topic}
        assert question in asked


def test_verdicts_open_with_the_worst_answer(rendered):
    rank = {"✗": 0, "!": 1, "?": 2, "✓": 3, "i": 4}
    badges = [badge for badge, _, _ in _verdicts_page(rendered["verdicts"]).values()]
    assert rank[badges[0]] == min(rank[b] for b in badges)


def _ship_lines(overview: str) -> list[str]:
    found = (x for x in overview.splitlines() if re.search(r"\*\*(Ship |No ship decision|Fastest of|No tier)", x))
    return [_text(x).removeprefix("- ") for x in found]


def test_one_ship_line_per_model_with_the_answer_and_reference_of_its_judgment(rendered):
    lines = _ship_lines(rendered["overview"])
    ships = [v for v in rendered["judgments"] if v.topic == "ship"]
    assert len(lines) == len(ships) == len(rendered["decision"].ships)
    for v, line, s in zip(ships, lines, rendered["decision"].ships, strict=True):
        assert line.startswith(SYMBOL[v.outcome] + " "), (line, v)
        if v.outcome == "success":
            assert f"Ship {v.key} for the {v.subject} model" in line
        if s.vs_reference is not None:  # one figure and one reference, on the Overview as in the judgment
            said = f"{s.vs_reference.value:.2f}× [{s.vs_reference.lo:.2f}, {s.vs_reference.hi:.2f}] the time of"
            assert f"{said} {s.reference}" in line and f"{said} {s.reference}" in v.measured
        if s.decided:  # summary.csv names the model its row belongs to, as the ship line does
            assert next(r for r in rendered["csv"] if r["tier"] == s.tier.tier)["model"] == s.model
        for accepted in s.accepted:  # what the shipped tier carries that is not a plain yes, said on its line
            assert accepted.answer in line, (accepted, line)


def test_the_constructed_record_states_each_condition_once(sites):
    rendered = sites("constructed")
    a = rendered["analysis"]
    (ship,) = rendered["decision"].ships
    assert (ship.model, ship.tier.tier, ship.reference, ship.exports) == (
        "base",
        "base-int8",
        "base-fp32",
        ("base-fp32", "small-fp32"),
    )
    (line,) = _ship_lines(rendered["overview"])
    assert "the base model (2 exports: base-fp32, small-fp32)" in line
    assert "batched framing: no: 1 of" in line and "accepted, as no gate stops on it" in line
    # the paired ratio, not the medians': the same figure on the Overview, the CSV and the ship judgment
    base, ref = (a.tiers[[t.tier for t in a.tiers].index(n)].ms_per_token.value for n in ("base-int8", "base-fp32"))
    row = next(r for r in rendered["csv"] if r["tier"] == "base-int8")
    assert abs(float(row["vs_reference"]) - ship.vs_reference.value) < 1e-12
    assert abs(base / ref - ship.vs_reference.value) > 0.005
    assert row["speed_reference"] == row["fidelity_reference"] == "base-fp32"
    (shipped,) = [v for v in rendered["judgments"] if v.topic == "ship"]
    assert "paired: the geometric mean of per-repeat ratios" in shipped.measured
    # two questions about the pair, each answered once everywhere: against its verifier per k, against the fastest
    k2 = next(v for v in a.verdicts if v.topic == "speculative-speedup-k" and v.subject.endswith("k=2"))
    k4 = next(v for v in a.verdicts if v.topic == "speculative-speedup-k" and v.subject.endswith("k=4"))
    assert (k2.outcome, k4.outcome) == ("failure", "inconclusive")
    (viable,) = [v for v in rendered["judgments"] if v.topic == "speculative-viable"]
    assert viable.outcome == "failure" and "small-int4" in viable.answer and "97.5% interval" in viable.measured
    (spec,) = [_text(x).removeprefix("- ") for x in rendered["overview"].splitlines() if "Speculative decoding" in x]
    assert spec.startswith("✗") and "the time of small-int4 (97.5% interval, Bonferroni over k" in spec


def test_a_tier_is_timed_against_its_own_kind_on_every_page(rendered):
    a = rendered["analysis"]
    kinds = {n: t.kind for n, t in a.record.tiers.items()}
    for row in rendered["csv"]:
        for column in ("speed_reference", "kind_reference"):
            if row[column] in kinds:  # a source not timed is named, never swapped for another kind's tier
                assert kinds[row[column]] == kinds[row["tier"]], (row["tier"], column, row[column])
    (machine,) = rendered["metrics"]["machines"].values()
    plain = a.record.plain
    for tier, m in machine["tiers"].items():
        if kinds[tier] != kinds[plain]:
            assert m["ratio_vs_plain"] is None, tier  # never another kind's plain tier
    for s in rendered["decision"].ships:
        assert s.reference is None or kinds[s.reference] == s.kind


def test_two_exports_of_one_model_are_one_ship_line(tmp_path):
    doc = copy.deepcopy(_constructed())
    for tier in ("base-fp32", "small-int4"):
        del doc["tiers"][tier]["model"]
    two = decide(analyse(from_document(doc, "x")))
    assert [s.model for s in two.ships] == ["base-fp32", "small-fp32"]  # unnamed: each source its own model
    one = decide(analyse(from_document(_constructed(), "x")))
    assert [s.model for s in one.ships] == ["base"]


def test_a_model_without_a_timed_reference_says_what_is_missing():
    doc = _constructed()
    for tier in ("base-fp32", "small-int4"):
        del doc["tiers"][tier]["model"]
    doc["config"]["policy"]["kld_mean_max"]["lite"] = 0.05  # small-int4 faithful: the fastest tier of its model
    (_, small) = decide(analyse(from_document(doc, "x"))).ships
    assert small.missing == "its full-precision source small-fp32 was not timed: add it as a [[tiers]] entry"
    assert not small.decided and small.vs_reference is None and small.tier.tier == "small-int4"


def test_the_framing_line_and_the_summary_csv_say_the_framing_verdicts(rendered):
    (line,) = [_text(x) for x in rendered["overview"].splitlines() if "**Framing**" in x]
    rows = {r["tier"]: r for r in rendered["csv"]}
    framing = [v for v in rendered["judgments"] if v.topic in ("framing-parity", "prompt-framing-parity")]
    assert framing
    for v in framing:
        said = v.answer.removeprefix("no: ")
        assert (said in line) == (v.outcome == "failure"), (v, line)
        if v.topic == "framing-parity":
            changed = int(re.match(r"no: (\d+) of", v.answer)[1]) if v.outcome == "failure" else 0
            assert int(rows[v.subject]["framing_changed"]) == changed
    identical = len({v.subject for v in framing}) - len({v.subject for v in framing if v.outcome == "failure"})
    assert f"the other {identical} tier(s) decode identically" in line or "changes no decode" in line


def test_the_wall_clock_page_shows_each_k_judgment_and_no_ratio_across_kinds(rendered):
    page = rendered["wallclock"]
    for v in rendered["judgments"]:
        if v.topic != "speculative-speedup-k":
            continue
        row = next(line for line in page.splitlines() if f'<span id="{row_id("case", v.key)}">' in line)
        assert f"{v.value:.2f}×<br><small>[{v.lo:.2f}, {v.hi:.2f}]</small>" in row, (v, row)
    r = rendered["analysis"].record
    plain_kind = r.tiers[r.plain].kind
    for name, tier in r.tiers.items():
        row = next((line for line in page.splitlines() if f'<span id="tier-{name}"></span>' in line), None)
        if row is not None and tier.kind != plain_kind:
            assert row.split(" | ")[2].strip() == "-", row  # × plain: never another kind's plain tier
