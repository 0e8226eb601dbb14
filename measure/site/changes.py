"""Change points as the pages show them: table rows, a sentence of what was searched, and chart bands.

The rows and bands are made from :class:`~measure.analysis.history_changes.ChangePoint` (computed once per
build); every piece of text that came from a record (case names, commits) is escaped here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.analysis.changepoints import MIN_COMMITS
from measure.analysis.commit_series import METRICS, Commit
from measure.analysis.history_changes import ChangeList, ChangePoint
from measure.site.context import Md, RunLinks, md, trusted

SLOWER, FASTER = "rgba(213, 94, 0, 0.2)", "rgba(0, 114, 178, 0.25)"
"""Band fills: Okabe and Ito's vermillion for a rise (worse in every metric here), blue for a fall."""


@dataclass(frozen=True)
class ChangePointRow:
    """One change point in a table: what changed, by how much, between which commits, on what evidence."""

    machine: Md
    series: Md
    """The case and the metric."""
    change: Md
    """slower / faster (larger / smaller for memory, more / fewer for instructions), bold when worse, and
    after / before with its 95% interval."""
    between: Md
    """The last good and the first bad commit, each linked to its first run."""
    evidence: Md
    when: Md
    """The first bad commit's date."""


def _commit(c: Commit, links: RunLinks, prefix: str) -> str:
    return f"[{md(c.short)}]({links.ref(c.first, prefix).link})"


def row(c: ChangePoint, links: RunLinks, prefix: str) -> ChangePointRow:
    r = c.ratio
    shape = "crept in over" if c.creep else "within"
    where = f"; {shape} {c.between} commits, most likely {c.at.short}" if c.between > 1 else ""
    word = md(c.direction)
    size = md(f"×{r.value:.3f} [{r.lo:.3f}, {r.hi:.3f}]")
    return ChangePointRow(
        md(c.key.machine),
        trusted(f"{md(c.key.case)}<br><small>{md(METRICS[c.key.metric])}</small>"),
        trusted(f"**{word}** {size}" if c.worse else f"{word} {size}"),
        trusted(f"{_commit(c.last_good, links, prefix)} → {_commit(c.first_bad, links, prefix)}"),
        md(f"z {abs(c.z):.1f}; {c.before} | {c.after} commits{where}"),
        md(c.started_at[:10]),
    )


def searched(found: ChangeList) -> Md:
    """What was searched and how often such a list is wrong; or why nothing could be said yet."""
    if not found.searched:
        if not found.compared:
            return md(
                "Nothing could be compared yet: every series holds one commit's runs (a change point needs "
                f"{MIN_COMMITS} commits, {MIN_COMMITS // 2} either side)."
            )
        return md(
            f"No change point can be found yet: every series has fewer than {MIN_COMMITS} commits "
            f"({MIN_COMMITS // 2} either side of a change)."
        )
    shuffles = sum(s.permutations for s in found.searched)
    return md(
        f"{len(found.searched)} series searched, up to {found.commits} commits each; expected false alarms in this "
        f"history: {found.expected_false_alarms:.1f} (measured: each series' commits shuffled within its segments "
        f"and searched again, {shuffles} times in all)."
    )


def bands(changes: list[ChangePoint], top: float) -> list[dict[str, Any]]:
    """A shaded band per change point from its last good to its first bad run (the magnitude on hover), as
    filled traces under the chart's lines; ``top``: the height to shade up to."""
    out: list[dict[str, Any]] = []
    for c in changes:
        x0, x1 = _when(c.last_good.runs[-1].started_at), _when(c.first_bad.first.started_at)
        r = c.ratio
        text = f"{c.key.case}: {c.direction} ×{r.value:.3f} [{r.lo:.3f}, {r.hi:.3f}] from {c.first_bad.short}"
        out.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "change point",
                "legendgroup": "change point",
                "showlegend": not out,
                "x": [x0, x0, x1, x1, x0],
                "y": [0, top, top, 0, 0],
                "fill": "toself",
                "fillcolor": SLOWER if c.worse else FASTER,
                "line": {"width": 0},
                "hoveron": "fills",
                "hoverinfo": "text",
                "text": text,
            }
        )
    return out


def shade(figure: dict[str, Any], found: list[ChangePoint]) -> None:
    """Put a band for each change point under a History chart's lines, as tall as its highest interval."""
    if found:
        highs = [
            y + (e or 0.0)
            for t in figure["data"]
            for y, e in zip(t["y"], t["error_y"]["array"], strict=True)
            if y is not None
        ]
        figure["data"][:0] = bands(found, round(1.05 * max(highs, default=1.0), 6))


def _when(started_at: str) -> str:
    return started_at.replace("T", " ").removesuffix("Z")  # Plotly's date axis: UTC, no zone suffix
