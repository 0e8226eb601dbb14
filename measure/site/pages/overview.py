"""Overview: the RESULTS entry a careful engineer would write, generated from the reference machine's current state.

The decision first (what to ship per model, whether speculative decoding pays against the fastest greedy tier,
what precision and size cost, framing, the gates: :mod:`measure.site.pages.decision`), then speed against
fidelity as one chart, one compact summary table (and a row per other machine). Every question with its answer
is one click away (Verdicts), as are the Wall-clock and Framing parity pages and each run's own page. The summary
table as CSV is :mod:`measure.site.pages.summary_csv`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from measure.analysis.commit_series import METRICS
from measure.analysis.current import Current
from measure.analysis.current import label as label_of
from measure.analysis.decision import Decision, decide
from measure.analysis.headline import Headline, TierLine, headline
from measure.analysis.history_changes import ChangePoint
from measure.analysis.parity import runtime_agreement
from measure.analysis.recipe_advice import advise
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.analysis.verdict import Verdict
from measure.record.tree import Reference
from measure.site import charts
from measure.site.context import (
    KIND,
    Chart,
    Md,
    RunLinks,
    RunRef,
    States,
    badge,
    chart,
    link,
    md,
    megabytes,
    provenance,
    trusted,
)
from measure.site.evidence import row_id, verdict_id
from measure.site.glossary import glossary
from measure.site.pages.decision import DecisionBlock, decision_block
from measure.site.pages.fidelity import fidelity_cell
from measure.site.pages.headline import lead
from measure.site.pages.history import machine_slug
from measure.site.pages.recipes_tried import RecipesTried, recipes_tried
from measure.site.pages.speed_fidelity import speed_fidelity
from measure.site.pages.verdicts import RANK

OVERVIEW_TERMS = ("tier", "[lo, hi]", "golden rows", "KLD", "same top-1", "k", "framing", "argmax decision", "presents")


@dataclass(frozen=True)
class SummaryRow:
    tier: Md
    """The name (linked to its evidence), and below it its role, precision and kind."""
    ms_per_token: Md
    """With its interval, and its fidelity against its reference beside it."""
    vs_reference: Md
    exact: Md
    framing: Md
    """What framing does to its decodes, answered ("argmax holds; presents move ≤ 0.21")."""
    runtimes: tuple[Md, ...]
    verdict: Md
    """The worst verdict's answer, its question as the tooltip, linked to it on the Verdicts page."""


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
    lead: Md | None
    """One sentence: the machine, the runtime, the golden rows and when."""
    decision: DecisionBlock | None
    chart: Chart | None
    """Speed against fidelity, every tier a point; None without a wall-clock result."""
    tiers: tuple[SummaryRow, ...]
    runtimes: tuple[Md, ...]
    """Column heads for the other runtimes' greedy parity (legs that measured some tier)."""
    folded: Md | None
    """What no tier has (a column of "not measured" in every row), said once under the table."""
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
    glossary: Md | None = None
    """The page's words (tier, KLD, framing, golden rows, ...) defined in one line under the decision."""
    changes: tuple[Md, ...] = ()
    """The change points in the reference machine's newest 20 commits, a line each."""
    history: Md | None = None
    """The reference machine's History page."""
    recipes: RecipesTried | None = None
    """Where the current record is a ``measure explore`` run: every recipe it tried, measured or dropped."""


def _worst(found: tuple[Verdict, ...]) -> Md:
    judged = [v for v in found if v.outcome != "info"]
    if not judged:
        return md("-")
    worst = min(judged, key=lambda v: RANK[v.outcome])
    if worst.outcome == "success":
        return trusted(f"{badge('success')} all {len(judged)} checks")
    answer = f'<span title="{md(worst.question)}">{md(worst.answer)}</span>'
    return trusted(f"{badge(worst.outcome)} [{answer}](verdicts.md#{verdict_id(worst)})")


def _pm(e: Estimate | None, digits: int, unit: str = "") -> Md:
    if e is None:
        return md("-")
    return trusted(f"{e.value:.{digits}f}{unit}<br><small>[{e.lo:.{digits}f}, {e.hi:.{digits}f}]</small>")


def _framing_cell(t: TierLine, tolerance: float) -> Md:
    """The framing finding answered: every next-token decision held, or how many moved, and how far presents went."""
    if not t.framing_total:
        return md("-")
    if t.framing_changed:
        said = f"{t.framing_changed} of {t.framing_total:,} decisions change"
    else:
        said = "argmax holds" + (f"; presents move ≤ {t.present_max:.2g}" if (t.present_max or 0) > tolerance else "")
    if t.prompt_total:
        said += "; prompt: " + (f"{t.prompt_changed} of {t.prompt_total:,} change" if t.prompt_changed else "holds")
    return md(said)


def _vs_reference(t: TierLine) -> Md:
    """The row's one reference (the tier's source, the one its fidelity is against); the kind's reference, where
    it is another tier, said apart and named as such."""
    if t.reference == t.tier:
        return md("the reference")
    own = (
        f"{_pm(t.vs_reference, 2, '×')}<br><small>of {md(t.reference)}</small>"
        if t.vs_reference is not None
        else (f"<small>{md(t.reference)} not timed</small>" if t.reference else "-")
    )
    if t.vs_kind_reference is not None and t.kind_reference:
        kind = t.vs_kind_reference
        own += f"<br><small>kind: {kind.value:.2f}× [{kind.lo:.2f}, {kind.hi:.2f}] of {md(t.kind_reference)}</small>"
    return trusted(own)


def _summary_row(t: TierLine, mixed: bool, tolerance: float) -> SummaryRow:
    """``mixed``: the record holds both kinds, so the name cell names this tier's."""
    rows = t.rows or 0
    if t.ms_per_token is not None:  # the row it links to exists only where the wall-clock suite ran
        name = link(t.tier, f"wallclock.md#{row_id('tier', t.tier)}")
    elif t.framing_total:
        name = link(t.tier, f"framing.md#{row_id('framing', t.tier)}")
    else:
        name = md(t.tier)
    kind = f" · {KIND[t.kind]}" if mixed else ""
    return SummaryRow(
        trusted(f"{name}<br><small>{md(t.role)} · {md(t.precision)}{kind} · {md(megabytes(t.size_bytes))}</small>"),
        _with_fidelity(_pm(t.ms_per_token, 3), t),
        _vs_reference(t),
        md(f"{t.exact}/{rows}" if t.exact is not None else "-"),
        _framing_cell(t, tolerance),
        tuple(md(c) for _, c in t.runtimes),
        _worst(t.verdicts),
    )


def _with_fidelity(speed: Md, t: TierLine) -> Md:
    """Where a tier's speed is stated, its fidelity too: mean KLD and same top-1 against its reference."""
    if t.fidelity is None:
        return speed
    return trusted(f"{speed}<br><small>{fidelity_cell(t.fidelity)}</small>")


def _folded(h: Headline) -> tuple[tuple[Md, ...], Md | None]:
    """The runtime columns some tier has, and one line for what no tier has (a column of "not measured")."""
    legs = [name for name, _ in (h.tiers[0].runtimes if h.tiers else ())]
    kept: list[str] = []
    gone: list[str] = []
    for i, leg in enumerate(legs):
        (kept if any(t.runtimes[i][1] not in ("not measured", "-") for t in h.tiers) else gone).append(leg)
    unreferenced = sorted({t.fidelity.reference for t in h.tiers if t.fidelity and t.vs_reference is None})
    said = []
    if gone:
        said.append(f"not measured for any tier: {', '.join(md(g) for g in gone)}")
    if unreferenced:
        said.append(f"judged for fidelity only, not timed: the references {', '.join(md(r) for r in unreferenced)}")
    return tuple(md(k) for k in kept), (trusted("; ".join(said).capitalize() + ".") if said else None)


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


def _chart(d: Decision, a: Analysis, palette: charts.Palette) -> Chart | None:
    """None without a fidelity pass: every tier would sit at zero divergence, which nothing measured."""
    if not d.speeds or not a.fidelity:
        return None
    roles = {t.role for t in a.record.tiers.values()} | {"default"}
    policy = a.record.config.policy
    bounds = {role: policy.bound("kld_mean_max", role) for role in roles if role in ("plain", "lite", "default")}
    bounds = {r: b for r, b in bounds.items() if r == "default" or b != bounds.get("default")}
    title = "speed against fidelity: every tier a point, the Pareto front, the policy's bounds"
    return chart("speed-fidelity", title, speed_fidelity(d, bounds, palette))


def _change_line(c: ChangePoint) -> Md:
    r = c.ratio
    return md(
        f"{c.key.case} {METRICS[c.key.metric]}: {c.direction} ×{r.value:.3f} [{r.lo:.3f}, {r.hi:.3f}] "
        f"between commits {c.last_good.short} and {c.first_bad.short}"
    )


def overview_page(
    states: States,
    records: int,
    links: RunLinks,
    palette: charts.Palette,
    changes: tuple[ChangePoint, ...] = (),
    explored: tuple[Analysis, ...] = (),
) -> Overview:
    """``changes``: the change points in the reference machine's newest commits, newest first; ``explored``: its
    newest ``measure explore`` runs, where the decision finds a recipe to try for a model with no fit tier."""
    ref = states.reference
    if ref is None:
        return Overview(None, None, None, None, (), (), None, records, md(""), md(""), (), md(""), (), ())
    state, current = states.states[ref.machine], states.analyses[ref.machine]
    h = headline(current)
    d = decide(current)
    sources = provenance(state, links)
    runtimes, folded = _folded(h)
    legs = [name for name, _ in (h.tiers[0].runtimes if h.tiers else ())]
    kept = [i for i, leg in enumerate(legs) if md(leg) in runtimes]
    tolerance = current.record.config.policy.framing_tolerance
    rows = []
    for t in h.tiers:
        row = _summary_row(t, h.mixed, tolerance)
        rows.append(replace(row, runtimes=tuple(row.runtimes[i] for i in kept)))
    record_links = []
    for _, r in state.runs():
        link = str(links.ref(r).link)
        if "--" in link:  # a run with a page of its own publishes its record beside it
            record_links.append((md(r.run_id), trusted(link.removesuffix(".md") + ".json")))
    several = len(states.states) > 1
    return Overview(
        links.ref(state.newest),
        lead(current, sources),
        decision_block(d, h, runtime_agreement(current.record), advise(d, current.record, explored)),
        _chart(d, current, palette),
        tuple(rows),
        runtimes,
        folded,
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
        glossary(*OVERVIEW_TERMS),
        tuple(_change_line(c) for c in changes),
        md(f"history/{machine_slug(ref.machine)}.md"),
        recipes_tried(current),
    )
