"""The Verdicts page opens with its worst answer: questions ordered by their worst row, rows worst first."""

from __future__ import annotations

import re

from tests_support import DATA_DIR, timed_cases

from measure.analysis.record_analysis import analyse
from measure.record.io import load_record, validate
from measure.record.model import from_document
from measure.site.pages.verdicts import RANK, questions


def _rank(badge: object) -> int:
    """The rank of the outcome a badge shows (its title attribute)."""
    found = re.search(r'title="(\w+)"', str(badge))
    assert found is not None, badge
    return RANK[found.group(1)]


def test_the_first_question_holds_the_worst_answer_and_each_table_starts_with_its_worst_row():
    ms = {"base-fp32": 0.40, "base-int8": 0.20, "small-int4": 0.10}
    doc = timed_cases(load_record(DATA_DIR / "record-v4.json"), ms)
    validate(doc, "constructed", [])
    found = questions(analyse(from_document(doc, "constructed")))
    rows = [[_rank(r.badge) for r in q.rows] for q in found]
    assert all(r == sorted(r) for r in rows)  # each table: worst row first
    worst = [r[0] for r in rows]
    assert worst == sorted(worst) and worst[0] < RANK["success"] < worst[-1] + 1  # the page opens on its worst
