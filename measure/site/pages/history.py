"""History: ms/token (and instructions per token) over time per machine, its change points, verdicts over time.

The change points (:mod:`measure.analysis.history_changes`) are History's changes, shaded on the charts; the calls
between consecutive records (``measure compare``'s rules) are listed after them.

Bounded however long the history: the chart draws the newest records of a
machine one by one (:data:`CHART_RUNS`, fewer when many cases share the chart:
:data:`CHART_POINTS`) and older ones as one point per month; tables list the
newest entries and say how many are older.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from measure.analysis.history import RANK, MachineHistory, VerdictSeries
from measure.analysis.history_changes import ChangeList, ChangePoint
from measure.analysis.stats import Estimate
from measure.analysis.summary import Summary
from measure.site import charts
from measure.site.changes import row, searched, shade
from measure.site.context import Chart, RunLinks, badge, chart, fmt_ci, md
from measure.site.escape import slug
from measure.site.pages.history_context import (
    NOT_SEARCHED,
    ChangeRow,
    CountRow,
    Gap,
    History,
    HistoryMachine,
    InstructionHistory,
    MachineHistoryLine,
    MachineVerdicts,
    MetricHistory,
    Series,
)

CHART_RUNS = 150
"""Newest records per machine drawn individually; older ones are drawn as monthly medians."""
CHART_POINTS = 1200
"""Points of a chart, summed over its lines (records drawn one by one, and one per older month): a machine
measuring 9 tiers over 4 months draws its newest 129 records one by one, over 8 years its newest 37, so a page
stays near 250 kB however many tiers and years it holds."""


def chart_runs(cases: int, months: int = 0) -> int:
    """How many newest records a chart of ``cases`` lines draws one by one (at least 20), when the records span
    ``months`` months, each drawn as one more point per line."""
    return max(20, min(CHART_RUNS, CHART_POINTS // max(1, cases) - months))


CHANGES = 40
"""Newest changes listed per machine."""


def _when(started_at: str) -> str:
    return started_at.replace("T", " ").removesuffix("Z")  # Plotly's date axis: UTC, no zone suffix


CasePoints = list[tuple[Summary, Estimate]]
"""One case's series: each run with its estimate."""


def _case_points(points: CasePoints, recent: set[str], broken: set[str], links: RunLinks) -> list[charts.TimePoint]:
    """One case's series: monthly medians of the runs before ``recent``, then the recent runs one by one, a gap
    before each run that breaks comparability."""
    out: list[charts.TimePoint] = []
    months: dict[str, list[float]] = defaultdict(list)
    for run, e in points:
        if run.run_id not in recent:
            months[run.started_at[:7]].append(e.value)
    for month, values in months.items():
        v = float(np.median(values))
        out.append(charts.TimePoint(f"{month}-15", v, v, v, f"{len(values)} records in {month} (median)", ""))
    for run, e in points:
        if run.run_id not in recent:
            continue
        if run.run_id in broken and out:
            out.append(charts.TimePoint(_when(run.started_at), None, 0.0, 0.0, "not comparable", ""))
        link = "../../" + str(links.ref(run).link).removesuffix(".md") + "/"  # from results/history/<m>/
        said = f"{run.run_id}, commit {run.short_commit}"
        out.append(charts.TimePoint(_when(run.started_at), e.value, e.lo, e.hi, said, link))
    return out


def _drawn(h: MachineHistory, counted: bool) -> tuple[Sequence[Summary], set[str], dict[str, CasePoints]]:
    """The runs a chart spans, the runs that break comparability, and each case's points: instructions per token
    of the records that counted them (``counted``), else ms/token."""
    if counted:
        runs = [r for r in h.runs if r.instruction_samples]
        source = {case: [(p.run, p.per_token) for p in points] for case, points in h.instruction_series.items()}
        return runs, {b.after.run_id for b in h.instruction_breaks}, source
    source = {case: [(p.run, p.ms_per_token) for p in points] for case, points in h.series.items()}
    return h.runs, {b.after.run_id for b in h.breaks}, source


def _chart(
    h: MachineHistory, links: RunLinks, palette: charts.Palette, metric: str = "wall", found: tuple = ()
) -> Chart:
    """Newest records one by one, older ones as monthly medians; a gap wherever comparability breaks; a shaded
    band over each change point in ``found`` of a drawn case in this metric.

    ``metric``: wall draws ms/token; instructions draws instructions per token of the records that counted them.
    """
    counted = metric == "instructions"
    runs, broken, source = _drawn(h, counted)
    spanned = len({r.started_at[:7] for r in runs})
    recent = {r.run_id for r in runs[-chart_runs(len(source), spanned) :]}
    series = {case: _case_points(points, recent, broken, links) for case, points in source.items()}
    if counted:
        y_title, hover = "median instructions per output token (callgrind)", "%{y:,.0f} instructions/token"
        figure = charts.over_time(series, [], palette, y_title, hover)
    else:
        figure = charts.over_time(series, [], palette)
    shade(figure, [c for c in found if c.key.metric == metric and c.key.case in series])
    if len({p.when for points in series.values() for p in points}) == 1:  # one record: a day either side
        day = next(iter(series.values()))[0].when[:10]
        figure["layout"]["xaxis"]["range"] = [f"{day} 00:00", f"{day} 23:59"]
    if counted:
        return chart(f"instructions-{h.machine}", f"instructions per token over time on {h.machine}", figure)
    return chart(f"history-{h.machine}", f"ms per token over time on {h.machine}", figure)


def _source(h: MachineHistory) -> str:
    cal = h.band.calibration
    if cal is None or cal.drift_sd is None:
        return (
            "the policy's compare_tolerance; no A/A calibration recorded for this machine yet, "
            "so run-to-run drift is not in the intervals"
        )
    run_id, case, r = cal.worst or ("-", "-", 1.0)
    weak = "; weak: fewer than 3 pairs, so the drift has few degrees of freedom" if cal.weak else ""
    return (
        f"the policy's compare_tolerance; the recorded A/A calibration: {len(cal.pairs)} pair(s) of same-build "
        f"records{weak}; run-to-run drift {cal.drift_sd:.1%} (sd of log ms/token) added to every interval; "
        f"{cal.values} case ratios, q{cal.quantile:g} of |ratio - 1| = {(cal.tolerance or 0):.1%} "
        f"(worst {case} {r:.3f} in {run_id})"
    )


def _changes(h: MachineHistory, links: RunLinks, prefix: str) -> list[ChangeRow]:
    return [
        ChangeRow(
            md(c.comparison.case),
            md(c.comparison.outcome),
            fmt_ci(c.comparison.ratio, 4 if c.metric == "instructions" else 3),
            links.ref(c.base, prefix),
            links.ref(c.new, prefix),
            md(c.new.short_commit),
            md(c.metric),
        )
        for c in reversed(h.changes)
    ]


def instruction_history(
    h: MachineHistory, links: RunLinks, palette: charts.Palette, found: tuple[ChangePoint, ...] = ()
) -> InstructionHistory | None:
    """The instruction count's own series and band; None when no record of the machine counted instructions."""
    if not h.instruction_series:
        return None
    cal = h.band.calibration
    drift = None if cal is None else cal.drift_of("instructions")
    rows = []
    for case, points in sorted(h.instruction_series.items()):
        newest = points[-1].run.instruction_samples[case].ms_per_token
        median = float(np.median(newest))
        rows.append(
            CountRow(
                md(case),
                md(f"{median:,.0f}"),
                md(f"{(max(newest) - min(newest)) / median:.4%}"),
                len(newest),
                len(points),
            )
        )
    return InstructionHistory(
        _chart(h, links, palette, "instructions", found),
        len({p.run.run_id for points in h.instruction_series.values() for p in points}),
        h.instructions_compared,
        md(f"±{h.band.instructions_tolerance:.1%}"),
        md(
            "no A/A drift of the count recorded for this machine"
            if drift is None
            else f"A/A drift {drift.sd:.3%} (sd of log instructions/token) from {int(drift.df)} pair(s)"
        ),
        tuple(rows),
        tuple(Gap(md(b.after.started_at[:10]), md(b.reason)) for b in reversed(h.instruction_breaks))[:CHANGES],
    )


def metric_history(h: MachineHistory, links: RunLinks, palette: charts.Palette, found: ChangeList) -> MetricHistory:
    """``found``: the machine's change points."""
    changes = _changes(h, links, "../runs/")
    gaps = tuple(Gap(md(b.after.started_at[:10]), md(b.reason)) for b in reversed(h.breaks))
    points = found.changes
    return MetricHistory(
        md(h.machine),
        slug(f"ms-per-token-{h.machine}"),
        _chart(h, links, palette, "wall", points),
        len(h.runs),
        h.compared,
        md(f"±{h.band.tolerance:.1%}"),
        md(_source(h)),
        tuple(changes[:CHANGES]),
        max(0, len(changes) - CHANGES),
        gaps[:CHANGES],
        tuple(row(c, links, "../runs/") for c in points[:CHANGES]),
        max(0, len(points) - CHANGES),
        searched(found),
        len(found.searched),
    )


def _series(s: VerdictSeries) -> Series:
    current = s.spans[-1]
    before = s.spans[-2] if len(s.spans) > 1 else None
    return Series(
        md(s.question),
        md(s.subject),
        slug(f"{s.topic}-{s.subject}-{s.machine}"),
        md(current.verdict.answer),
        badge(current.verdict.outcome),
        md(current.first.date),
        current.records,
        md(before.verdict.answer) if before else None,
        md(current.first.date) if before else None,
        max(0, len(s.spans) - 2),
        s.worsened,
    )


def machine_slug(machine: str) -> str:
    return str(slug(machine))


def history_page(
    histories: list[MachineHistory],
    verdicts: list[VerdictSeries],
    records: int,
    links: RunLinks,
    palette: charts.Palette,
    found: ChangeList,
) -> tuple[History, dict[str, HistoryMachine]]:
    """The History index and one page per machine (slug -> page): each stays bounded as machines are added.
    ``found``: the change points of every machine."""
    by_machine: dict[str, list[VerdictSeries]] = defaultdict(list)
    for s in verdicts:
        by_machine[s.machine].append(s)
    tables = {
        machine: MachineVerdicts(
            md(machine),
            slug(machine),
            tuple(
                _series(s) for s in sorted(series, key=lambda s: (not s.worsened, -RANK[s.spans[-1].verdict.outcome]))
            ),
        )
        for machine, series in sorted(by_machine.items())
    }
    pages, lines = {}, []
    for h in histories:
        name = machine_slug(h.machine)
        mine = found.of(h.machine)
        points = mine.changes
        pages[name] = HistoryMachine(
            metric_history(h, links, palette, mine),
            tables.get(h.machine),
            instruction_history(h, links, palette, points),
        )
        worse = sum(s.worsened for s in by_machine.get(h.machine, ()))
        link = md(f"history/{name}.md")
        expected = md(f"{mine.expected_false_alarms:.1f}") if mine.searched else NOT_SEARCHED
        tolerance = md(f"±{h.band.tolerance:.1%}")
        line = MachineHistoryLine(md(h.machine), link, len(h.runs), h.compared, len(h.changes), worse, tolerance)
        lines.append(replace(line, points=len(points), expected=expected))
    rows = tuple(row(c, links, "runs/") for c in found.changes[:CHANGES])
    return History(tuple(lines), records, rows, searched(found), len(found.searched)), pages
