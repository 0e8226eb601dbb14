"""How every chart of the site looks: the series colours and markers, their dark-palette variants, the shared
layout, log axes whose ticks read as numbers, interval bars. Plain data (no plotly import)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PALETTE = (
    *("#0072B2", "#C58800", "#009E73", "#CC79A7", "#499AC8", "#D55E00", "#9E962B", "#929292"),
    *("#332288", "#117733", "#882255", "#41A392"),
)
"""Twelve series colours: Okabe and Ito's eight, then four of Paul Tol's muted scheme; distinguishable with every
common colour-vision deficiency, no red next to green. Each reaches 3:1 against white (WCAG's figure for graphics):
the orange, sky blue, yellow, grey and teal of those schemes are darkened just enough (Okabe and Ito's yellow
#F0E442 is 1.3:1 on white). Every series also wears its own marker (:data:`SYMBOLS`) or dash (:data:`DASHES`), so
colour is never the only cue."""
DARK = {
    "#0072B2": "#008FE0",
    "#D55E00": "#E46500",
    "#332288": "#8E7EDF",
    "#117733": "#179F44",
    "#882255": "#D8619C",
}
"""The colours the page script swaps in under the dark palette: each of :data:`PALETTE` at a contrast of at least
4.5:1 against Material's slate background (#1e2029; WCAG AA), lightened only where it falls short."""
SYMBOLS = (
    *("circle", "square", "diamond", "triangle-up", "triangle-down", "cross"),
    *("x", "pentagon", "hexagon", "triangle-right", "hourglass", "triangle-left"),
)
"""A tier's markers; stars are kept for speculative pairs (the speed-fidelity chart draws each at its best k)."""
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


@dataclass
class Palette:
    """Name (a tier, a pair) -> its colour and marker, the same on every chart of one build, in first-seen order."""

    colors: dict[str, str] = field(default_factory=dict)

    def of(self, name: str) -> str:
        if name not in self.colors:
            self.colors[name] = PALETTE[len(self.colors) % len(PALETTE)]
        return self.colors[name]

    def symbol(self, name: str) -> str:
        self.of(name)
        return SYMBOLS[list(self.colors).index(name) % len(SYMBOLS)]

    def dash(self, name: str) -> str:
        self.of(name)
        return DASHES[(list(self.colors).index(name) // len(PALETTE)) % len(DASHES)]


def log_ticks(values: list[float]) -> dict[str, Any]:
    """A log axis whose ticks read as numbers (0.2, 0.5, 1, 2): 1-2-5 over up to three decades,
    whole decades beyond (1e-4 and under in exponent form), where plotly's own minor labels would read "9 8 ... 3".
    Only positive finite values place ticks: a sum that overflowed to infinity (a record's 1e308s) has no decade."""
    found = [float(v) for v in values if 0 < v < math.inf]  # a count past 64 bits is a Python int numpy cannot log
    if not found:
        return {"type": "log"}
    lo, hi = np.floor(np.log10(min(found))), min(np.ceil(np.log10(max(found))), 308)  # 1e309 is no float
    steps = (1, 2, 5) if hi - lo <= 3 else (1,)
    ticks = [t for e in range(int(lo), int(hi) + 1) for m in steps if 0 < (t := m * 10.0**e) < math.inf]

    def text(v: float) -> str:
        return f"{v:g}" if 1e-3 <= v < 1e5 else f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e")

    return {"type": "log", "tickvals": ticks, "ticktext": [text(v) for v in ticks]}


def error(e_hi: list[float | None], e_lo: list[float | None], color: str) -> dict[str, Any]:
    """Asymmetric error bars: an interval's upper and lower distances from its point (None: a point with none)."""
    return {"type": "data", "symmetric": False, "array": e_hi, "arrayminus": e_lo, "color": color, "thickness": 1.5}


def layout(**extra: Any) -> dict[str, Any]:
    """The layout every chart starts from: margins, height, a legend under the plot."""
    return {
        "margin": {"l": 60, "r": 20, "t": 30, "b": 60},
        "height": 440,
        "legend": {"orientation": "h", "y": -0.2, "yanchor": "top"},
    } | extra
