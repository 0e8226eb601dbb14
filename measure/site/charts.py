"""Plotly figures as plain JSON-ready dicts, built from analysed numbers (no plotly import needed).

Every trace gets its colour and marker here (:mod:`measure.site.chart_style`),
one per tier on every chart of a build; the page script applies the light or
dark axis and text colours, and the dark variants of the series colours,
following Material's palette toggle. Exact zeros are never drawn as a tiny positive
number on a log axis: they are left out and said in the trace's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.analysis.cost_model import BatchCost
from measure.analysis.prefill import CausalTiming
from measure.analysis.timings import PairTiming, TierTiming, exponent_rows
from measure.record.model import FramingTier, Record
from measure.site.chart_style import Palette, error, layout, log_ticks


def ms_per_token(tiers: tuple[TierTiming, ...], palette: Palette) -> dict[str, Any]:
    colors = [palette.of(t.tier) for t in tiers]
    return {
        "data": [
            {
                "type": "bar",
                "name": "ms/token",
                "x": [t.tier for t in tiers],
                "y": [t.ms_per_token.value for t in tiers],
                "marker": {"color": colors},
                "error_y": error(
                    [t.ms_per_token.hi - t.ms_per_token.value for t in tiers],
                    [t.ms_per_token.value - t.ms_per_token.lo for t in tiers],
                    "#7f7f7f",
                ),
                "text": [t.precision for t in tiers],
                "textposition": "none",
                "hovertemplate": "%{x} (%{text}): %{y:.3f} ms/token<extra></extra>",
            }
        ],
        "layout": layout(yaxis={"title": {"text": "ms per output token"}}, xaxis={"title": {"text": "tier"}}),
    }


def phases(tiers: tuple[CausalTiming, ...], palette: Palette) -> dict[str, Any]:
    """Decoder-only tiers: ms per prompt token (prefill, hatched) beside ms per generated token (decode), each
    bar labelled on the axis under its tier (no legend to decode)."""
    bars = [
        (t, phase, e)
        for t in tiers
        for phase, e in (("prefill", t.prefill_ms_per_prompt_token), ("decode", t.decode_ms_per_token))
    ]
    return {
        "data": [
            {
                "type": "bar",
                "name": "ms per token",
                "x": [[t.tier for t, _, _ in bars], [phase for _, phase, _ in bars]],
                "y": [None if e is None else e.value for _, _, e in bars],
                "marker": {
                    "color": [palette.of(t.tier) for t, _, _ in bars],
                    "pattern": {"shape": ["/" if p == "prefill" else "" for _, p, _ in bars], "solidity": 0.5},
                },
                "error_y": error(
                    [0.0 if e is None else e.hi - e.value for _, _, e in bars],
                    [0.0 if e is None else e.value - e.lo for _, _, e in bars],
                    "#7f7f7f",
                ),
                "hovertemplate": "%{x}: %{y:.4f} ms per token<extra></extra>",
            }
        ],
        "layout": layout(
            showlegend=False,
            yaxis={
                "title": {"text": "ms per prompt token (prefill) / generated token (decode)"},
                "rangemode": "tozero",
            },
        ),
    }


def first_token(record: Record, tiers: tuple[CausalTiming, ...], palette: Palette) -> dict[str, Any]:
    """Each golden row's time to first token (median of repeats) against its prompt's length, per tier."""
    cases = record.wallclock.cases if record.wallclock else {}
    data = []
    for t in tiers:
        case = cases[t.tier]
        first = case.first_token_s if case.first_token_s is not None else np.zeros((1, len(case.tokens)))
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": t.tier,
                "marker": {"color": palette.of(t.tier), "size": 6, "opacity": 0.8},
                "x": list(case.source_tokens),
                "y": [round(float(v), 5) for v in np.median(first, axis=0) * 1000],
            }
        )
    return {
        "data": data,
        "layout": layout(
            xaxis={"title": {"text": "prompt tokens (the template applied)"}, "rangemode": "tozero"},
            yaxis={"title": {"text": "time to first token, ms (median of repeats)"}, "rangemode": "tozero"},
        ),
    }


_BASIS = {"cpu": "CPU time", "wall": "wall time"}


def growth(record: Record, tiers: tuple[TierTiming, ...], palette: Palette) -> dict[str, Any]:
    """Row time against output length per tier, on the times its exponent was fitted on (CPU where recorded)."""
    cases = record.wallclock.cases if record.wallclock else {}
    data: list[dict[str, Any]] = []
    basis: set[str] = set()
    for t in tiers:
        case = cases[t.tier]
        rows, of = exponent_rows(case)  # the times the exponent was fitted on
        per_row = np.median(rows, axis=0) * 1000
        basis.add(of)
        label = f"{t.tier} (b = {t.exponent.value:.2f})" if t.exponent else t.tier
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": label,
                "marker": {"color": palette.of(t.tier), "symbol": palette.symbol(t.tier), "size": 6, "opacity": 0.8},
                "x": [n + 1 for n in case.tokens],
                "y": [round(float(v), 5) for v in per_row],
            }
        )
    return {
        "data": data,
        "layout": layout(
            xaxis={
                "title": {"text": "output tokens + 1 (decoder calls)"},
                **log_ticks([x for d in data for x in d["x"]]),
            },
            yaxis={
                "title": {"text": f"row {_BASIS[min(basis)] if len(basis) == 1 else 'time'}, ms (median of repeats)"},
                **log_ticks([y for d in data for y in d["y"]]),
            },
        ),
    }


def _unit_line() -> dict[str, Any]:
    return {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 1, "y1": 1, "line": {"dash": "dash", "width": 1}}


def speedup(pairs: tuple[PairTiming, ...], palette: Palette) -> dict[str, Any]:
    data = []
    for name in dict.fromkeys(p.pair for p in pairs):
        ps = [p for p in pairs if p.pair == name]
        ks, color = [p.k for p in ps], palette.of(ps[0].drafter)  # a pair wears its drafter's colour
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{name} predicted",
                "x": ks,
                "y": [p.predicted_speedup for p in ps],
                "line": {"dash": "dot", "color": color},
                "marker": {"symbol": "circle-open", "color": color},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{name} observed",
                "x": ks,
                "y": [p.observed_speedup.value for p in ps],
                "line": {"color": color},
                "marker": {"color": color},
                "error_y": error(
                    [p.observed_speedup.hi - p.observed_speedup.value for p in ps],
                    [p.observed_speedup.value - p.observed_speedup.lo for p in ps],
                    color,
                ),
            }
        )
    return {
        "data": data,
        "layout": layout(
            xaxis={"title": {"text": "k (draft tokens per round)"}, "type": "log", "dtick": 0.30103},
            yaxis={"title": {"text": "speedup over the verifier's greedy decode"}},
            shapes=[_unit_line()],
        ),
    }


def by_position(pairs: tuple[PairTiming, ...], palette: Palette) -> dict[str, Any]:
    dashes = ("solid", "dash", "dot", "dashdot")
    ks = sorted({p.k for p in pairs})
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": p.case,
            "line": {"color": palette.of(p.drafter), "dash": dashes[ks.index(p.k) % len(dashes)]},
            "x": list(range(1, len(p.acceptance_by_position) + 1)),
            "y": list(p.acceptance_by_position),
        }
        for p in pairs
    ]
    return {
        "data": data,
        "layout": layout(
            xaxis={"title": {"text": "draft position"}}, yaxis={"title": {"text": "acceptance"}, "range": [0, 1.05]}
        ),
    }


def batch_cost(tiers: tuple[BatchCost, ...], palette: Palette) -> dict[str, Any]:
    """Each verifier's call cost against the tokens it takes (median, 95% CI), with its fitted line dashed."""
    data = []
    for t in tiers:
        color = palette.of(t.tier)
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{t.tier} measured",
                "x": list(t.n),
                "y": [round(e.value, 3) for e in t.call_us],
                "marker": {"color": color, "size": 7},
                "error_y": error(
                    [round(e.hi - e.value, 3) for e in t.call_us],
                    [round(e.value - e.lo, 3) for e in t.call_us],
                    color,
                ),
                "hovertemplate": "%{fullData.name}: n = %{x}, %{y:.1f} µs<extra></extra>",
            }
        )
        if t.line is not None:
            ends = [min(t.n), max(t.n)]
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{t.tier} fit: {1e6 * t.line.fixed_s:.1f} + {1e6 * t.line.per_token_s:.2f}·n µs",
                    "x": ends,
                    "y": [round(1e6 * t.line.at(n), 3) for n in ends],
                    "line": {"color": color, "dash": "dash", "width": 1.5},
                    "hoverinfo": "skip",
                }
            )
    return {
        "data": data,
        "layout": layout(
            xaxis={"title": {"text": "tokens per verifier call (n)"}, "dtick": 1},
            yaxis={"title": {"text": "µs per call (median of repeats)"}, "rangemode": "tozero"},
        ),
    }


def layer_diffs(tiers: tuple[FramingTier, ...], palette: Palette) -> dict[str, Any]:
    """Mean |single - batched| of presents per layer for each tier (worst block), log scale.

    An exact zero cannot sit on a log axis: it is drawn at a floor a decade below the smallest difference on the
    chart, as an open marker that says "exactly 0", and the axis title names the floor. A tier whose every layer
    is exactly equal is left out of the plot area and its legend entry says so.
    """
    series = []
    for t in tiers:
        if not t.blocks:
            continue
        worst = max(t.blocks, key=lambda b: b.present_max_abs_diff)
        for part, dash in (("key", "solid"), ("value", "dot")):
            series.append((t, part, dash, worst, [getattr(layer, f"{part}_mean_abs_diff") for layer in worst.layers]))
    positive = [y for *_, ys in series for y in ys if y > 0]
    floor = 10.0 ** (np.floor(np.log10(min(positive))) - 1) if positive else 1e-12
    data = []
    for t, part, dash, worst, ys in series:
        zero = all(y == 0 for y in ys)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{t.tier} ({t.precision}) {part}" + (": exactly 0" if zero else ""),
                "line": {"color": palette.of(t.tier), "dash": dash},
                "marker": {
                    "symbol": [palette.symbol(t.tier) + ("-open" if y == 0 else "") for y in ys],
                    "color": palette.of(t.tier),
                    "size": 7,
                },
                "x": [layer.layer for layer in worst.layers],
                "y": [y if y > 0 else floor for y in ys],
                "text": ["exactly 0 (drawn at the floor)" if y == 0 else f"{y:.2g}" for y in ys],
                "hovertemplate": "%{fullData.name}, layer %{x}: %{text}<extra></extra>",
                **({"visible": "legendonly"} if zero else {}),
            }
        )
    return {
        "data": data,
        "layout": layout(
            xaxis={"title": {"text": "decoder layer"}, "dtick": 1},
            yaxis={
                "title": {"text": f"mean |present diff| (log; 0 at {floor:.0e}, ○)"},
                **log_ticks([*positive, floor]),
            },
        ),
    }


@dataclass(frozen=True)
class TimePoint:
    """One point of a History series: None ``value`` is a break (no line across it)."""

    when: str
    value: float | None
    lo: float
    hi: float
    label: str
    link: str
    """The run's page, relative to the History page."""


def over_time(
    series: dict[str, list[TimePoint]],
    changes: list[tuple[str, TimePoint, str]],
    palette: Palette,
    y_title: str = "median ms per output token",
    hover: str = "%{y:.3f} ms/token",
) -> dict[str, Any]:
    """One line per greedy case with its intervals; each called change marked; a click opens the run.

    ``y_title`` and ``hover`` name the metric (ms/token by default; History also draws instructions per token).
    """
    data = []
    for case, points in series.items():
        color = palette.of(case)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": case,
                "line": {"color": color},
                "marker": {"color": color, "size": 5},
                "x": [p.when for p in points],
                "y": [None if p.value is None else round(p.value, 6) for p in points],
                "error_y": error(
                    [None if p.value is None else round(p.hi - p.value, 6) for p in points],
                    [None if p.value is None else round(p.value - p.lo, 6) for p in points],
                    color,
                ),
                "text": [p.label for p in points],
                "customdata": [p.link for p in points],
                "connectgaps": False,
                "hovertemplate": f"%{{fullData.name}}: {hover}<br>%{{text}}<extra></extra>",
            }
        )
    if changes:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "change called",
                "marker": {"symbol": "x-thin-open", "size": 14, "line": {"width": 2}, "color": "#7f7f7f"},
                "x": [p.when for _, p, _ in changes],
                "y": [p.value for _, p, _ in changes],
                "text": [f"{case}: {outcome}" for case, _, outcome in changes],
                "customdata": [p.link for _, p, _ in changes],
                "hovertemplate": "%{text}<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": layout(
            yaxis={"title": {"text": y_title}, "rangemode": "tozero"},
            xaxis={"title": {"text": "run started (UTC)"}, "type": "date"},
        ),
    }
