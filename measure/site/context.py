"""Pieces every page context shares: run references, number formats, verdict cards, charts.

Page contexts are typed: every number is computed upstream (analysis,
history, parity), every string escaped here through :func:`md`; the Jinja
environment refuses any plain ``str`` that reaches a template. The page
builders (:mod:`measure.site.pages`) only arrange these pieces.
"""

from __future__ import annotations

import difflib
import html
import json
from dataclasses import dataclass
from typing import Any

from measure.analysis.current import Current, label
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.record.model import Record
from measure.record.tree import Dated, Reference
from measure.site.chart_style import DARK
from measure.site.escape import Md, json_for_attribute, md, slug, trusted
from measure.writing import finite

ADMONITION = {
    "success": "success",
    "failure": "failure",
    "warning": "warning",
    "inconclusive": "warning",
    "info": "info",
}


KIND = {"seq2seq": "encoder-decoder", "causal": "decoder-only"}
"""A tier's model kind (the record's ``kind``) in the pages' words."""


def prompt_templates(record: Record) -> dict[str, list[str]]:
    """Each decoder-only tier's prompt template once, with the tiers that use it (untrusted text: escape it)."""
    users: dict[str, list[str]] = {}
    for name, t in record.tiers.items():
        if t.decoder_only:
            users.setdefault(t.prompt or "{input}", []).append(name)
    return users


RunLike = Dated
"""A loaded record or its cached summary: what a reference to it needs (the folder queries' fields)."""


BADGE = {"success": "✓", "failure": "✗", "warning": "!", "inconclusive": "?", "info": "i"}
"""The symbol says the outcome without colour; the colour says it at a glance."""


def badge(outcome: str) -> Md:
    return trusted(
        f'<span class="measure-badge measure-{ADMONITION[outcome]}" title="{outcome}">{BADGE[outcome]}</span>'
    )


def run_slug(run: RunLike) -> str:
    """File-name-safe page name of a run (ids are checked by the schema, the machine joins them)."""
    return f"{run.machine_id}--{run.run_id}"


def month_slug(run: RunLike) -> str:
    """The Runs archive page a run is listed on: its start month."""
    return run.started_at[:7]


@dataclass(frozen=True)
class RunRef:
    run_id: Md
    machine_id: Md
    date: Md
    started_at: Md
    link: Md
    """Relative link from the referring page to the run's own page, or to its month's list."""
    state: Md
    """"complete" or "incomplete"."""
    own_page: bool = True
    """False where ``link`` goes to the month list (a month page then names the run without linking to itself)."""


@dataclass(frozen=True)
class RunLinks:
    """Which runs have a page of their own; the others link to the month list they appear on."""

    paged: frozenset[str]

    def ref(self, run: RunLike, prefix: str = "runs/") -> RunRef:
        name = run_slug(run)
        target = name if name in self.paged else month_slug(run)
        return RunRef(
            md(run.run_id),
            md(run.machine_id),
            md(run.started_at[:10]),
            md(run.started_at),
            trusted(f"{prefix}{target}.md"),
            md("complete" if run.complete else "incomplete"),
            name in self.paged,
        )


@dataclass(frozen=True)
class States:
    """Every machine's current state with its analysis, and the machine the site answers for."""

    states: dict[str, Current]
    analyses: dict[str, Analysis]
    reference: Reference | None

    @property
    def machines(self) -> list[str]:
        """The reference machine first, then the others by id."""
        first = self.reference.machine if self.reference else None
        return sorted(self.states, key=lambda m: (m != first, m))


def provenance(state: Current, links: RunLinks, prefix: str = "runs/") -> Md:
    """Where each part of a state was measured, one clause per run: "wall-clock and cost profile from run
    [X](…), 2026-12-04; framing from run [Y](…), 2026-12-03"."""
    clauses = []
    for what, r in state.runs():
        ref = links.ref(r, prefix)
        clauses.append(f"{md(label(what))} from run [{ref.run_id}]({ref.link}), {ref.date}")
    return trusted("; ".join(clauses))


def link(text: str, href: str) -> Md:
    """A Markdown link whose text is escaped and whose target the page built."""
    return trusted(f"[{md(text)}]({href})")


def megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def fmt(x: float | None, digits: int = 3) -> Md:
    return md("-" if x is None else f"{x:.{digits}f}")


def fmt_ci(e: Estimate | None, digits: int = 3) -> Md:
    if e is None:
        return md("-")
    short = f" at {e.short_level:.1%}" if e.short_level is not None else ""
    return md(f"{e.value:.{digits}f} [{e.lo:.{digits}f}, {e.hi:.{digits}f}]{short}")


def stacked(e: Estimate | None, digits: int = 3, unit: str = "") -> Md:
    """A value with its 95% interval on a second, smaller line: narrow columns, the number first."""
    if e is None:
        return md("-")
    return trusted(f"{e.value:.{digits}f}{unit}<br><small>[{e.lo:.{digits}f}, {e.hi:.{digits}f}]</small>")


def fmt_sci(x: float | None) -> Md:
    return md("-" if x is None else f"{x:.2e}")


@dataclass(frozen=True)
class Setting:
    name: Md
    value: Md


@dataclass(frozen=True)
class Chart:
    id: Md
    title: Md
    figure: Md
    """Plotly figure JSON, escaped for the chart element's data-figure attribute."""


def _inert(value: Any) -> Any:
    """Plotly renders a subset of HTML in names and labels: escape untrusted text in them."""
    if isinstance(value, str):
        return html.escape(value, quote=False)
    if isinstance(value, list):
        return [_inert(v) for v in value]
    return value


def chart(chart_id: str, title: str, figure: dict[str, Any]) -> Chart:
    for trace in figure["data"]:
        for key in ("name", "x", "text"):
            if key in trace:
                trace[key] = _inert(trace[key])
        title = trace.get("legendgrouptitle")
        if isinstance(title, dict) and "text" in title:
            title["text"] = _inert(title["text"])
    figure.setdefault("layout", {}).setdefault("meta", {})["dark"] = DARK  # the page script's dark palette
    data = json.dumps(finite(figure), separators=(",", ":"), allow_nan=False)  # browsers' JSON.parse has no NaN
    return Chart(slug(chart_id), md(title), json_for_attribute(data))


def marked(a: str, b: str) -> tuple[Md, Md]:
    """Escape both strings and wrap the characters where they differ in <mark>."""
    out_a: list[str] = []
    out_b: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        sa, sb = md(a[i1:i2]), md(b[j1:j2])
        if op == "equal":
            out_a.append(sa)
            out_b.append(sb)
        else:
            out_a.append(f"<mark>{sa}</mark>" if sa else "")
            out_b.append(f"<mark>{sb}</mark>" if sb else "")
    return trusted("".join(out_a)), trusted("".join(out_b))
