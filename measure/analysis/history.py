"""History: what a machine's records say over time. Pure functions of cached summaries.

Three things per machine, all from :class:`~measure.analysis.summary.Summary` (never a
raw record, so a history of 10,000 records costs 10,000 cache reads):

* the ms/token series of each greedy tier, broken where consecutive records
  stop being comparable (other golden rows, another timed region), with the reason;
* the instructions-per-token series of each greedy tier, for records that
  counted them under callgrind (broken, too, where the valgrind version or
  the rows counted change);
* the changes the calibrated gate calls between consecutive comparable
  records, judged by :func:`measure.analysis.comparison.compare` with the drift the
  machine's *recorded* ``calibration.json`` states, exactly as ``measure
  compare`` judges a pull request: in wall-clock ms/token, and in
  instructions per token in that metric's own band; each change names the
  metric that called it;
* for each verdict, spans of consecutive records that gave it one outcome.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Protocol

from measure.analysis.calibration import Calibration
from measure.analysis.comparison import Comparison, Drift
from measure.analysis.stats import Estimate
from measure.analysis.summary import Summary
from measure.analysis.verdict import Verdict
from measure.policy import Policy


class Judge(Protocol):
    """What judges many (BASE, NEW) pairs of summaries, as :func:`measure.analysis.comparison.compare_many` does
    (the results stage's cache answers from disk what it judged before)."""

    def comparisons_many(
        self,
        pairs: list[tuple[Summary, Summary]],
        tolerance: float | None,
        drift: Drift | None = None,
        metric: str = "wall",
        outcomes: frozenset[str] | None = None,
    ) -> list[list[Comparison]]: ...


@dataclass(frozen=True)
class Point:
    run: Summary
    ms_per_token: Estimate


@dataclass(frozen=True)
class CountPoint:
    """One record's callgrind instructions per token of one tier (median over its runs)."""

    run: Summary
    per_token: Estimate


@dataclass(frozen=True)
class Break:
    """Consecutive records that cannot be compared, and why."""

    before: Summary
    after: Summary
    reason: str


@dataclass(frozen=True)
class Change:
    """A wall-clock case that a record measured faster or slower than the comparable record before it."""

    base: Summary
    new: Summary
    comparison: Comparison
    metric: str = "wall"
    """The metric that called it: wall (ms/token) or instructions (per token, under callgrind)."""


@dataclass(frozen=True)
class Band:
    """The band the history was judged with (the policy's), and the calibration whose drift widened each interval."""

    tolerance: float
    calibration: Calibration | None
    instructions_tolerance: float = Policy().instructions_tolerance
    """The instruction count's own band (the policy's ``instructions_tolerance``)."""


@dataclass(frozen=True)
class MachineHistory:
    machine: str
    runs: tuple[Summary, ...]
    """Complete records with wall-clock cases, oldest first."""
    series: dict[str, tuple[Point, ...]]
    """Greedy case -> its median ms/token per record, oldest first."""
    breaks: tuple[Break, ...]
    compared: int
    """Consecutive record pairs compared."""
    changes: tuple[Change, ...]
    """Oldest first."""
    band: Band
    instruction_series: dict[str, tuple[CountPoint, ...]] = field(default_factory=dict)
    """Greedy tier -> its median instructions per token per record that counted them, oldest first."""
    instruction_breaks: tuple[Break, ...] = ()
    """Consecutive counted records whose counts are not comparable (another valgrind or rows)."""
    instructions_compared: int = 0


REGIONS = {"text": "source text in, tokenizing included", "ids": "token ids in -> ids out"}
"""The wall-clock regions a record can time (``Wallclock.timed``), in words for a break's reason."""


def comparable(base: Summary, new: Summary) -> str | None:
    """Why two consecutive records cannot be compared, or None when they can."""
    if base.golden_sha256 != new.golden_sha256:
        return f"golden rows changed (sha256 {base.golden_sha256[:12]} -> {new.golden_sha256[:12]})"
    if not set(base.samples) & set(new.samples):
        return "no wall-clock case in common"
    return None


def region_changed(base: Summary, new: Summary) -> str | None:
    """Why two records' wall-clock samples differ in what they time, or None: a step there is not a speed change.

    Instruction counts are not affected (callgrind counts the text-in decode in both).
    """
    if base.timed == new.timed:
        return None
    was, now = REGIONS.get(base.timed, base.timed), REGIONS.get(new.timed, new.timed)
    return f"timed region changed ({was} -> {now}): a step here is tokenizing moved in or out, not a speed change"


def machine_history(machine: str, runs: list[Summary], calibration: Calibration | None, cache: Judge) -> MachineHistory:
    """``runs``: one machine's complete records, oldest first; ``calibration``: its recorded one, if any."""
    runs = [r for r in runs if r.samples]
    policy = runs[-1].policy if runs else Policy()
    drift = calibration.drift if calibration is not None else None
    band = Band(policy.compare_tolerance, calibration, policy.instructions_tolerance)
    series: dict[str, list[Point]] = defaultdict(list)
    counts: dict[str, list[CountPoint]] = defaultdict(list)
    for r in runs:
        for case, c in sorted(r.samples.items()):
            if c.kind == "greedy":
                series[case].append(Point(r, c.estimate))
        for case, c in sorted(r.instruction_samples.items()):
            counts[case].append(CountPoint(r, c.estimate))
    breaks, pairs = _wall_pairs(runs)
    changes = _changes(pairs, cache.comparisons_many(pairs, None, drift, outcomes=CHANGED), "wall")
    count_breaks, count_pairs = _count_pairs([r for r in runs if r.instruction_samples])
    count_drift = calibration.drift_of("instructions") if calibration is not None else None
    found = cache.comparisons_many(count_pairs, None, count_drift, "instructions", CHANGED)
    changes += _changes(count_pairs, found, "instructions")
    changes.sort(key=lambda c: (c.new.started_at, c.new.run_id))
    return MachineHistory(
        machine,
        tuple(runs),
        {case: tuple(points) for case, points in series.items()},
        tuple(breaks),
        len(pairs),
        tuple(changes),
        band,
        {case: tuple(points) for case, points in counts.items()},
        tuple(count_breaks),
        len(count_pairs),
    )


def _wall_pairs(runs: list[Summary]) -> tuple[list[Break], list[tuple[Summary, Summary]]]:
    """Consecutive runs whose wall-clock times compare, and a break where they do not (with its reason)."""
    breaks, pairs = [], []
    for base, new in pairwise(runs):
        reason = comparable(base, new) or region_changed(base, new)
        if reason is not None:
            breaks.append(Break(base, new, reason))
        else:
            pairs.append((base, new))
    return breaks, pairs


def _count_pairs(counted: list[Summary]) -> tuple[list[Break], list[tuple[Summary, Summary]]]:
    """Consecutive runs with instruction counts that compare; counted otherwise (another key) is a break too."""
    breaks, pairs = [], []
    for base, new in pairwise(counted):
        reason = comparable(base, new)
        if reason is None and base.instructions_key != new.instructions_key:
            reason = f"instructions counted otherwise ({base.instructions_key} -> {new.instructions_key})"
        if reason is not None:
            breaks.append(Break(base, new, reason))
        else:
            pairs.append((base, new))
    return breaks, pairs


CHANGED = frozenset(("faster", "slower"))
"""The comparisons History shows: a year of pairs holds a few hundred thousand, nearly all "same"."""


def _changes(pairs: list[tuple[Summary, Summary]], found: list[list[Comparison]], metric: str) -> list[Change]:
    """The faster and slower calls among consecutive pairs' comparisons, in pair order."""
    return [
        Change(base, new, c, metric)
        for (base, new), comparisons in zip(pairs, found, strict=True)
        for c in comparisons
        if c.outcome in CHANGED
    ]


@dataclass(frozen=True)
class Span:
    """Consecutive records that gave one verdict the same outcome."""

    first: Summary
    last: Summary
    records: int
    verdict: Verdict
    """The verdict as the span's last record gave it."""


@dataclass(frozen=True)
class VerdictSeries:
    machine: str
    topic: str
    subject: str
    question: str
    spans: tuple[Span, ...]
    """Oldest first."""

    @property
    def worsened(self) -> bool:
        """The current outcome is worse than the one before it."""
        if len(self.spans) < 2:
            return False
        return RANK[self.spans[-1].verdict.outcome] > RANK[self.spans[-2].verdict.outcome]


RANK = {"success": 0, "info": 0, "inconclusive": 1, "warning": 2, "failure": 3}
"""How bad an outcome is, for 'verdicts that got worse'."""


def verdict_series(runs: list[Summary]) -> list[VerdictSeries]:
    """Per machine, topic and subject: spans of equal outcome over the complete records, oldest first."""
    seq: dict[tuple[str, str, str], list[tuple[Summary, Verdict]]] = defaultdict(list)
    for r in sorted(runs, key=lambda r: (r.started_at, r.run_id)):
        if r.complete:
            for v in r.verdicts:
                seq[(r.machine_id, v.topic, v.subject)].append((r, v))
    out = []
    for (machine, topic, subject), items in seq.items():
        groups: list[list[tuple[Summary, Verdict]]] = []
        for item in items:
            if groups and groups[-1][-1][1].outcome == item[1].outcome:
                groups[-1].append(item)
            else:
                groups.append([item])
        spans = tuple(Span(g[0][0], g[-1][0], len(g), g[-1][1]) for g in groups)
        out.append(VerdictSeries(machine, topic, subject, items[0][1].question, spans))
    return out
