"""The Wall-clock page's memory-bandwidth section: each tier's bytes per token, its bound and efficiency, the
sentence that says which effect decides (all from :mod:`measure.analysis.roofline`), and the roofline chart."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from measure.analysis.record_analysis import Analysis
from measure.analysis.roofline import MB, Roofline, TierBound, machine_line
from measure.site import charts
from measure.site.chart_style import layout, log_ticks
from measure.site.context import Chart, Md, chart, fmt, md, stacked
from measure.site.evidence import anchor, row_id


@dataclass(frozen=True)
class BoundRow:
    anchor: Md
    tier: Md
    precision: Md
    bytes_mb: Md
    """Bytes per decode step, MB."""
    parts: Md
    """Weights, embedding rows and cache (at its mean positions), MB each."""
    bound_ms: Md
    ms: Md
    """A decode step's measured ms, with its interval."""
    efficiency: Md
    finding: Md
    kernel_ms: Md
    """A step at its kernels' own rates (timed alone); ``-`` where they were not timed."""


@dataclass(frozen=True)
class RooflineSection:
    machine: Md | None
    """The probe's bandwidth and the cache sizes, in one sentence; None where the run probed none."""
    rows: tuple[BoundRow, ...]
    chart: Chart | None
    """Bytes against ms per token with the bandwidth line; None without a probe or a timed tier."""


def _efficiency(t: TierBound) -> str:
    if t.limit == "cache":
        return "in cache"
    return "-" if t.efficiency is None else f"{t.efficiency:.0%}"


def _row(t: TierBound) -> BoundRow:
    parts = (
        f"{t.weights_bytes / MB:.1f} + {t.embedding_bytes / MB:.3f} + {t.kv_bytes / MB:.2f} ({t.positions:.0f} pos.)"
    )
    return BoundRow(
        anchor(row_id("bound", t.tier)),
        md(t.tier),
        md(t.precision),
        fmt(t.bytes_per_token / MB, 2),
        md(parts),
        fmt(t.bound_ms_per_token, 3),
        stacked(t.ms_per_token, 3),
        md(_efficiency(t)),
        md(t.finding),
        fmt(t.kernel_ms_per_token, 3),
    )


def roofline_figure(r: Roofline, palette: charts.Palette) -> dict[str, Any] | None:
    """Each timed tier a point (MB per token, ms per token); the probe's bandwidth a line (and one thread's,
    dashed); the last-level cache a dotted vertical: left of it the memory bound does not hold."""
    bw = r.bandwidth
    timed = [t for t in r.tiers if t.ms_per_token is not None]
    if bw is None or not timed:
        return None
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": t.tier,
            "x": [round(t.bytes_per_token / MB, 4)],
            "y": [round(t.ms_per_token.value, 5)],  # type: ignore[union-attr]
            "text": [
                f"{t.precision}, " + ("bytes in cache" if t.limit == "cache" else f"{_efficiency(t)} of its bound")
            ],
            "marker": {"color": palette.of(t.tier), "symbol": palette.symbol(t.tier), "size": 10},
            "hovertemplate": "%{x:.2f} MB per token, %{y:.3f} ms per token (%{text})<extra></extra>",
        }
        for t in timed
    ]
    xs = [t.bytes_per_token / MB for t in timed]
    ys = [t.ms_per_token.value for t in timed]  # type: ignore[union-attr]
    llc = (bw.last_level_bytes or 0) / MB
    lo, hi = min([*xs, *([llc] if llc else [])]) / 1.5, max([*xs, llc]) * 1.5  # the line crosses the cache's edge
    lines = [(bw.bytes_per_s, f"{bw.bytes_per_s / 1e9:.1f} GB/s ({bw.threads} thread(s)): the bound", "solid")]
    if bw.threads != 1 and bw.single_thread_bytes_per_s:
        lines.append(
            (bw.single_thread_bytes_per_s, f"{bw.single_thread_bytes_per_s / 1e9:.1f} GB/s (1 thread)", "dash")
        )
    limits = [t for t in timed if t.kernel_ms_per_token is not None]
    for t in limits:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{t.tier}: its kernels alone",
                "x": [round(t.bytes_per_token / MB, 4)],
                "y": [round(t.kernel_ms_per_token, 5)],  # type: ignore[arg-type]
                "marker": {"color": palette.of(t.tier), "symbol": palette.symbol(t.tier) + "-open", "size": 10},
                "hovertemplate": "%{x:.2f} MB per token: %{y:.3f} ms at its kernels' own rates<extra></extra>",
            }
        )
        ys.append(t.kernel_ms_per_token)
    for rate, name, dash in lines:
        line_y = [1000 * x * MB / rate for x in (lo, hi)]
        ys += line_y
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": name,
                "x": [round(lo, 4), round(hi, 4)],
                "y": [round(y, 6) for y in line_y],
                "line": {"color": "#7f7f7f", "dash": dash, "width": 1.5},
                "hoverinfo": "skip",
            }
        )
    shapes, notes = [], []
    if llc:
        notes.append(
            {
                "x": math.log10(llc),  # plotly places an annotation on a log axis by the value's log
                "y": 1,
                "xref": "x",
                "yref": "paper",
                "text": "last-level cache",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
            }
        )
        shapes.append(
            {
                "type": "line",
                "yref": "paper",
                "x0": llc,
                "x1": llc,
                "y0": 0,
                "y1": 1,
                "line": {"dash": "dot", "width": 1, "color": "#7f7f7f"},
            }
        )
    return {
        "data": data,
        "layout": layout(
            xaxis={
                "title": {"text": "MB read per token"},
                **log_ticks([lo, hi, *xs]),
            },
            yaxis={"title": {"text": "ms per decode step (median of repeats)"}, **log_ticks(ys)},
            shapes=shapes,
            annotations=notes,
        ),
    }


def roofline_section(a: Analysis, palette: charts.Palette) -> RooflineSection | None:
    """None where no tier of the record has its bytes counted (records before the count)."""
    r = a.roofline
    if r is None:
        return None
    figure = roofline_figure(r, palette)
    found = None if figure is None else chart("wallclock-roofline", "bytes per token against ms per token", figure)
    return RooflineSection(
        md(machine_line(r.bandwidth)) if r.bandwidth is not None else None,
        tuple(_row(t) for t in r.tiers),
        found,
    )
