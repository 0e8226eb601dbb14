"""``measure ab``: two artifact sets measured in one job, repeats paired, written as two records.

A comparison of two separate runs must allow for everything that changed
between them on a shared machine (a neighbour's load, a frequency step): on
the 2-core host this was built on, up to 1.7x between runs a minute apart.
Measured in one job, repeat i of a case on the BASE side and repeat i on the
NEW side decode the golden rows in turn, row by row (BASE first on half the
rows: :func:`measure.suites.wallclock.base_first`), each side on its own fresh
sessions, so a paired test on the per-repeat differences cancels what the host
did to both. On the loaded 2-core host this was built on, pairing by pass
(each side's whole pass back to back) halved the per-repeat SD of wall-time
differences; pairing by row cut it to about a fifth.

Each side is a complete, ordinary wall-clock record (its own tiers' fingerprints,
its own config) with a ``pairing`` block that names the job and the other side;
``measure compare`` pairs them by repeat on that. The wall-clock settings are
NEW's, recorded in both. The cost profile (worker processes, one tier each) and
the thread sweep are off unless asked for: they time tiers one after the other,
not paired, and take longer than the paired passes.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from measure.engine.session import AfterRun
from measure.errors import MeasureError
from measure.record.model.write import pairing_part
from measure.record.writer import RecordWriter
from measure.suites import Progress, no_progress
from measure.suites.config import SuiteConfig
from measure.suites.environment import environment
from measure.suites.golden import GoldenRows, head, load_golden
from measure.suites.preflight import check_decodes, check_rows
from measure.suites.profile import run_memory_and_load
from measure.suites.runner import (
    failing,
    fresh_loader,
    load_tiers,
    new_document,
    note_slowdowns,
    speculative_pairs,
)
from measure.suites.wallclock import SIDES, run_wallclock_paired


def _names(config: SuiteConfig) -> tuple[list[str], list[str]]:
    return [t.name for t in config.tiers], [p.name for p in config.pairs]


def check_matching(base: SuiteConfig, new: SuiteConfig) -> None:
    """Both sides must measure the same cases: the same tier names and the same speculative pairs."""
    (base_tiers, base_pairs), (new_tiers, new_pairs) = _names(base), _names(new)
    for what, ours, theirs in (("tier", base_tiers, new_tiers), ("pair", base_pairs, new_pairs)):
        for name in theirs:
            if name not in ours:
                raise MeasureError(
                    f"{new.path}: {what} {name!r} is not in BASE config {base.path} "
                    f"(its {what}s: {', '.join(ours) or 'none'}); both sides need the same {what} names"
                )
        for name in ours:
            if name not in theirs:
                raise MeasureError(
                    f"{base.path}: {what} {name!r} is not in NEW config {new.path} "
                    f"(its {what}s: {', '.join(theirs) or 'none'}); both sides need the same {what} names"
                )


def _golden(config: SuiteConfig, rows: int | None) -> GoldenRows:
    golden = load_golden(config.golden)
    return golden if rows is None else head(golden, rows)


def run_paired(
    base: SuiteConfig,
    new: SuiteConfig,
    out: Path,
    argv: list[str] | None = None,
    progress: Progress = no_progress,
    rows: int | None = None,
    profile: bool = False,
    after_run: Mapping[str, AfterRun] | None = None,
) -> tuple[Path, Path]:
    """Measure BASE and NEW together and return their records' paths (base, new), under ``out``.

    ``rows``: only the first N golden rows; ``profile``: also each side's cost profile, after the paired
    passes (not paired); ``after_run``: test-only session hooks by tier name on the NEW side (a
    :class:`~measure.engine.session.Slowdown` makes a real, known slowdown; recorded as ``test_slowdown_factor``).
    Both records are saved after every pass, so a crash or an interrupt leaves
    both on disk, marked incomplete, with every pass measured so far.
    """
    check_matching(base, new)
    wallclock = replace(new.wallclock, profile=profile, threads=())
    configs = {"base": replace(base, wallclock=wallclock), "new": replace(new, wallclock=wallclock)}
    goldens = _goldens(configs, rows)
    hooks: dict[str, Mapping[str, AfterRun]] = {"base": {}, "new": dict(after_run or {})}
    tiers = {side: load_tiers(configs[side], hooks[side]) for side in SIDES}
    for side in SIDES:
        check_rows(tiers[side], goldens[side])
        check_decodes(tiers[side], goldens[side], configs[side].path)
    pairs = {side: speculative_pairs(configs[side], tiers[side]) for side in SIDES}
    env = environment(argv=argv)
    docs = {side: new_document(configs[side], ["wallclock"], goldens[side], tiers[side], env) for side in SIDES}
    note_slowdowns(docs["new"], hooks["new"])
    base_first = _pair_up(docs, out)
    writers: dict[str, RecordWriter] = {}
    with failing(writers.values()):
        for side in SIDES:
            writers[side] = RecordWriter(out, docs[side])
            docs[side]["wallclock"] = {}
        loads = {side: fresh_loader(configs[side], tiers[side], pairs[side], hooks[side]) for side in SIDES}
        texts = [r.input for r in goldens["new"].rows]
        outs: dict[str, dict[str, Any]] = {side: docs[side]["wallclock"] for side in SIDES}
        saves = {side: writers[side].save for side in SIDES}
        run_wallclock_paired(loads, texts, wallclock, outs, saves, base_first, progress)
        if profile:
            for side in SIDES:
                outs[side]["profile"] = {}
                run_memory_and_load(configs[side], texts, outs[side]["profile"], saves[side], progress)
    return writers["base"].finish(), writers["new"].finish()


def _goldens(configs: dict[str, SuiteConfig], rows: int | None) -> dict[str, GoldenRows]:
    """Each side's golden rows, which must be the same rows (a paired job decodes them on both sides)."""
    goldens = {side: _golden(configs[side], rows) for side in SIDES}
    if goldens["base"].sha256 != goldens["new"].sha256:
        raise MeasureError(
            f"{configs['base'].path}: golden rows differ from NEW config {configs['new'].path}'s (sha256); "
            "a paired job decodes the same rows on both sides"
        )
    return goldens


def _pair_up(docs: dict[str, dict[str, Any]], out: Path) -> dict[str, dict[str, list[bool]]]:
    """Give each side's record its ``pairing`` part (the job, the partner); returns its ``base_first``, per side."""
    job = str(uuid.uuid4())
    base_first: dict[str, dict[str, list[bool]]] = {side: {} for side in SIDES}
    for side, other in zip(SIDES, SIDES[::-1], strict=True):
        partner = docs[other]["run_id"]
        if partner == docs[side]["run_id"]:  # one second, the same 24 random bits: vanishingly rare, never kept
            raise MeasureError(f"{out}: the two sides drew one run id ({partner}); run again")
        docs[side]["pairing"] = pairing_part(job, side, partner, base_first[side])
    return base_first
