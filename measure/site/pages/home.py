"""Home: what the records hold, counted at build time, for the site's own front page."""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.record_analysis import Analysis
from measure.analysis.summary import Summary
from measure.site.context import KIND, Md, md


@dataclass(frozen=True)
class Home:
    records: int
    machines: int
    newest: Md
    tiers: tuple[Md, ...]
    """The current record's tiers, each with its role and precision."""
    pairs: int
    rows: int


def home_summary(summaries: list[Summary], current: Analysis | None) -> Home:
    r = current.record if current else None
    mixed = r is not None and len({t.kind for t in r.tiers.values()}) > 1  # then each tier names its kind
    return Home(
        len(summaries),
        len({s.machine_id for s in summaries}),
        md(max((s.started_at for s in summaries), default="-")[:10]),
        tuple(md(f"{n} ({t.role}, {t.precision}{', ' + KIND[t.kind] if mixed else ''})") for n, t in r.tiers.items())
        if r
        else (),
        len(r.config.pairs) if r else 0,
        r.golden.rows if r else 0,
    )
