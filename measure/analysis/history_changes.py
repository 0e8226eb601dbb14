"""The change points of a results tree's history: every machine's series searched, one list, newest first.

Pure functions of cached summaries and the machines' recorded calibrations (:mod:`measure.analysis.commit_series`
makes the series, :mod:`measure.analysis.changepoints` and :mod:`measure.analysis.change_fit` search them).
Every list carries the false alarms expected of it, measured on its own series by shuffling; a list cut to
the commits since one scales each series' share by the commits it kept.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from measure.analysis.calibration import Calibration
from measure.analysis.change_fit import Change, would_start
from measure.analysis.change_fit import search as search_runs
from measure.analysis.changepoints import MIN_COMMITS, Segmented
from measure.analysis.commit_series import Commit, Series, SeriesKey, commits_of, machine_series, new_runs
from measure.analysis.stats import Estimate
from measure.analysis.summary import Summary
from measure.record.tree import by_machine

WORDS = {"memory_bytes": ("larger", "smaller"), "instructions": ("more", "fewer")}
"""How a rise and a fall read in a metric other than a time (a time is slower or faster)."""


@dataclass(frozen=True)
class ChangePoint:
    """One change point: the series, the commits it lies between, its size and its evidence."""

    key: SeriesKey
    last_good: Commit
    """The last commit measured at the old level."""
    first_bad: Commit
    """The first commit measured at the new level (the change lies after last_good, up to this one)."""
    at: Commit
    """The most likely first commit at the new level."""
    ratio: Estimate
    """Geometric mean after / before, with its 95% interval."""
    z: float
    """The two segments' difference in standard errors (signed)."""
    before: int
    after: int
    """Commits in the segments either side."""
    creep: bool
    """Spread over several commits rather than one step."""
    between: int
    """Commits from last_good (excluded) to first_bad (included): 1 for a step placed exactly."""

    @property
    def direction(self) -> str:
        up, down = WORDS.get(self.key.metric, ("slower", "faster"))
        return up if self.ratio.value > 1 else down

    @property
    def worse(self) -> bool:
        """A rise: every metric here is better lower."""
        return self.ratio.value > 1

    @property
    def started_at(self) -> str:
        return self.first_bad.first.started_at


@dataclass(frozen=True)
class SeriesChanges:
    """One series searched: its change points (oldest first) and the false alarms expected of it."""

    series: Series
    segmented: Segmented
    changes: tuple[ChangePoint, ...]
    false_alarms: float
    permutations: int
    commits: int
    """Commits of the series this covers (all of them, or those since the list's cut)."""


@dataclass(frozen=True)
class ChangeList:
    """Every searched series of a history (or of a machine), and the series too short to search."""

    searched: tuple[SeriesChanges, ...]
    unsearched: tuple[tuple[SeriesKey, int], ...] = ()
    """Series of fewer than MIN_COMMITS commits, and their commits."""

    @property
    def short(self) -> int:
        """Series with two or more commits but fewer than MIN_COMMITS."""
        return sum(n > 1 for _, n in self.unsearched)

    @property
    def changes(self) -> tuple[ChangePoint, ...]:
        """Newest first."""
        found = [c for s in self.searched for c in s.changes]
        return tuple(sorted(found, key=lambda c: (c.started_at, c.key.case, c.key.metric), reverse=True))

    @property
    def expected_false_alarms(self) -> float:
        return sum(s.false_alarms for s in self.searched)

    @property
    def compared(self) -> bool:
        """Some series has two commits or more: something could be compared."""
        return bool(self.searched) or self.short > 0

    @property
    def commits(self) -> int:
        """The most commits of any series searched."""
        return max((s.commits for s in self.searched), default=0)

    def of(self, machine: str) -> ChangeList:
        return ChangeList(
            tuple(s for s in self.searched if s.series.key.machine == machine),
            tuple((k, n) for k, n in self.unsearched if k.machine == machine),
        )

    def since(self, started_at: str) -> ChangeList:
        """The change points after the commits first measured before ``started_at``, each series' expected false
        alarms scaled to the commits it keeps."""
        kept = []
        for s in self.searched:
            after = sum(c.first.started_at >= started_at for c in s.series.commits)
            share = after / max(1, len(s.series.commits))
            found = tuple(c for c in s.changes if c.last_good.first.started_at >= started_at)
            kept.append(replace(s, changes=found, false_alarms=s.false_alarms * share, commits=after))
        return ChangeList(tuple(kept), self.unsearched)


def _point(series: Series, change: Change) -> ChangePoint:
    commits = series.commits
    ratio = Estimate(math.exp(change.log_ratio), math.exp(change.lo), math.exp(change.hi))
    last_good = commits[max(0, change.first - 1)]
    return ChangePoint(
        series.key,
        last_good,
        commits[change.last],
        commits[change.at],
        ratio,
        change.z,
        change.before,
        change.after,
        change.creep,
        change.last - change.first + 1,
    )


def seed_of(key: SeriesKey) -> int:
    """A fixed seed per series, so a build shuffles the same way every time."""
    return zlib.crc32("\0".join((key.machine, key.metric, key.case, key.basis)).encode())


def search(series: Series) -> SeriesChanges:
    """One series searched, and its false alarms measured."""
    found = search_runs(series.runs, seed_of(series.key))
    changes = tuple(_point(series, c) for c in found.changes)
    return SeriesChanges(series, found.segmented, changes, found.false_alarms, found.permutations, series.runs.commits)


def find_changes(
    summaries: Iterable[Summary], calibrations: Mapping[str, Calibration | None], machine: str | None = None
) -> ChangeList:
    """Every machine's (or one machine's) series searched: ``calibrations`` maps machine -> its recorded one."""
    searched, unsearched = [], []
    for m, runs in sorted(by_machine(summaries).items()):
        if machine is not None and m != machine:
            continue
        for series in machine_series(m, runs, calibrations.get(m)):
            if series.runs.commits >= MIN_COMMITS:
                searched.append(search(series))
            else:
                unsearched.append((series.key, series.runs.commits))
    return ChangeList(tuple(searched), tuple(unsearched))


RECENT = 20
"""The Overview names the change points of its machine's newest this many commits."""


def recent(found: ChangeList, runs: list[Summary], commits: int = RECENT) -> tuple[ChangePoint, ...]:
    """The change points of one machine (``runs``: its records) whose first bad commit is among its newest
    ``commits`` commits, newest first."""
    mine = commits_of(runs)
    if not mine:
        return ()
    since = mine[-commits:][0].first.started_at
    machine = mine[0].first.machine_id
    return tuple(c for c in found.of(machine).changes if c.first_bad.first.started_at >= since)


def without_commit(summaries: Iterable[Summary], commit: str) -> list[Summary]:
    """The history as it stood before ``commit``'s records (a merge's; a prefix will do) were added."""
    want = commit.lower()
    return [s for s in summaries if not (s.commit and s.commit.lower().startswith(want))]


def confirmed(before: ChangeList, after: ChangeList) -> tuple[ChangePoint, ...]:
    """The change points ``after`` finds that ``before`` did not (by series and last good commit), newest first."""
    known = {(c.key, c.last_good.commit, c.first_bad.commit) for c in before.changes}
    return tuple(c for c in after.changes if (c.key, c.last_good.commit, c.first_bad.commit) not in known)


@dataclass(frozen=True)
class Start:
    """A new record's point that would start a slower segment on an established series, if the next commit agrees."""

    key: SeriesKey
    ratio: float
    z: float
    runs: int


def starts(history: ChangeList, new: list[Summary]) -> tuple[Start, ...]:
    """What the records ``new`` (a pull request's, not in the history) would start on each searched series of
    their machine: a slower point than the series' last segment by as much as a change needs."""
    out = []
    for s in history.searched:
        mine = [r for r in new if r.machine_id == s.series.key.machine]
        mean, var = new_runs(mine, s.series.key, s.series.drift)
        found = would_start(s.series.runs, s.segmented, mean, var) if mean.size else None
        if found is not None:
            out.append(Start(s.series.key, math.exp(found[0]), found[1], int(mean.size)))
    return tuple(sorted(out, key=lambda x: -x.ratio))
