"""Wall-clock: per-tier timings and speculative pairs of the machine's newest wall-clock result (and cost profile)."""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.current import Current
from measure.analysis.profile import TierProfile, has_profile
from measure.analysis.record_analysis import Analysis
from measure.analysis.runtime_axis import compiled_loops
from measure.analysis.stats import Estimate
from measure.record.model.wallclock import Wallclock
from measure.site import charts
from measure.site.context import Chart, Md, RunLinks, RunRef, chart, fmt, md, provenance, stacked, trusted
from measure.site.escape import slug
from measure.site.evidence import anchor, row_id
from measure.site.glossary import glossary
from measure.site.pages.cost_model import CostSection, cost_section
from measure.site.pages.fidelity import fidelity_cell
from measure.site.pages.prefill import Phases, phases_section
from measure.site.pages.roofline import RooflineSection, roofline_section


@dataclass(frozen=True)
class TierRow:
    anchor: Md
    tier: Md
    role: Md
    precision: Md
    tokens: int
    total_s: Md
    ms_per_token: Md
    tokens_per_s: Md
    ratio: Md
    exponent: Md
    overhead: Md
    fidelity: Md
    """Mean KLD and same top-1 against the tier's full-precision reference, linked to the figures."""
    quantization: Md | None
    """An int4 tier's MatMulNBits block size and accuracy level, read from its graph, under its precision."""


@dataclass(frozen=True)
class PairTimingRow:
    anchor: Md
    """Ids of the row: its case, and the pair on the pair's first k."""
    case: Md
    k: int
    acceptance: Md
    mean_length: Md
    by_position: Md
    cost_ratio: Md
    predicted: Md
    observed: Md
    observed_over_predicted: Md


@dataclass(frozen=True)
class ProfileRow:
    tier: Md
    size_mb: Md
    size_ratio: Md
    load_cold_ms: Md
    load_warm_ms: Md
    load_ratio: Md
    memory_mb: Md
    peak_mb: Md
    memory_ratio: Md
    first_token_ms: Md
    first_token_ratio: Md
    next_token_ms: Md


@dataclass(frozen=True)
class LatencyRow:
    tier: Md
    row_p50: Md
    row_p90: Md
    row_p99: Md
    token_p50: Md
    token_p90: Md
    token_p99: Md


@dataclass(frozen=True)
class ThreadRow:
    tier: Md
    cells: tuple[Md, ...]
    """ms/token [95% CI] at each count of ``ProfileSection.thread_counts``."""
    fastest: Md


@dataclass(frozen=True)
class ProfileSection:
    """The cost profile section; ``rows`` is empty for records from before the profile."""

    rows: tuple[ProfileRow, ...]
    latency: tuple[LatencyRow, ...]
    thread_counts: tuple[int, ...]
    threads: tuple[ThreadRow, ...]
    workers: int
    warm_loads: int
    worker_rows: int
    memory_source: Md


def _quantization(a: Analysis, tier: str) -> Md | None:
    """``block 32, accuracy 4 (int8)`` for a MatMulNBits tier: whether its kernel multiplies in fp32 or with int8
    activations decides whether int4 is slower or faster than int8 on CPU, so it stands beside the speed."""
    entry = a.record.tiers.get(tier)
    nbits = entry.nbits if entry is not None else None
    return None if nbits is None else md(nbits.label)


def _scaled(e: Estimate | None, k: float) -> Estimate | None:
    return None if e is None else Estimate(e.value * k, e.lo * k, e.hi * k)


def _profile(a: Analysis) -> ProfileSection:
    costs: tuple[TierProfile, ...] = a.costs
    wc = a.record.wallclock
    p = wc.profile if wc else None
    latency = tuple(
        LatencyRow(
            md(c.tier),
            *(stacked(getattr(c.row_ms, q), 2) if c.row_ms else md("-") for q in ("p50", "p90", "p99")),
            *(stacked(getattr(c.token_ms, q), 3) if c.token_ms else md("-") for q in ("p50", "p90", "p99")),
        )
        for c in costs
        if c.row_ms is not None
    )
    if not has_profile(costs):
        return ProfileSection((), latency, (), (), 0, 0, 0, md(""))
    rows = tuple(
        ProfileRow(
            trusted(anchor(row_id("profile", c.tier)) + md(c.tier)),
            fmt(c.bytes / 1e6, 2),
            fmt(c.size_vs_plain, 2),
            stacked(c.load_cold_ms, 1),
            stacked(c.load_warm_ms, 1),
            stacked(c.load_vs_plain, 2),
            stacked(_scaled(c.memory_bytes, 1e-6), 1),
            stacked(_scaled(c.peak_rss_bytes, 1e-6), 1),
            stacked(c.memory_vs_plain, 2),
            stacked(c.first_token_ms, 3),
            stacked(c.first_token_vs_plain, 2),
            stacked(c.next_token_ms, 3),
        )
        for c in costs
    )
    counts = p.thread_counts if p else ()
    threads = tuple(
        ThreadRow(
            md(c.tier),
            tuple(stacked(c.threads_ms_per_token.get(n), 3) for n in counts),
            md("-" if c.fastest_threads is None else str(c.fastest_threads)),
        )
        for c in costs
        if c.threads_ms_per_token
    )
    source = "" if p is None or p.memory_source is None else f"{p.memory_source} ({p.platform})"
    return ProfileSection(
        rows,
        latency,
        counts,
        threads,
        p.workers if p else 0,
        p.warm_loads if p else 0,
        p.rows if p else 0,
        md(source),
    )


@dataclass(frozen=True)
class WallclockPage:
    run: RunRef | None
    anchor: Md
    tiers: tuple[TierRow, ...]
    pairs: tuple[PairTimingRow, ...]
    tier_charts: tuple[Chart, ...]
    pair_charts: tuple[Chart, ...]
    repeats: int
    warmup: int
    profile: ProfileSection | None = None
    cost: CostSection | None = None
    """The measured cost model and layout findings; None for records without them."""
    timed: Md | None = None
    """One sentence: what a row's wall time spans, and the tokenizing timed on its own beside it."""
    sources: Md | None = None
    """Each part's run and date, where the machine's current state takes its parts from more than one run."""
    differences: tuple[Md, ...] = ()
    """How those runs' builds differ."""
    phases: Phases | None = None
    """Decoder-only tiers: prefill and decode timed apart; None for records without them."""
    compiled: tuple[Md, ...] = ()
    """Per decoder-only tier the onnxruntime-genai leg measured: measure's loop over the compiled one, a sentence."""
    fidelity: bool = False
    """Whether the tier rows carry fidelity figures (a fidelity pass ran): the table explains the column."""
    glossary: Md | None = None
    """The page's words defined in one line where the page begins."""
    plan: Md | None = None
    """A budgeted run's plan in a sentence: its budget, rows, repeats, what it cut; None for runs without one."""
    roofline: RooflineSection | None = None
    """Each tier against the machine's memory-bandwidth bound; None for records without the bytes counted."""


def _plan(a: Analysis) -> Md | None:
    """The budget, the rows and repeats it planned, how the top-up ended and what was cut, from the record."""
    p, rows = a.record.plan, a.record.golden.rows
    if p is None:
        return None
    s = p.shape
    text = (
        f"A budgeted run ({p.budget_s / 60:.1f} min; planned to end at {p.estimate_s / 60:.1f}): every case on "
        f"{len(p.wallclock_rows)} of {rows} golden rows, {s['repeats']} repeats, up to {p.max_repeats} where its "
        "interval was wider than the policy's tolerance."
    )
    if p.outcome is not None:
        why = {
            "tolerance": "every interval was within the tolerance",
            "repeats": "the widest cases reached their cap",
            "budget": "the budget was spent",
        }
        text += (
            f" It took {p.outcome.spent_s / 60:.1f} min; the top-up ran {p.outcome.top_up_rounds} round(s) and "
            f"stopped when {why.get(p.outcome.stopped or '', 'nothing was left to repeat')}."
        )
    if p.cut:
        text += " Cut by the budget: " + "; ".join(p.cut) + "."
    return md(text)


def _timed(wc: Wallclock) -> str:
    if wc.timed != "ids":
        return "Rows are timed from the source text in, tokenizing included (a record from before it was timed apart)."
    us = [u for c in wc.cases.values() if (u := c.tokenize_us_per_row) is not None]
    tail = ""
    if us:
        lo, hi = f"{min(us):.0f}", f"{max(us):.0f}"
        tail = f": a median {lo if lo == hi else f'{lo}–{hi}'} µs per row across the cases (measure show lists each)"
    return (
        "Rows are timed from the source's token ids in to the output's ids out; tokenizing (the source's encode, the"
        f" output's decode to text) is timed on its own, outside that{tail}."
    )


def _compiled(a: Analysis) -> tuple[Md, ...]:
    """measure's loop over onnxruntime-genai's per decode step, one sentence per tier, the range over repeats."""
    out = []
    for c in compiled_loops(a.record):
        spread = f"range {c.lo:.2f}–{c.hi:.2f} over {c.repeats} repeats" if c.repeats > 1 else "one repeat"
        ms = ""
        if c.og_ms_per_step is not None and c.measure_ms_per_step is not None:
            ms = f"; medians: measure {c.measure_ms_per_step:.3f}, onnxruntime-genai {c.og_ms_per_step:.3f} ms per step"
        how = "its own genai_config.json" if c.config == "folder" else "a generated genai_config.json"
        out.append(
            md(
                f"measure's loop costs {c.ratio:.2f}× onnxruntime-genai's compiled loop per decode step on {c.tier} "
                f"({c.precision}, {how}; {spread}{ms})."
            )
        )
    return tuple(out)


def _tier_rows(a: Analysis) -> tuple[TierRow, ...]:
    return tuple(
        TierRow(
            anchor(row_id("tier", t.tier)),
            md(t.tier),
            md(t.role),
            md(t.precision),
            t.tokens,
            stacked(t.total_s, 2),
            stacked(t.ms_per_token, 3),
            stacked(t.tokens_per_s, 0),
            stacked(t.ratio_vs_plain, 2, "×"),
            stacked(t.exponent, 2),
            md(f"{t.overhead:.1%}"),
            fidelity_cell(a.fidelity_of(t.tier)),
            _quantization(a, t.tier),
        )
        for t in a.tiers
    )


def _pair_rows(a: Analysis) -> tuple[PairTimingRow, ...]:
    """One row per pair and k; the pair's first k also carries the pair's anchor."""
    first: dict[str, str] = {}
    for p in a.pairs:
        first.setdefault(p.pair, p.case)
    return tuple(
        PairTimingRow(
            trusted(
                anchor(row_id("case", p.case)) + (anchor(row_id("pair", p.pair)) if first[p.pair] == p.case else "")
            ),
            md(p.pair),
            p.k,
            fmt(p.acceptance, 4),
            fmt(p.mean_accepted_length, 2),
            md(" ".join("-" if x is None else f"{x:.2f}" for x in p.acceptance_by_position)),
            fmt(p.cost_ratio, 2),
            fmt(p.predicted_speedup, 2),
            stacked(p.observed_speedup, 2, "×"),
            fmt(p.observed_over_predicted, 2),
        )
        for p in a.pairs
    )


def _charts(a: Analysis, palette: charts.Palette) -> tuple[tuple[Chart, ...], tuple[Chart, ...]]:
    """The tier charts and the pair charts (none without speculative pairs)."""
    tier_charts = (
        chart("wallclock-ms-per-token", "ms per token by tier (median, 95% CI)", charts.ms_per_token(a.tiers, palette)),
        chart(
            "wallclock-growth", "row time against output length (log-log)", charts.growth(a.record, a.tiers, palette)
        ),
    )
    pair_charts: tuple[Chart, ...] = ()
    if a.pairs:
        pair_charts = (
            chart("wallclock-speculative", "predicted vs observed speedup across k", charts.speedup(a.pairs, palette)),
            chart("wallclock-acceptance", "acceptance by draft position", charts.by_position(a.pairs, palette)),
        )
    return tier_charts, pair_charts


def wallclock_page(
    a: Analysis | None, links: RunLinks, palette: charts.Palette, state: Current | None = None
) -> WallclockPage:
    """``state``: the machine's current state ``a`` analyses (None: ``a`` is one record's analysis)."""
    own = (state.source("wallclock") if state else None) or (a.record if a else None)
    if a is None or own is None or not a.tiers or a.record.wallclock is None:
        return WallclockPage(None if own is None else links.ref(own), slug("wallclock"), (), (), (), (), 0, 0)
    rows, pairs = _tier_rows(a), _pair_rows(a)
    tier_charts, pair_charts = _charts(a, palette)
    wc = a.record.wallclock
    several = state is not None and not state.one_run
    return WallclockPage(
        links.ref(own),
        slug(f"wallclock-{own.date}"),
        rows,
        pairs,
        tier_charts,
        pair_charts,
        wc.repeats_done,
        wc.warmup,
        _profile(a),
        cost_section(a.cost_model, palette),
        md(_timed(wc)),
        provenance(state, links) if several and state is not None else None,
        tuple(md(d) for d in state.differences()) if state is not None else (),
        phases_section(a, palette),
        _compiled(a),
        bool(a.fidelity),
        glossary("tier", "golden rows", "[lo, hi]", "k", "acceptance", *(("KLD", "same top-1") if a.fidelity else ())),
        _plan(a),
        roofline_section(a, palette),
    )
