"""Wall-clock: per-tier timings and speculative pairs of the current record."""

from __future__ import annotations

from dataclasses import dataclass

from measure.report import Analysis
from measure.site import charts
from measure.site.context import Chart, Md, RunLinks, RunRef, chart, fmt, md, stacked, trusted
from measure.site.escape import slug
from measure.site.evidence import anchor, row_id


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


@dataclass(frozen=True)
class PairRow:
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
class Wallclock:
    run: RunRef | None
    anchor: Md
    tiers: tuple[TierRow, ...]
    pairs: tuple[PairRow, ...]
    tier_charts: tuple[Chart, ...]
    pair_charts: tuple[Chart, ...]
    repeats: int
    warmup: int


def wallclock_page(a: Analysis | None, links: RunLinks, palette: charts.Palette) -> Wallclock:
    if a is None or not a.tiers or a.record.wallclock is None:
        return Wallclock(None if a is None else links.ref(a.record), slug("wallclock"), (), (), (), (), 0, 0)
    rows = tuple(
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
        )
        for t in a.tiers
    )
    first = {}
    for p in a.pairs:
        first.setdefault(p.pair, p.case)
    pairs = tuple(
        PairRow(
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
    wc = a.record.wallclock
    return Wallclock(
        links.ref(a.record),
        slug(f"wallclock-{a.record.date}"),
        rows,
        pairs,
        tier_charts,
        pair_charts,
        wc.repeats_done,
        wc.warmup,
    )
