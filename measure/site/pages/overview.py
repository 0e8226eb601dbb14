"""Overview: the RESULTS entry a careful engineer would write, generated from the reference machine's current state.

A few sentences with the numbers (speed against the reference, fidelity, the
speculative result, framing and runtime parity, the gates), each suite's
result stated with its own run and date, one summary table (and a row per
other machine), then every question with its answer, measured value, rule and
a link to the exact row it rests on.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from measure.analysis.commit_series import METRICS
from measure.analysis.current import Current
from measure.analysis.current import label as label_of
from measure.analysis.headline import Headline, PairLine, TierLine, headline
from measure.analysis.history_changes import ChangePoint
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.analysis.verdict import Verdict
from measure.record.tree import Reference
from measure.site.context import KIND, Md, RunLinks, RunRef, States, badge, link, md, megabytes, provenance, trusted
from measure.site.escape import slug
from measure.site.evidence import evidence, row_id, verdict_id
from measure.site.pages.fidelity import fidelity_cell
from measure.site.pages.headline import sentences
from measure.site.pages.history import machine_slug

RANK = {"failure": 0, "warning": 1, "inconclusive": 2, "success": 3, "info": 4}


@dataclass(frozen=True)
class SummaryRow:
    tier: Md
    role: Md
    size: Md
    ms_per_token: Md
    vs_reference: Md
    exact: Md
    same: Md
    framing: Md
    runtimes: tuple[Md, ...]
    verdict: Md


@dataclass(frozen=True)
class CostSummaryRow:
    """What a tier costs to run besides ms/token, from the cost profile's one-tier worker processes."""

    tier: Md
    size: Md
    load: Md
    first_token: Md
    memory: Md
    memory_vs_plain: Md


@dataclass(frozen=True)
class PairSummaryRow:
    pair: Md
    speedups: Md
    acceptance: Md
    preserved: Md
    verdict: Md


@dataclass(frozen=True)
class VerdictRow:
    anchor: Md
    badge: Md
    subject: Md
    answer: Md
    measured: Md
    rule: Md
    evidence: Md


@dataclass(frozen=True)
class Question:
    question: Md
    anchor: Md
    rows: tuple[VerdictRow, ...]


@dataclass(frozen=True)
class MachineSummaryRow:
    """One machine in a compact row of the Summary: its plain and lite tiers against its own reference tier."""

    machine: Md
    """Linked to the machine's History page."""
    reference: bool
    """The machine this page answers for."""
    cpu: Md
    vs_reference: Md
    exact: Md
    framing: Md
    """The worst framing-parity verdict, badged."""
    measured: Md
    """Each part's date; a warning when the parts come from different builds."""


@dataclass(frozen=True)
class Overview:
    current: RunRef | None
    """The newest run the current state takes a part from."""
    sentences: tuple[Md, ...]
    tiers: tuple[SummaryRow, ...]
    runtimes: tuple[Md, ...]
    """Column heads for the other runtimes' greedy parity."""
    pairs: tuple[PairSummaryRow, ...]
    costs: tuple[CostSummaryRow, ...]
    """Empty for records without a cost profile."""
    questions: tuple[Question, ...]
    records: int
    machine: Md
    """The machine the page answers for."""
    sources: Md
    """Each part's run and date (:func:`~measure.site.context.provenance`)."""
    differences: tuple[Md, ...]
    """How the builds behind the parts differ; empty when they are one build."""
    choice: Md
    """Why this machine (only said when the tree holds several)."""
    machines: tuple[MachineSummaryRow, ...]
    """Every machine, the reference first; empty for a tree of one machine."""
    record_links: tuple[tuple[Md, Md], ...]
    """(run id, link) of each source record published beside its run page."""
    kinds: Md | None = None
    """Where the record holds both model kinds: which reference each kind is measured against."""
    changes: tuple[Md, ...] = ()
    """The change points in the reference machine's newest 20 commits, a line each."""
    history: Md | None = None
    """The reference machine's History page."""


def _worst(found: tuple[Verdict, ...]) -> Md:
    judged = [v for v in found if v.outcome != "info"]
    if not judged:
        return md("-")
    worst = min(judged, key=lambda v: RANK[v.outcome])
    if worst.outcome == "success":
        return trusted(f"{badge('success')} all {len(judged)} checks")
    link = f"#{verdict_id(worst)}"
    return trusted(f"{badge(worst.outcome)} [{md(worst.question)}]({link})")


def _pm(e: Estimate | None, digits: int, unit: str = "") -> Md:
    if e is None:
        return md("-")
    return trusted(f"{e.value:.{digits}f}{unit}<br><small>[{e.lo:.{digits}f}, {e.hi:.{digits}f}]</small>")


def _summary_row(t: TierLine, mixed: bool) -> SummaryRow:
    """``mixed``: the record holds both kinds, so the role cell names this tier's."""
    rows = t.rows or 0
    framing = "-"
    if t.framing_total:
        framing = "stable" if not t.framing_changed else f"{t.framing_changed} of {t.framing_total:,} change"
    cell = str(md(framing))
    if t.prompt_total:
        moved = f"{t.prompt_changed} of {t.prompt_total:,} change" if t.prompt_changed else "stable"
        cell += f"<br><small>prompt: {moved}</small>"
    if t.ms_per_token is not None:  # the row it links to exists only where the wall-clock suite ran
        name = link(t.tier, f"wallclock.md#{row_id('tier', t.tier)}")
    elif t.framing_total:
        name = link(t.tier, f"framing.md#{row_id('framing', t.tier)}")
    else:
        name = md(t.tier)
    return SummaryRow(
        name,
        trusted(f"{md(t.role)}<br><small>{md(t.precision)}{f'<br>{KIND[t.kind]}' if mixed else ''}</small>"),
        md(megabytes(t.size_bytes)),
        _with_fidelity(_pm(t.ms_per_token, 3), t),
        _pm(t.vs_reference, 2, "×") if t.vs_reference else md("reference" if t.vs_reference is None else "-"),
        md(f"{t.exact}/{rows}" if t.exact is not None else "-"),
        md(f"{t.same_as_reference}/{rows}" if t.same_as_reference is not None else "-"),
        trusted(cell),
        tuple(md(c) for _, c in t.runtimes),
        _worst(t.verdicts),
    )


def _with_fidelity(speed: Md, t: TierLine) -> Md:
    """Where a tier's speed is stated, its fidelity too: mean KLD and same top-1 against its reference."""
    if t.fidelity is None:
        return speed
    return trusted(f"{speed}<br><small>{fidelity_cell(t.fidelity)}</small>")


def _pair_row(p: PairLine) -> PairSummaryRow:
    ks = "<br>".join(
        f"k={x.k}: {x.observed_speedup.value:.2f}× <small>[{x.observed_speedup.lo:.2f}, {x.observed_speedup.hi:.2f}]"
        "</small>"
        for x in p.ks
    )
    v = p.verdict
    return PairSummaryRow(
        link(p.pair, f"wallclock.md#{row_id('pair', p.pair)}"),
        trusted(ks),
        md("-" if p.acceptance is None else f"{p.acceptance:.3f}"),
        md(p.preserved or "-"),
        trusted(f"{badge(v.outcome)} {md(v.answer)}") if v else md("-"),
    )


def _cost_rows(a: Analysis) -> tuple[CostSummaryRow, ...]:
    if not any(c.load_cold_ms or c.memory_bytes or c.first_token_ms for c in a.costs):
        return ()
    mb = lambda e: None if e is None else Estimate(e.value / 1e6, e.lo / 1e6, e.hi / 1e6)  # noqa: E731
    return tuple(
        CostSummaryRow(
            md(c.tier),
            md(megabytes(c.bytes)),
            _pm(c.load_cold_ms, 1),
            _pm(c.first_token_ms, 2),
            _pm(mb(c.memory_bytes), 1),
            _pm(c.memory_vs_plain, 2, "×"),
        )
        for c in a.costs
    )


def _questions(found: tuple[Verdict, ...]) -> tuple[Question, ...]:
    groups: dict[str, list[Verdict]] = {}
    for v in found:
        groups.setdefault(v.topic, []).append(v)
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
                )
                for v in sorted(vs, key=lambda v: RANK[v.outcome])
            ),
        )
        for topic, vs in groups.items()
    )


def _choice(ref: Reference, machines: int) -> Md:
    if ref.chosen:
        why = "the site's `reference_machine`"
    else:
        why = f"the most complete records ({ref.records})"
        if ref.tied:
            why += f", tied with {', '.join(md(m) for m in ref.tied)} and first by id"
    return trusted(f"This page answers for machine {md(ref.machine)} ({why}); {machines - 1} other machine(s) below.")


def _machine_line(state: Current, a: Analysis, reference: bool, links: RunLinks) -> MachineSummaryRow:
    h = headline(a)
    lines = {t.tier: t for t in h.tiers}
    shown = [lines[n] for n in (h.plain, h.lite) if n in lines]
    vs = [f"{md(t.tier)} {t.vs_reference.value:.2f}×" for t in shown if t.vs_reference is not None]
    exact = [f"{md(t.tier)} {t.exact}/{t.rows}" for t in shown if t.exact is not None]
    framing = [v for v in a.verdicts if v.topic == "framing-parity"]
    if framing:
        worst = min(framing, key=lambda v: RANK[v.outcome])
        changed = sum(v.outcome == "failure" for v in framing)
        what = f"{changed} of {len(framing)} tiers change" if changed else "stable"
        what += "; presents move" if worst.outcome == "warning" else ""
        framing_cell = trusted(f"{badge(worst.outcome)} {what}")
    else:
        framing_cell = md("-")
    dates = "<br>".join(
        f"{md(label_of(parts))} [{md(r.started_at[:10])}]({links.ref(r).link})" for parts, r in state.runs()
    )
    if state.differences():
        dates += f"<br>{badge('warning')} builds differ"
    m = a.record.environment.machine
    return MachineSummaryRow(
        trusted(f"[{md(state.machine_id)}](history/{machine_slug(state.machine_id)}.md)"),
        reference,
        md(f"{m.cpu} · {m.cores} cores · {m.arch}"),
        trusted("<br>".join(vs) or "-"),
        trusted("<br>".join(exact) or "-"),
        framing_cell,
        trusted(dates),
    )


def _kinds(h: Headline) -> Md:
    refs = {t.kind: t.reference for t in h.tiers}
    said = [
        f"an {KIND[k]} tier against {md(r)}" if k == "seq2seq" else f"a {KIND[k]} tier against {md(r)}"
        for k, r in refs.items()
        if r
    ]
    return trusted(
        f"The tiers are of two kinds, each measured against the reference of its own kind: {', '.join(said)}. "
        "*prompt*: a decoder-only tier's prompt positions whose argmax changes between the prompt fed token by "
        "token and in blocks."
    )


def _change_line(c: ChangePoint) -> Md:
    r = c.ratio
    return md(
        f"{c.key.case} {METRICS[c.key.metric]}: {c.direction} ×{r.value:.3f} [{r.lo:.3f}, {r.hi:.3f}] "
        f"between commits {c.last_good.short} and {c.first_bad.short}"
    )


def overview_page(states: States, records: int, links: RunLinks, changes: tuple[ChangePoint, ...] = ()) -> Overview:
    """``changes``: the change points in the reference machine's newest commits, newest first."""
    ref = states.reference
    if ref is None:
        return Overview(None, (), (), (), (), (), (), records, md(""), md(""), (), md(""), (), ())
    state, current = states.states[ref.machine], states.analyses[ref.machine]
    h = headline(current)
    sources = provenance(state, links)
    runtimes = tuple(md(name) for name, _ in (h.tiers[0].runtimes if h.tiers else ()))
    record_links = []
    for _, r in state.runs():
        link = str(links.ref(r).link)
        if "--" in link:  # a run with a page of its own publishes its record beside it
            record_links.append((md(r.run_id), trusted(link.removesuffix(".md") + ".json")))
    several = len(states.states) > 1
    return Overview(
        links.ref(state.newest),
        sentences(current, h, sources),
        tuple(_summary_row(t, h.mixed) for t in h.tiers),
        runtimes,
        tuple(_pair_row(p) for p in h.pairs),
        _cost_rows(current),
        _questions(current.verdicts),
        records,
        md(ref.machine),
        sources,
        tuple(md(d) for d in state.differences()),
        _choice(ref, len(states.states)) if several else md(""),
        tuple(_machine_line(states.states[m], states.analyses[m], m == ref.machine, links) for m in states.machines)
        if several
        else (),
        tuple(record_links),
        _kinds(h) if h.mixed else None,
        tuple(_change_line(c) for c in changes),
        md(f"history/{machine_slug(ref.machine)}.md"),
    )


def _fidelity_cells(t: TierLine) -> tuple[object, ...]:
    f = t.fidelity
    if f is None:
        return ("",) * 6
    k = f.greedy.kld_mean
    return (f.reference, k.value, k.lo, k.hi, f.greedy.same_top1.value, f.ppl_ratio.value)


def summary_csv(h: Headline, state: Current | None = None) -> str:
    """The summary table as CSV, plain numbers (no markup), for a spreadsheet; with ``state``, the run each
    tier's wall-clock and framing numbers come from."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    legs = [name for name, _ in (h.tiers[0].runtimes if h.tiers else ())]
    w.writerow(
        [
            *("tier", "role", "precision", "size_bytes", "ms_per_token", "ms_per_token_lo", "ms_per_token_hi"),
            *("vs_reference", "vs_reference_lo", "vs_reference_hi", "exact", "rows", "same_as_reference"),
            *("framing_changed", "framing_decisions", *(f"greedy_parity {leg}" for leg in legs), "worst_outcome"),
            *("fidelity_reference", "kld_mean", "kld_mean_lo", "kld_mean_hi", "same_top1", "ppl_ratio"),
            *(("wallclock_run", "framing_run") if state is not None else ()),
        ]
    )
    runs = [] if state is None else [(r.run_id if (r := state.source(p)) else "") for p in ("wallclock", "framing")]
    for t in h.tiers:
        ms, vs = t.ms_per_token, t.vs_reference
        judged = [v.outcome for v in t.verdicts if v.outcome != "info"]
        w.writerow(
            [
                *(t.tier, t.role, t.precision, t.size_bytes),
                *((ms.value, ms.lo, ms.hi) if ms else ("", "", "")),
                *((vs.value, vs.lo, vs.hi) if vs else ("", "", "")),
                *(t.exact, t.rows, t.same_as_reference, t.framing_changed, t.framing_total),
                *(cell for _, cell in t.runtimes),
                min(judged, key=lambda o: RANK[o]) if judged else "",
                *_fidelity_cells(t),
                *runs,
            ]
        )
    return out.getvalue()
