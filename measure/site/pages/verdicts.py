"""Verdicts: every question asked of the reference machine's current state, with its answer, measured value, rule
and a link to the exact row it rests on. The Overview states the decision; this page holds every check behind it."""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.judgments import judgments
from measure.analysis.record_analysis import Analysis
from measure.analysis.rules import gateable
from measure.analysis.verdict import Verdict
from measure.site.context import Md, RunLinks, RunRef, States, badge, md, trusted
from measure.site.escape import slug
from measure.site.evidence import evidence, verdict_id

RANK = {"failure": 0, "warning": 1, "inconclusive": 2, "success": 3, "info": 4}
"""Worst first: the order a reader needs."""


@dataclass(frozen=True)
class VerdictRow:
    anchor: Md
    badge: Md
    subject: Md
    answer: Md
    measured: Md
    rule: Md
    evidence: Md
    gate: Md
    """Whether ``measure check`` gates on this check (a failure there is a bug), or it is a finding."""


@dataclass(frozen=True)
class Question:
    question: Md
    anchor: Md
    rows: tuple[VerdictRow, ...]


@dataclass(frozen=True)
class VerdictsPage:
    run: RunRef | None
    machine: Md
    questions: tuple[Question, ...]


def questions(a: Analysis) -> tuple[Question, ...]:
    """One table a question, the question with the worst answer first (then as the record asks them), and in each
    table the worst rows first: a reader who stops after the first table has seen the worst there is."""
    groups: dict[str, list[Verdict]] = {}
    for v in judgments(a):  # the Overview's answers too, each under its own question
        groups.setdefault(v.topic, []).append(v)
    ordered = sorted(groups.items(), key=lambda kv: min(RANK[v.outcome] for v in kv[1]))
    return tuple(
        Question(
            md(vs[0].question),
            slug(topic),
            tuple(
                VerdictRow(
                    verdict_id(v),
                    badge(v.outcome),
                    md(v.subject),
                    md(v.answer),
                    md(v.measured),
                    md(v.rule),
                    trusted(f"[row]({evidence(v)})"),
                    md("gate" if gateable(a.record, v) else "finding"),
                )
                for v in sorted(vs, key=lambda v: RANK[v.outcome])
            ),
        )
        for topic, vs in ordered
    )


def verdicts_page(states: States, links: RunLinks) -> VerdictsPage:
    ref = states.reference
    if ref is None:
        return VerdictsPage(None, md(""), ())
    state, current = states.states[ref.machine], states.analyses[ref.machine]
    return VerdictsPage(links.ref(state.newest), md(ref.machine), questions(current))
