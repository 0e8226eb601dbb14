"""One site build: read the results tree through the summary cache, analyse each machine's current state, lay out pages.

Every record is hashed; a summary cached for that hash is used as is, any
other record is loaded, validated and summarized once. Only the records a
machine's current state takes a part from (the newest complete wall-clock,
cost profile, framing and instruction counts) are loaded in full; a run that
gets a page of its own is read once, and what its page shows is cached beside
its summary, so a warm build of a long history reads one small cache entry per
record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.analysis.current import compose
from measure.analysis.headline import headline
from measure.analysis.history import machine_history, verdict_series
from measure.analysis.history_changes import find_changes, recent
from measure.analysis.record_analysis import Analysis, analyse
from measure.analysis.summary import Summary
from measure.record.model import Record
from measure.record.tree import by_machine, current_parts
from measure.record.tree import reference_machine as pick_reference
from measure.results.cache import SummaryCache
from measure.results.reader import Loaded
from measure.site.charts import Palette
from measure.site.context import RunLinks, States, run_slug
from measure.site.metrics import metrics
from measure.site.pages.framing import FramingPage, framing_page
from measure.site.pages.history import history_page
from measure.site.pages.history_context import History, HistoryMachine
from measure.site.pages.home import Home, home_summary
from measure.site.pages.machines import Machines, machines_page
from measure.site.pages.methods import Methods, methods_page
from measure.site.pages.overview import Overview, overview_page
from measure.site.pages.runs import (
    RunFacts,
    RunPage,
    RunsIndex,
    RunsMonth,
    facts_entry,
    facts_from_entry,
    paged_runs,
    run_facts,
    run_page,
    runs_pages,
)
from measure.site.pages.summary_csv import summary_csv
from measure.site.pages.verdicts import VerdictsPage, verdicts_page
from measure.site.pages.wallclock import WallclockPage, wallclock_page


@dataclass
class Site:
    """All contexts of one build, and the headline numbers for metrics.json."""

    overview: Overview
    wallclock: WallclockPage
    framing: FramingPage
    history: History
    machines: Machines
    methods: Methods
    verdicts: VerdictsPage
    runs: list[tuple[str, RunPage]] = field(default_factory=list)
    runs_index: RunsIndex = field(default_factory=lambda: RunsIndex((), 0, ()))
    months: dict[str, RunsMonth] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    """Data to take away, path under the prefix -> content: the summary table as CSV, and the record of each paged
    run that a month archive holds."""
    history_pages: dict[str, HistoryMachine] = field(default_factory=dict)
    """One page per machine under history/ (slug -> page)."""
    home: Home | None = None
    downloads: dict[str, Path] = field(default_factory=dict)
    """Each paged run's record file, path under the prefix -> the file in the results tree (published as is)."""


FACTS = "runs"
"""The cache's kind for the paged runs' facts: a local speed-up the publish workflow does not commit (an entry per
run ever paged would grow the results branch by some 5 kB a record)."""


def _facts(loaded: Loaded, cache: SummaryCache, s: Summary) -> RunFacts:
    """A paged run's facts: cached for its record's sha256, else read from the record and cached, unless the file
    no longer holds the bytes its summary was made of (then read, and cached under nobody's hash)."""
    found = facts_from_entry(cache.entry(FACTS, s.sha256), s.sha256)
    if found is None:
        record, same = loaded.reread(s, suites=False)
        found = run_facts(record)
        if same:
            cache.put_entry(FACTS, s.sha256, facts_entry(found, s.sha256))
    return found


def _downloads(loaded: Loaded, pages: list[Summary]) -> tuple[dict[str, str], dict[str, Path], dict[str, str]]:
    """Each paged run's record, published as the results stage stores it, its page naming that file.
    Returns (files to write, files to copy, each paged run's download suffix by sha256)."""
    stored = {s.sha256: loaded.stored(s) for s in pages}
    files: dict[str, str] = {}
    downloads: dict[str, Path] = {}
    for s in pages:
        kept = stored[s.sha256]
        name = f"runs/{run_slug(s)}{kept.suffix}"
        if kept.text is not None:
            files[name] = kept.text
        else:
            downloads[name] = kept.path
    return files, downloads, {sha: kept.suffix for sha, kept in stored.items()}


def _palette(current: Analysis | None) -> Palette:
    """The current state's tiers claim the first colours; a pair wears its drafter's."""
    palette = Palette()
    for name in current.record.tiers if current else ():
        palette.of(name)
    return palette


EXPLORE_RUNS = 5
"""The newest ``measure explore`` runs of the reference machine the Overview reads for what to try, when no
quantized tier of a model is fit."""


def build_site(loaded: Loaded, cache: SummaryCache, reference_machine: str | None = None) -> Site:
    """``reference_machine``: the machine the Overview, Wall-clock, Framing parity and Methods answer for (the
    plugin's option); None picks the machine with the most complete records
    (:func:`measure.record.tree.reference_machine`)."""
    summaries = loaded.summaries
    records: dict[str, Record] = {}

    def record(s: Summary) -> Record:
        if s.sha256 not in records:
            records[s.sha256] = loaded.record(s)
        return records[s.sha256]

    states = {m: compose({p: record(s) for p, s in parts.items()}) for m, parts in current_parts(summaries).items()}
    analysed = {m: analyse(state.record) for m, state in states.items()}
    reference = pick_reference(summaries, reference_machine)
    state = states[reference.machine] if reference else None
    current = analysed[reference.machine] if reference else None
    pages = paged_runs(summaries)
    palette = _palette(current)
    links = RunLinks(frozenset(run_slug(s) for s in pages))
    machine_runs = by_machine(summaries)
    calibrations = loaded.calibrations(machine_runs)
    histories = [machine_history(m, runs, calibrations[m], cache) for m, runs in machine_runs.items()]
    found = find_changes(summaries, calibrations)
    index, months = runs_pages(summaries, links)
    complete = sum(s.complete for s in summaries)
    history, history_pages = history_page(histories, verdict_series(summaries), complete, links, palette, found)
    files, downloads, stored = _downloads(loaded, pages)
    if current is not None and state is not None:
        files["summary.csv"] = summary_csv(headline(current), state)
    machines = States(states, analysed, reference)
    searches = [s for s in machine_runs.get(reference.machine, []) if "explore" in s.parts] if reference else []
    explored = tuple(analyse(record(s)) for s in searches[-EXPLORE_RUNS:])
    return Site(
        overview=overview_page(
            machines,
            len(summaries),
            links,
            palette,
            recent(found, machine_runs[reference.machine]) if reference else (),
            explored,
        ),
        wallclock=wallclock_page(current, links, palette, state),
        framing=framing_page(current, links, palette, state),
        history=history,
        history_pages=history_pages,
        machines=machines_page(machines, links),
        methods=methods_page(current, links, state),
        verdicts=verdicts_page(machines, links),
        runs=[(run_slug(s), run_page(_facts(loaded, cache, s), s, links, stored[s.sha256])) for s in pages],
        runs_index=index,
        months=months,
        metrics=metrics(analysed, states, reference.machine if reference else None),
        files=files,
        downloads=downloads,
        home=home_summary(summaries, current),
    )
