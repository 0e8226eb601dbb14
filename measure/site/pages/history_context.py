"""The History pages' typed context: what the templates read, every number computed and every string escaped by
the builders in :mod:`measure.site.pages.history`."""

from __future__ import annotations

from dataclasses import dataclass

from measure.site.changes import ChangePointRow
from measure.site.context import Chart, Md, RunRef, md

NOT_SEARCHED = md("-")
"""A change-point figure where the search did not run."""


@dataclass(frozen=True)
class Series:
    """One verdict on one machine: its current answer and the one it replaced."""

    question: Md
    subject: Md
    anchor: Md
    now: Md
    kind: Md
    since: Md
    records: int
    """Records in the current span."""
    before: Md | None
    """The previous answer, or None when the verdict never changed."""
    changed: Md | None
    """Date of the record that changed it."""
    older: int
    """Changes before that one."""
    worsened: bool


@dataclass(frozen=True)
class MachineVerdicts:
    machine: Md
    anchor: Md
    series: tuple[Series, ...]


@dataclass(frozen=True)
class ChangeRow:
    """A case that a record measured faster or slower than the record before it, and the metric that called it."""

    case: Md
    outcome: Md
    ratio: Md
    """NEW / BASE of the metric (ms/token or instructions/token) with its 95% interval."""
    base: RunRef
    new: RunRef
    commit: Md
    metric: Md
    """wall (ms/token) or instructions (per token, under callgrind)."""


@dataclass(frozen=True)
class Gap:
    """Where the series breaks: records that are not comparable, and why."""

    date: Md
    reason: Md


@dataclass(frozen=True)
class MetricHistory:
    """One machine's ms/token over its records, and the changes the calibrated gate calls."""

    machine: Md
    anchor: Md
    chart: Chart
    records: int
    compared: int
    """Consecutive record pairs compared (same golden rows, a wall-clock case in common)."""
    tolerance: Md
    calibration: Md
    """The band's source (the policy) and the recorded A/A calibration whose drift widens the intervals, if any."""
    changes: tuple[ChangeRow, ...]
    """The calls between consecutive records, newest first."""
    older_changes: int
    gaps: tuple[Gap, ...]
    points: tuple[ChangePointRow, ...]
    """The machine's change points, newest first."""
    older_points: int
    searched: Md
    """What was searched, and the false alarms expected of the list."""
    series: int
    """Series searched (0: none held enough commits)."""


@dataclass(frozen=True)
class CountRow:
    """One tier's newest instruction count: instructions per token (median over runs) and the runs' spread."""

    tier: Md
    per_token: Md
    spread: Md
    """(max - min) / median over the newest record's runs."""
    runs: int
    records: int


@dataclass(frozen=True)
class InstructionHistory:
    """One machine's instructions per token over the records that counted them, judged in their own band."""

    chart: Chart
    records: int
    compared: int
    tolerance: Md
    drift: Md
    """The recorded A/A drift of the count, or that none is recorded."""
    rows: tuple[CountRow, ...]
    gaps: tuple[Gap, ...]


@dataclass(frozen=True)
class MachineHistoryLine:
    """One machine on the History index: what its page holds, in a line."""

    machine: Md
    link: Md
    records: int
    compared: int
    changes: int
    worsened: int
    """Verdicts whose newest change made them worse."""
    tolerance: Md
    points: int = 0
    """Change points found."""
    expected: Md = NOT_SEARCHED
    """The false alarms expected of them."""


@dataclass(frozen=True)
class HistoryMachine:
    """One machine's page: its series, the changes called, its verdicts over time."""

    metric: MetricHistory
    verdicts: MachineVerdicts | None
    instructions: InstructionHistory | None = None
    """None when no record of the machine counted instructions."""


@dataclass(frozen=True)
class History:
    machines: tuple[MachineHistoryLine, ...]
    records: int
    points: tuple[ChangePointRow, ...]
    """The newest change points over every machine."""
    searched: Md
    series: int
