"""Plotly figures as plain JSON-ready dicts, built from analysed numbers (no plotly import needed).

Colours and template are left to the page script, which applies the light
or dark Plotly template to follow Material's palette toggle.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from measure.analysis import PairTiming, TierTiming
from measure.model import FramingTier, Record


def _layout(**extra: Any) -> dict[str, Any]:
    return {
        "margin": {"l": 60, "r": 20, "t": 30, "b": 60},
        "height": 440,
        "legend": {"orientation": "h", "y": -0.25, "yanchor": "top"},
    } | extra


def ms_per_token(tiers: tuple[TierTiming, ...]) -> dict[str, Any]:
    names = [t.tier for t in tiers]
    values = [t.ms_per_token.value for t in tiers]
    return {
        "data": [
            {
                "type": "bar",
                "name": "ms/token",
                "x": names,
                "y": values,
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [t.ms_per_token.hi - t.ms_per_token.value for t in tiers],
                    "arrayminus": [t.ms_per_token.value - t.ms_per_token.lo for t in tiers],
                },
                "text": [t.precision for t in tiers],
                "hovertemplate": "%{x} (%{text}): %{y:.3f} ms/token<extra></extra>",
            }
        ],
        "layout": _layout(yaxis={"title": {"text": "ms per output token"}}, xaxis={"title": {"text": "tier"}}),
    }


def growth(record: Record, tiers: tuple[TierTiming, ...]) -> dict[str, Any]:
    cases = record.wallclock.cases if record.wallclock else {}
    data = []
    for t in tiers:
        case = cases[t.tier]
        per_row = np.median(case.wall_s, axis=0) * 1000
        label = f"{t.tier} (b = {t.exponent.value:.2f})" if t.exponent else t.tier
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": label,
                "x": [n + 1 for n in case.tokens],
                "y": [round(float(v), 5) for v in per_row],
            }
        )
    return {
        "data": data,
        "layout": _layout(
            xaxis={"type": "log", "title": {"text": "output tokens + 1 (decoder calls)"}},
            yaxis={"type": "log", "title": {"text": "row wall time, ms (median of repeats)"}},
        ),
    }


def speedup(pairs: tuple[PairTiming, ...]) -> dict[str, Any]:
    data = []
    for name in dict.fromkeys(p.pair for p in pairs):
        ps = [p for p in pairs if p.pair == name]
        ks = [p.k for p in ps]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{name} predicted",
                "x": ks,
                "y": [p.predicted_speedup for p in ps],
                "line": {"dash": "dot"},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"{name} observed",
                "x": ks,
                "y": [p.observed_speedup.value for p in ps],
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [p.observed_speedup.hi - p.observed_speedup.value for p in ps],
                    "arrayminus": [p.observed_speedup.value - p.observed_speedup.lo for p in ps],
                },
            }
        )
    return {
        "data": data,
        "layout": _layout(
            xaxis={"title": {"text": "k (draft tokens per round)"}, "type": "log", "dtick": 0.30103},
            yaxis={"title": {"text": "speedup over the verifier's greedy decode"}},
            shapes=[
                {
                    "type": "line",
                    "xref": "paper",
                    "x0": 0,
                    "x1": 1,
                    "y0": 1,
                    "y1": 1,
                    "line": {"dash": "dash", "width": 1},
                }
            ],
        ),
    }


def by_position(pairs: tuple[PairTiming, ...]) -> dict[str, Any]:
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": p.case,
            "x": list(range(1, len(p.acceptance_by_position) + 1)),
            "y": list(p.acceptance_by_position),
        }
        for p in pairs
    ]
    return {
        "data": data,
        "layout": _layout(
            xaxis={"title": {"text": "draft position"}}, yaxis={"title": {"text": "acceptance"}, "range": [0, 1.05]}
        ),
    }


def layer_diffs(tiers: tuple[FramingTier, ...]) -> dict[str, Any]:
    """Mean |single - batched| of presents per layer for each tier (worst block), log scale."""
    data = []
    for t in tiers:
        if not t.blocks:
            continue
        worst = max(t.blocks, key=lambda b: b.present_max_abs_diff)
        for part in ("key", "value"):
            ys = [max(getattr(layer, f"{part}_mean_abs_diff"), 1e-12) for layer in worst.layers]
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": f"{t.tier} ({t.precision}) {part}",
                    "x": [layer.layer for layer in worst.layers],
                    "y": ys,
                }
            )
    return {
        "data": data,
        "layout": _layout(
            xaxis={"title": {"text": "decoder layer"}, "dtick": 1},
            yaxis={"type": "log", "title": {"text": "mean |present diff|"}},
        ),
    }


def over_time(series: dict[str, list[tuple[str, float | None, float, float, str]]]) -> dict[str, Any]:
    """One line per case: (started_at, median ms/token, interval lo, hi, hover label), oldest first.

    A ``None`` median is a gap: records on either side of it are not comparable, so no line joins them.
    """
    data = []
    for case, points in series.items():
        ys = [y for _, y, _, _, _ in points]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": case,
                "x": [x for x, _, _, _, _ in points],
                "y": ys,
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": [None if y is None else round(hi - y, 6) for (_, y, _, hi, _) in points],
                    "arrayminus": [None if y is None else round(y - lo, 6) for (_, y, lo, _, _) in points],
                    "thickness": 1,
                    "width": 0,
                },
                "text": [t for _, _, _, _, t in points],
                "connectgaps": False,
                "hovertemplate": "%{fullData.name}: %{y:.3f} ms/token<br>%{text}<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": _layout(
            yaxis={"title": {"text": "median ms per output token"}, "rangemode": "tozero"},
            xaxis={"title": {"text": "run started (UTC)"}, "type": "date"},
        ),
    }
