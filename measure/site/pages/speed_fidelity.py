"""The Overview's speed-fidelity chart: every greedy tier a point, the tiers of one model one family (a legend
group, one colour, a marker per recipe or tier) with that model's Pareto front in its colour, the policy's KLD
bounds as lines, each speculative pair a star. Built from :class:`measure.analysis.decision.Decision`; the fronts
are the analysis's, per model, since two models' KLDs are against two references and do not compare."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from measure.analysis.decision import Decision
from measure.analysis.greedy_tiers import FULL, KIND_MODEL, Speed
from measure.site import chart_style
from measure.site.context import KIND

FLOOR = 1e-7
"""Where a tier with no divergence (a reference against itself) sits on the chart's log axis, marked as such."""


def _log_range(values: list[float]) -> dict[str, Any]:
    """A log axis's range (in decades) that holds every value with room above the highest: a policy bound drawn
    at the top edge would have its label clipped (plotly's autorange sees the points, not the shapes)."""
    found = [v for v in values if 0 < v < math.inf]
    if not found:
        return {}
    return {"range": [math.log10(min(found)) - 0.3, math.log10(max(found)) + 0.45]}


def label(s: Speed) -> str:
    """A tier's name in its family: the recipe that made it where ``measure explore`` did, else the tier."""
    return s.recipe if s.recipe is not None else s.tier


def _family(model: str, kinds: set[str], kind: str) -> str:
    """The legend group's title: the model, its kind where the chart holds two."""
    name = f"{KIND[kind]} tiers" if model.startswith(KIND_MODEL) else f"{model} model"
    return f"{name} ({KIND[kind]})" if len(kinds) > 1 and not model.startswith(KIND_MODEL) else name


def _kld(s: Speed) -> tuple[float, float, float]:
    """Mean KLD with its interval; a reference unjudged is 0."""
    g = s.fidelity.greedy if s.fidelity else None
    return (g.kld_mean.value, g.kld_mean.lo, g.kld_mean.hi) if g else (0.0, 0.0, 0.0)


def _point(s: Speed, color: str, symbol: str, group: str, title: str) -> dict[str, Any]:
    g = s.fidelity.greedy if s.fidelity else None
    y, lo, hi = _kld(s)
    shown = max(y, FLOOR)
    said = "reference (KLD 0, drawn at the floor)" if g is None else f"mean KLD {y:.2g}"
    made = f", recipe {s.recipe}" if s.recipe is not None else ""
    ms = s.ms_per_token
    return {
        "type": "scatter",
        "mode": "markers",
        "name": label(s),
        "legendgroup": group,
        "legendgrouptitle": {"text": title},
        "meta": {"tier": s.tier},
        "x": [ms.value],
        "y": [shown],
        "marker": {"color": color, "symbol": symbol, "size": 11, "line": {"width": 1}},
        "error_x": chart_style.error([ms.hi - ms.value], [ms.value - ms.lo], color),
        "error_y": chart_style.error([max(hi, FLOOR) - shown], [shown - max(lo, FLOOR)], color),
        "text": [f"{s.tier} ({s.precision}{made})"],  # user strings: data, never template (site.context.chart)
        "hovertemplate": f"%{{text}}: %{{x:.3f}} ms/token, {said}<extra></extra>",
    }


def speed_fidelity(d: Decision, policy_bounds: dict[str, float], palette: chart_style.Palette) -> dict[str, Any]:
    """Every greedy tier a point (ms/token against mean KLD, both with intervals), grouped by model; each model's
    Pareto front (nothing of the model faster and closer) in its colour; the policy's KLD bounds as lines; each
    pair at its best k as its verifier's fidelity."""
    shown_tiers = [s for s in d.speeds if s.fidelity is not None or s.precision in FULL]  # an unjudged tier: no y
    data, at = _families(d, shown_tiers, palette)
    data += _pairs(d, palette)  # after the families: the palette gives colours in the order asked
    ys = [y for _, y in at.values()]
    tops = [max(_kld(s)[2], FLOOR) for s in shown_tiers]  # each interval's upper end: the range holds it
    # the x range holds every interval's upper end, not only the points (a wide interval ran off the edge)
    xs = [x for x, _ in at.values()] + [p.ms_per_token.value for p in d.speculative]
    ends = [e for s in shown_tiers for e in (s.ms_per_token.lo, s.ms_per_token.hi) if 0 < e < math.inf]
    return {
        "data": data,
        "layout": chart_style.layout(
            xaxis=_speed_axis(xs + ends),
            yaxis={
                "title": {"text": f"mean KLD, nats (log; 0 at {FLOOR:g})"},
                **chart_style.log_ticks(ys + list(policy_bounds.values())),
                **_log_range(ys + tops + list(policy_bounds.values())),
            },
            shapes=_bound_lines(policy_bounds),
        ),
    }


def _families(
    d: Decision, shown_tiers: list[Speed], palette: chart_style.Palette
) -> tuple[list[dict[str, Any]], dict[str, tuple[float, float]]]:
    """Each model's tiers as points, fastest first, then its Pareto front; and where each tier's point lies."""
    families: dict[str, list[Speed]] = defaultdict(list)
    for s in sorted(shown_tiers, key=lambda s: s.ms_per_token.value):
        families[s.model].append(s)
    kinds = {s.kind for s in shown_tiers}
    data: list[dict[str, Any]] = []
    at: dict[str, tuple[float, float]] = {}
    for model, family in families.items():
        color, title = palette.of(model.removeprefix(KIND_MODEL)), _family(model, kinds, family[0].kind)
        for i, s in enumerate(family):
            point = _point(s, color, chart_style.SYMBOLS[i % len(chart_style.SYMBOLS)], model, title)
            data.append(point)
            at[s.tier] = (point["x"][0], point["y"][0])
        front = [at[t] for t in d.fronts.get(model, ()) if t in at]
        if len(front) >= 2:  # one point is no line
            data.append(_front(model, title, color, front))
    return data, at


def _front(model: str, title: str, color: str, front: list[tuple[float, float]]) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "lines",
        "name": "Pareto front",
        "legendgroup": model,
        "legendgrouptitle": {"text": title},
        "x": [x for x, _ in front],
        "y": [y for _, y in front],
        "line": {"color": color, "dash": "dot", "shape": "hv"},
        "hoverinfo": "skip",
    }


def _pairs(d: Decision, palette: chart_style.Palette) -> list[dict[str, Any]]:
    """Each speculative pair a star at its best k, as high as its verifier's mean KLD."""
    speeds = {s.tier: s for s in d.speeds}
    data = []
    for p in d.speculative:
        v = speeds.get(p.verifier)
        g = v.fidelity.greedy if v and v.fidelity else None
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{p.pair} @k{p.best_k} (its verifier's fidelity)",
                "x": [p.ms_per_token.value],
                "y": [max(g.kld_mean.value if g else 0.0, FLOOR)],
                "marker": {"color": palette.of(p.pair), "symbol": "star-open", "size": 13, "line": {"width": 2}},
                "text": [f"{p.pair} at k={p.best_k}"],
                "hovertemplate": "%{text}: %{x:.3f} ms/token<extra></extra>",
            }
        )
    return data


SPREAD_LOG = 10.0
"""Speeds further apart than this (slowest over fastest, intervals included) are drawn on a log axis: an explore
run's recipes on SmolLM2-135M span 24 to 260 ms/token (55 to 1,350 on a busy machine), and on a linear axis the
fast ones, the ones worth reading, share a tenth of its width."""


def _speed_axis(values: list[float]) -> dict[str, Any]:
    """The x axis: every point and interval end inside, from 0 (linear) or on decades (log, where they spread).

    A log axis starts at a labelled tick at or below the fastest value: SmolLM2's recipes from 24 ms/token began
    the axis at 21, between the ticks 20 and 50, and the fastest points, the ones worth reading, had no number
    left of them."""
    found = [v for v in values if 0 < v < math.inf] or [1.0]
    low, high = min(found), max(found)
    if high / low <= SPREAD_LOG:
        return {"title": {"text": "ms per output token (95% interval)"}, "range": [0, 1.05 * high]}
    ticks = chart_style.log_ticks(found)
    below = [t for t in ticks.get("tickvals", ()) if t <= low]
    start = math.log10(low) - 0.05
    return {
        "title": {"text": "ms per output token (95% interval; log)"},
        **ticks,
        "range": [min(start, math.log10(max(below)) - 0.02) if below else start, math.log10(high) + 0.05],
    }


def _bound_lines(policy_bounds: dict[str, float]) -> list[dict[str, Any]]:
    """The policy's KLD bounds, lowest first, each a dashed line across the chart with its role."""
    return [
        {
            "type": "line",
            "xref": "paper",
            "x0": 0,
            "x1": 1,
            "y0": bound,
            "y1": bound,
            "line": {"dash": "dash", "width": 1},
            "label": {"text": f"policy kld_mean_max, {role}: {bound:g}", "textposition": "end", "font": {"size": 11}},
        }
        for role, bound in sorted(policy_bounds.items(), key=lambda kv: kv[1])
    ]
