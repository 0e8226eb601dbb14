"""Verdicts that rest on what a budget cut say so; a run without a budget reads as before."""

from __future__ import annotations

import json

from tests_support import DATA_DIR, real_size_record

from measure.analysis.rules import verdicts
from measure.record.model import from_document


def test_without_a_plan_no_answer_changes():
    doc = json.loads((DATA_DIR / "record-v3-lm.json").read_text(encoding="utf-8"))
    found = verdicts(from_document(doc, "plain"))
    assert found and not any("budget" in v.answer for v in found)


def test_the_cut_is_named_beside_the_answers_that_rest_on_it():
    doc = real_size_record(repeats=3)
    doc["plan"]["framing_rows"] = doc["plan"]["framing_rows"][:2]
    plain = verdicts(from_document(json.loads((DATA_DIR / "record-v3-lm.json").read_text()), "plain"))
    found = verdicts(from_document(doc, "budgeted"))
    by_topic = {}
    for v in found:
        by_topic.setdefault(v.topic, v)
    assert by_topic["decode-linear"].answer.endswith("(budget: 3 repeat(s): no 95% interval)")
    assert by_topic["framing-parity"].answer.endswith(f"(budget: on 2 of {doc['golden']['rows']} rows)")
    assert {v.outcome for v in found if v.topic == "framing-parity"} == {
        v.outcome for v in plain if v.topic == "framing-parity"
    }  # the same rule, the same facts: only the answer says more
    assert all("budget" not in v.answer for v in found if v.topic.startswith("runtime-parity"))


def test_fidelity_verdicts_name_the_fidelity_rows_not_the_framing_rows():
    """A plan scores every golden row for fidelity while framing some: the fidelity answers carry no cut; a plan
    from before fidelity had rows of its own reads the framing rows, as it scored them."""
    from measure.analysis.plan_notes import notes
    from measure.record.model.plan import RunPlan

    doc = real_size_record(repeats=3)
    rows = doc["golden"]["rows"]
    doc["plan"]["framing_rows"] = doc["plan"]["framing_rows"][:2]
    doc["plan"]["fidelity_rows"] = list(range(rows))
    told = notes(RunPlan.from_dict(doc["plan"]), rows, 6)
    assert "fidelity" not in told and told["framing-parity"] == f"on 2 of {rows} rows"
    del doc["plan"]["fidelity_rows"]
    assert notes(RunPlan.from_dict(doc["plan"]), rows, 6)["fidelity"] == f"on 2 of {rows} rows"
