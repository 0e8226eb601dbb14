"""A machine's current state: the newest complete result of each part, from whichever runs measured them.

A pull-request job runs ``measure run --suite wallclock``: a complete record
with no framing in it. The newest record alone would then say "no framing
yet" while the tree holds a framing result from minutes before. So the state
is put together part by part (:data:`~measure.record.model.PARTS`: wall-clock, cost
profile, framing, instruction counts), each from the newest complete record
that carries it (:func:`measure.record.tree.newest_parts`), into one read-only
:class:`~measure.record.model.Record` that every analysis reads as it reads a run,
with where each part came from and how those runs' builds differ, so pages
state both beside the numbers instead of mixing them silently. A pure
function of records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from measure.record.model import PARTS, Config, Record, Wallclock

LABELS = {
    "wallclock": "wall-clock",
    "profile": "cost profile",
    "framing": "framing",
    "instructions": "instruction counts",
}


def label(parts: tuple[str, ...] | list[str]) -> str:
    """``wall-clock, cost profile and framing``: parts as a sentence names them."""
    names = [LABELS[p] for p in parts]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass(frozen=True)
class Current:
    """One machine's current state: ``record`` reads like one run; ``sources`` says which run gave each part."""

    record: Record
    sources: dict[str, Record]
    """Part -> the record it was taken from, in :data:`PARTS` order (parts no record carries are absent)."""

    @property
    def machine_id(self) -> str:
        return self.record.machine_id

    def source(self, part: str) -> Record | None:
        return self.sources.get(part)

    @property
    def newest(self) -> Record:
        """The newest run the state takes a part from (whose ids and environment ``record`` carries)."""
        return max(self.sources.values(), key=lambda r: r.order)

    def runs(self, parts: tuple[str, ...] = PARTS) -> tuple[tuple[tuple[str, ...], Record], ...]:
        """The distinct runs behind ``parts``, each with the parts it gave, in :data:`PARTS` order of first part."""
        out: dict[str, tuple[list[str], Record]] = {}
        for part, r in self.sources.items():
            if part in parts:
                out.setdefault(r.run_id, ([], r))[0].append(part)
        return tuple((tuple(found), r) for found, r in out.values())

    @property
    def one_run(self) -> bool:
        return len(self.runs()) <= 1

    def differences(self, parts: tuple[str, ...] = PARTS) -> tuple[str, ...]:
        """How the builds behind ``parts`` differ (commit, tier files, golden rows, onnxruntime); empty for one."""
        runs = self.runs(parts)
        if len(runs) < 2:
            return ()
        out = []
        for what, of in _BUILD:
            groups: dict[str, list[str]] = {}
            for found, r in runs:
                groups.setdefault(of(r), []).extend(found)
            if len(groups) > 1:
                out.append(f"{what}: " + "; ".join(f"{label(ps)} {value}" for value, ps in groups.items()))
        tiers = sorted({n for _, r in runs for n in r.tiers})
        changed = [n for n in tiers if len({r.tiers[n].file_hashes for _, r in runs if n in r.tiers}) > 1]
        if changed:
            out.append(f"tier files differ: {', '.join(changed)}")
        return tuple(out)


_BUILD: tuple[tuple[str, Callable[[Record], str]], ...] = (
    ("commit", lambda r: f"at {r.environment.git.short}"),
    ("golden rows", lambda r: f"{r.golden.rows} rows, sha256 {r.golden.sha256[:12]}"),
    ("onnxruntime", lambda r: r.environment.onnxruntime),
)
"""What makes two runs one build besides their tier files: how pages name it, and its value in a record."""


def compose(sources: Mapping[str, Record]) -> Current:
    """One record from the parts of several of one machine: each part as its source measured it.

    The rest of the record (ids, environment, policy, tiers) is the newest source's; a tier only an older
    source measured is kept after the newest's; the golden rows are the framing source's, whose per-row
    outputs they describe (else the newest's); each suite's settings are its own source's.
    """
    if not sources:
        raise ValueError("compose: no part to compose")
    ordered = {p: sources[p] for p in PARTS if p in sources}
    base = max(ordered.values(), key=lambda r: r.order)
    if all(r is base for r in ordered.values()):
        return Current(base, ordered)
    wc, profile, fr, ins = (ordered.get(p) for p in PARTS)
    tiers = dict(base.tiers)
    for r in sorted(ordered.values(), key=lambda r: r.order, reverse=True):
        for name, tier in r.tiers.items():
            tiers.setdefault(name, tier)
    record = replace(
        base,
        suites=tuple(dict.fromkeys(s for r in ordered.values() for s in r.suites)),
        config=_config(base, wc, fr),
        golden=(fr or base).golden,
        tiers=tiers,
        wallclock=_wallclock(wc, profile),
        framing=fr.framing if fr is not None else None,
        fidelity=fr.fidelity if fr is not None else None,  # the framing suite's pass, on its golden rows
        instructions=ins.instructions if ins is not None else None,
        test_slowdown_factor=wc.test_slowdown_factor if wc is not None else None,
        pairing=None,
    )
    return Current(record, ordered)


def _wallclock(wc: Record | None, profile: Record | None) -> Wallclock | None:
    """The wall-clock source's section, with the profile source's profile where another run measured it."""
    if wc is None or wc.wallclock is None:
        return None
    if profile is not None and profile is not wc and profile.wallclock is not None:
        return replace(wc.wallclock, profile=profile.wallclock.profile)
    return wc.wallclock


def _config(base: Record, wc: Record | None, fr: Record | None) -> Config:
    """The newest source's config, with each suite's settings (and the session it timed in) its own source's."""
    config = base.config
    if wc is not None:
        config = replace(config, wallclock=wc.config.wallclock, session=wc.config.session)
    if fr is not None:
        config = replace(config, framing=fr.config.framing)
    return config
