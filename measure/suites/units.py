"""The wall-clock suite's cases grouped by the sessions they decode with, opened one unit at a time.

A unit is one tier (its greedy case) or one speculative pair (its cases at every k). :class:`Units` opens a
unit's sessions (:class:`~measure.suites.steps.Sessions`), hands its cases to the suite, and lets them go
before the next unit opens; with ``fresh_sessions = false`` it keeps every unit it opened, as the suite did
before units (one set of sessions for the whole suite). It also keeps how long each unit took to load: the
planner's cost of a repeat.
"""

from __future__ import annotations

from collections.abc import Iterator
from time import perf_counter
from typing import Any

from measure.suites.steps import Sessions, release
from measure.suites.wallclock import CaseSpec, cases_for


class Units:
    """The config's wall-clock units, in case order (each tier, then each pair at each k)."""

    def __init__(self, sessions: Sessions, ks: tuple[int, ...], fresh: bool) -> None:
        self.sessions = sessions
        self.ks = ks
        self.fresh = fresh
        pairs = {p.name for p in sessions.config.pairs}
        self.cases: dict[str, list[str]] = {
            unit: [f"{unit}@k{k}" for k in ks] if unit in pairs else [unit] for unit in sessions.units
        }
        """Each unit's case names, as :func:`~measure.suites.wallclock.cases_for` names them."""
        self.unit_of = {case: unit for unit, names in self.cases.items() for case in names}
        self.load_s: dict[str, float] = {}
        """Seconds the last load of each unit took."""
        self._kept: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    @property
    def case_names(self) -> list[str]:
        return list(self.unit_of)

    def _open(self, unit: str) -> tuple[dict[str, Any], dict[str, Any]]:
        if unit in self._kept:
            return self._kept[unit]
        start = perf_counter()
        opened = self.sessions.unit(unit)
        self.load_s[unit] = perf_counter() - start
        if not self.fresh:
            self._kept[unit] = opened
        return opened

    def each(self, fresh_row: str | None = None, only: set[str] | None = None) -> Iterator[list[CaseSpec]]:
        """Each unit's cases (those in ``only``, when given), its sessions loaded for the step and let go after;
        with ``fresh_row``, each case first decodes it untimed (a new session's first call allocates)."""
        for unit, names in self.cases.items():
            wanted = [n for n in names if only is None or n in only]
            if not wanted:
                continue
            tiers, pairs = self._open(unit)
            cases = [c for c in cases_for(tiers, pairs, self.ks) if c.name in wanted]
            if fresh_row is not None and self.fresh:
                for case in cases:
                    case.run(fresh_row)
            try:
                yield cases
            finally:
                del cases
                if self.fresh:
                    release(*tiers.values(), *pairs.values())
                del tiers, pairs

    def close(self) -> None:
        """Let go of every unit kept (``fresh_sessions = false``)."""
        held = [x for tiers, pairs in self._kept.values() for x in (*tiers.values(), *pairs.values())]
        self._kept.clear()
        release(*held)
