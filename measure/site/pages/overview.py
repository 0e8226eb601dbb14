"""Overview: the current verdicts of the newest complete record."""

from __future__ import annotations

from dataclasses import dataclass

from measure.report import Analysis
from measure.site.context import RunLinks, RunRef, Topic, topics


@dataclass(frozen=True)
class Overview:
    current: RunRef | None
    machines: tuple[RunRef, ...]
    topics: tuple[Topic, ...]
    records: int


def overview_page(current: Analysis | None, latest: dict[str, Analysis], records: int, links: RunLinks) -> Overview:
    if current is None:
        return Overview(None, (), (), records)
    ref = links.ref(current.record)
    return Overview(
        ref,
        tuple(links.ref(a.record) for _, a in sorted(latest.items())),
        topics(current.verdicts, ref, current.record.date),
        records,
    )
