"""Every judgment of one record, computed once: the rules' verdicts and the Overview's answers (which tier ships per
model, whether speculative decoding beats the fastest greedy tier, what each precision costs) as verdicts alike.

The Overview, Verdicts, ``measure show`` and metrics.json all read :func:`judgments`: one question, one subject,
one reference, one interval level, phrased by each page, never recomputed there. The Overview's answers never gate:
``measure check`` gates on the rules' verdicts alone.
"""

from __future__ import annotations

from measure.analysis.decision import KIND_MODEL, Decision, Precision, Ship, Speculative, decide
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.analysis.verdict import Verdict, accepted

SHIP_QUESTION = "Is a tier of this model fit to ship, against a timed full-precision tier of the same model?"
VIABLE_QUESTION = "Is speculative decoding faster than the fastest greedy tier of its kind?"
PRECISION_QUESTION = "What does this precision cost in time, against the same model at higher precision?"
PAIRED = "paired: the geometric mean of per-repeat ratios"
"""What every time ratio of the decision is: said beside the figure, where the medians beside it could differ."""


def _x(e: Estimate) -> str:
    return f"{e.value:.2f}× [{e.lo:.2f}, {e.hi:.2f}]"


def level_of(e: Estimate | None) -> str:
    return f"{(e.level if e is not None and e.level else 0.95):.1%}"


def _ship(s: Ship) -> Verdict:
    subject = f"{KIND_MODEL.removesuffix(':')} {s.kind}" if s.model.startswith(KIND_MODEL) else s.model
    rule = (
        "the fastest tier of every export whose fidelity passes the policy and whose gated checks pass; its time "
        "against a timed full-precision tier of its own model"
    )
    if s.tier is None:
        why = "; ".join(f"{t.tier}: {w}" for t, w in s.faster_unfaithful)
        if s.missing is not None:
            answer = f"not measured: {s.missing}; every timed tier is ruled out anyway"
            return Verdict("ship", SHIP_QUESTION, subject, subject, "inconclusive", answer, rule, why)
        answer = "no: every timed tier is ruled out"
        return Verdict("ship", SHIP_QUESTION, subject, subject, "failure", answer, rule, why)
    tier = s.tier.tier
    vs = s.vs_reference
    if s.model.startswith(KIND_MODEL):
        outcome, answer = "inconclusive", f"not measured: no fidelity pass; fastest {tier}"
    elif s.missing is not None:
        outcome, answer = "inconclusive", f"not measured: {s.missing}; fastest {tier}"
    else:
        outcome, answer = "success", f"yes: ship {tier}"
    said = [f"{s.tier.ms_per_token.value:.3f} ms/token"]
    if vs is not None and s.reference:
        said.append(f"{_x(vs)} the time of {s.reference} ({level_of(vs)} interval, {PAIRED})")
    taken = list(accepted(s.accepted))
    if s.cold_load is not None and s.reference:
        taken.append(f"cold load {_x(s.cold_load)} {s.reference}'s")
    if taken:
        said.append("accepted, as no gate stops on it: " + "; ".join(taken))
    if s.faster_unfaithful:
        said.append("faster but ruled out: " + "; ".join(f"{t.tier} ({w})" for t, w in s.faster_unfaithful))
    return Verdict(
        "ship",
        SHIP_QUESTION,
        subject,
        tier,
        outcome,
        answer,
        rule,
        "; ".join(said),
        vs.value if vs else None,
        vs.lo if vs else None,
        vs.hi if vs else None,
    )


def _viable(p: Speculative) -> Verdict:
    e = p.vs_fastest
    if p.viable:
        outcome, answer = "success", f"yes: faster than {p.fastest} at k={p.best_k}"
    elif p.viable is False:
        outcome, answer = "failure", f"no: slower than {p.fastest} at every k"
    else:
        outcome, answer = "inconclusive", f"inconclusive against {p.fastest}"
    return Verdict(
        "speculative-viable",
        VIABLE_QUESTION,
        p.pair,
        p.pair,
        outcome,
        answer,
        f"some k's {level_of(e)} interval (Bonferroni over k) of its time over the fastest greedy tier's below 1×",
        f"best k={p.best_k}: {_x(e)} the time of {p.fastest} ({level_of(e)} interval, {PAIRED})",
        e.value,
        e.lo,
        e.hi,
    )


def _precision(p: Precision) -> Verdict:
    e = p.ratio
    told = "faster" if e.hi < 1 else "slower" if e.lo > 1 else "not told apart"
    return Verdict(
        "precision",
        PRECISION_QUESTION,
        f"{p.tier} ({p.precision}) against {p.against} ({p.against_precision})",
        p.tier,
        "info",
        f"{told}: {_x(e)} the time",
        "one model, repeats paired; below 1×: faster",
        f"{_x(e)} the time of {p.against} ({level_of(e)} interval, {PAIRED})"
        + (f"; another export ({p.export}'s): precision and export together" if p.export else ""),
        e.value,
        e.lo,
        e.hi,
    )


def decision_verdicts(d: Decision) -> tuple[Verdict, ...]:
    """The Overview's answers as verdicts: one per model (ship), per pair (viable), per precision comparison."""
    return (
        tuple(_ship(s) for s in d.ships)
        + tuple(_viable(p) for p in d.speculative)
        + tuple(_precision(p) for p in d.precision)
    )


def judgments(a: Analysis, d: Decision | None = None) -> tuple[Verdict, ...]:
    """Every judgment of the record: the Overview's answers first, then the rules' verdicts."""
    return decision_verdicts(d if d is not None else decide(a)) + a.verdicts
