"""The chart style: enough distinguishable series, dark variants that reach WCAG AA, log ticks that read as numbers."""

from __future__ import annotations

import numpy as np

from measure.site.chart_style import DARK, PALETTE, SYMBOLS, Palette, log_ticks

SLATE = "#1e2029"
"""mkdocs-material's slate background, as the browser computes it (rgb(30, 32, 41))."""


def _luminance(colour: str) -> float:
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_twelve_series_each_its_own_colour_and_marker():
    assert len(set(PALETTE)) >= 12 and len(set(SYMBOLS)) >= 12
    p = Palette()
    names = [f"tier-{i}" for i in range(14)]
    styles = {(p.of(n), p.symbol(n), p.dash(n)) for n in names}
    assert len(styles) == len(names)  # past twelve, the dash tells the series apart
    assert [p.of(n) for n in names[:12]] == list(PALETTE)  # first-seen order, stable within a build


def test_every_series_colour_reaches_3_to_1_on_the_light_page():
    """WCAG's contrast for graphics: a marker or line a reader must see against Material's white page."""
    for colour in PALETTE:
        assert _contrast(colour, "#ffffff") >= 3.0, (colour, round(_contrast(colour, "#ffffff"), 2))


def test_no_tier_is_drawn_as_a_star_the_mark_of_a_speculative_pair():
    assert not any(s.startswith("star") for s in SYMBOLS)


def test_every_series_colour_reaches_4_5_to_1_on_the_dark_page_after_its_swap():
    for colour in PALETTE:
        shown = DARK.get(colour, colour)
        assert _contrast(shown, SLATE) >= 4.5, (colour, shown, round(_contrast(shown, SLATE), 2))
    for colour in DARK:  # a swap only where the colour itself falls short
        assert _contrast(colour, SLATE) < 4.5, colour


def test_log_ticks_read_as_numbers():
    ticks = log_ticks([0.25, 0.9, 2.4])
    assert ticks["type"] == "log"
    assert ticks["ticktext"] == ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20", "50"]
    wide = log_ticks([3e-7, 0.02])  # five decades: whole decades only, small ones in exponent form
    assert wide["ticktext"] == ["1e-7", "1e-6", "1e-5", "1e-4", "0.001", "0.01", "0.1"]
    assert log_ticks([0.0, -1.0]) == {"type": "log"}  # nothing positive: plotly's own


def test_log_ticks_of_huge_and_infinite_values_stay_within_floats():
    """A sum that overflowed (a record's 1e308s) places no tick; the largest float's decade is the last."""
    assert log_ticks([0.5, 2.0, np.inf, np.nan]) == log_ticks([0.5, 2.0])
    assert log_ticks([np.inf]) == {"type": "log"}
    huge = log_ticks([1.0, 1.7e308])
    assert huge["tickvals"][-1] == 1e308 and all(np.isfinite(huge["tickvals"]))
    near = log_ticks([1e307, 1.7e308])  # two decades: 1-2-5 steps, none past the largest float
    assert near["tickvals"] == [1e307, 2e307, 5e307, 1e308]
