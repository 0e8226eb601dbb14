"""The Framing parity page's fidelity section: each quantized tier against its full-precision reference, and each
speculative pair's drafter against its verifier, as quantizers read it (llama.cpp's ``--kl-divergence`` table)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.analysis.fidelity import MIN_ROWS, PairFidelityFigures, TierFidelityFigures
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.analysis.verdict import Verdict
from measure.record.model.fidelity import HIST_LOW, HIST_PER_DECADE
from measure.site import chart_style, charts
from measure.site.context import Chart, Md, badge, chart, link, md
from measure.site.escape import trusted
from measure.site.evidence import anchor, row_id


@dataclass(frozen=True)
class FidelityRow:
    anchor: Md
    tier: Md
    reference: Md
    kld: Md
    """Mean KL divergence, nats per position, with its 95% interval."""
    median: Md
    p99: Md
    p999: Md
    max: Md
    same_top1: Md
    """The share with its interval, and the rows in which a top-1 decision flips at least once (the rows whose
    greedy output the tier would change) under it."""
    rms_dp: Md
    ppl: Md
    """PPL_tier / PPL_ref on the golden outputs, with its interval."""
    verdict: Md


@dataclass(frozen=True)
class PairFidelityRow:
    anchor: Md
    pair: Md
    kld: Md
    same_top1: Md
    acceptance: Md
    gap: Md
    """How far acceptance lies below the drafter's same-top-1 (rejected rounds waste drafts past a miss)."""


@dataclass(frozen=True)
class FidelitySection:
    rows: tuple[FidelityRow, ...]
    pairs: tuple[PairFidelityRow, ...]
    loaded: tuple[Md, ...]
    """References the pass loaded that the run does not time."""
    charts: tuple[Chart, ...]


def _no_interval(rows: int | None) -> str | None:
    """What stands where an interval would, for figures on too few rows to resample."""
    return None if rows is None or rows >= MIN_ROWS else f"<br><small>{rows} row(s): no interval</small>"


def kld_text(e: Estimate, rows: int | None = None) -> Md:
    """A mean KLD with its interval below it, three significant digits (the figures span orders of magnitude)."""
    return trusted(f"{e.value:.3g}" + (_no_interval(rows) or f"<br><small>[{e.lo:.3g}, {e.hi:.3g}]</small>"))


def share_text(e: Estimate, rows: int | None = None) -> Md:
    return trusted(f"{e.value:.2%}" + (_no_interval(rows) or f"<br><small>[{e.lo:.2%}, {e.hi:.2%}]</small>"))


def _verdict(v: Verdict | None) -> Md:
    """The answer's first word beside its badge; the full answer and the rule as the cell's tooltip."""
    if v is None:
        return md("-")
    short = v.answer.split(":")[0]
    return trusted(f'{badge(v.outcome)} <span title="{md(v.answer)} ({md(v.rule)})">{md(short)}</span>')


def fidelity_cell(f: TierFidelityFigures | None) -> Md:
    """Where a tier's speed is stated, its fidelity beside it: mean KLD and same top-1, linked to the figures."""
    if f is None:
        return md("-")
    g = f.greedy
    figures = link(f"KLD {g.kld_mean.value:.2g}", f"framing.md#{row_id('fidelity', f.tier)}")
    return trusted(f"{figures}<br>top-1 {g.same_top1.value:.1%} · {g.flipped_rows}/{g.rows} rows flip")


def _row(f: TierFidelityFigures, a: Analysis) -> FidelityRow:
    g, q = f.greedy, f.greedy.kld_quantiles
    verdict = next((v for v in a.verdicts if v.topic == "fidelity" and v.key == f.tier), None)
    ppl = f"<br><small>[{f.ppl_ratio.lo:.4f}, {f.ppl_ratio.hi:.4f}]</small>"
    return FidelityRow(
        anchor(row_id("fidelity", f.tier)),
        trusted(f"{md(f.tier)}<br><small>{g.rows} rows</small><br><small>{g.positions:,} positions</small>"),
        md(f.reference),
        kld_text(g.kld_mean, g.rows),
        md(f"{q.get(0.5, 0.0):.3g}"),
        md(f"{q.get(0.99, 0.0):.3g}"),
        md(f"{q.get(0.999, 0.0):.3g}"),
        md(f"{q.get(1.0, 0.0):.3g}"),
        trusted(f"{share_text(g.same_top1, g.rows)}<br><small>{g.flipped_rows}/{g.rows} rows flip</small>"),
        md(f"{g.rms_dp:.2%}"),
        trusted(f"{f.ppl_ratio.value:.4f}" + (_no_interval(g.rows) or ppl)),
        _verdict(verdict),
    )


def _pair_row(p: PairFidelityFigures) -> PairFidelityRow:
    g = p.greedy
    gap = "-" if p.acceptance is None else f"{g.same_top1.value - p.acceptance:+.2%}"
    return PairFidelityRow(
        anchor(row_id("fidelity-pair", f"{p.drafter}->{p.verifier}")),
        md(f"{p.drafter}->{p.verifier}"),
        kld_text(g.kld_mean, g.rows),
        share_text(g.same_top1, g.rows),
        md("-" if p.acceptance is None else f"{p.acceptance:.2%}"),
        md(gap),
    )


def kld_distribution(tiers: tuple[TierFidelityFigures, ...], palette: charts.Palette) -> dict[str, Any]:
    """Each tier's KL divergence per position as the share of its positions in each log10 bin (a line a tier),
    its mean marked on the same axis. Exact zeros cannot sit on a log axis: each trace's name counts them. A tier
    scored on no position (a pass over no rows) has no distribution to draw."""
    data: list[dict[str, Any]] = []
    for f in tiers:
        g = f.greedy
        if not g.positions:
            continue
        color = palette.of(f.tier)
        bins = [b for b, _ in g.hist]
        x = [10 ** (HIST_LOW + (b + 0.5) / HIST_PER_DECADE) for b in bins]
        y = [c / g.positions for _, c in g.hist]
        zeros = f"; {g.zeros} at exactly 0" if g.zeros else ""
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "line": {"shape": "hvh", "color": color},
                "marker": {"color": color, "size": 5},
                "name": f"{f.tier} vs {f.reference}{zeros}",
                "x": x,
                "y": y,
                "hovertemplate": "KLD ≈ %{x:.2g}: %{y:.1%} of positions<extra>%{fullData.name}</extra>",
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "marker": {"color": color, "symbol": "line-ns-open", "size": 18, "line": {"width": 2}},
                "name": f"{f.tier} mean",
                "x": [max(g.kld_mean.value, 10.0**HIST_LOW)],
                "y": [0],
                "showlegend": False,
                "hovertemplate": "%{fullData.name}: %{x:.3g}<extra></extra>",  # the name: data (escaped)
            }
        )
    return {
        "data": data,
        "layout": chart_style.layout(
            xaxis={
                "title": {"text": "KL(P_ref ‖ P_tier) per position, nats (log)"},
                "type": "log",
                "exponentformat": "power",
            },
            yaxis={"title": {"text": "share of positions"}, "tickformat": ".0%", "rangemode": "tozero"},
        ),
    }


def fidelity_section(a: Analysis | None, palette: charts.Palette) -> FidelitySection | None:
    """None for records without a fidelity pass (before schema v4, or ``[framing] fidelity = false``)."""
    if a is None or not (a.fidelity or a.pair_fidelity):
        return None
    loaded = tuple(dict.fromkeys(md(f.reference) for f in a.fidelity if not f.reference_in_run))
    found = (
        chart(
            "fidelity-kld",
            "KL divergence from the reference per position (log): share of positions per bin",
            kld_distribution(a.fidelity, palette),
        ),
    )
    return FidelitySection(
        tuple(_row(f, a) for f in a.fidelity), tuple(_pair_row(p) for p in a.pair_fidelity), loaded, found
    )
