"""The fidelity pass inside ``measure run``, one reference at a time, as the other steps hold their sessions.

Before anything is measured each tier's reference is found, loaded beside the tier as the run checks it,
checked (kind, vocabulary, how both read the rows) and let go of; what is kept is a :class:`Planned` per judged
tier: names and a folder, no sessions. The pass then loads one reference, scores every row with it (its logits
written to a temporary folder) and lets go of it; then, one at a time, the tiers judged against it (its group),
each let go of before the next loads; a speculative pair's verifier, then its drafter, the same way. A run's
memory during the pass is its largest reference's or largest tier's, never two sessions' sum.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.engine.kind import detect_kind
from measure.engine.lineage import FULL, Found, Lineage, find_source, lineage
from measure.engine.load import load_tier
from measure.engine.tier import Tier
from measure.record.model.fidelity import fidelity_part, unjudged_part
from measure.suites import Progress, Save, no_progress
from measure.suites.config import PairSpec, TierSpec
from measure.suites.fidelity import (
    LOGITS_PREFIX,
    check_streams,
    reference_named,
    reference_of,
    score_drafter,
    score_reference,
    score_tier,
)
from measure.suites.golden import GoldenRows
from measure.suites.steps import Sessions, release


@dataclass(frozen=True)
class Planned:
    """One judged tier's reference, as the check found it: by name when it is a tier of the run, else a folder."""

    tier: str
    reference: str
    folder: Path
    source: str
    in_run: bool
    prompt: str | None = None
    """The judged tier's prompt template: how a decoder-only reference outside the run reads the rows."""


def _loader(sessions: Sessions):
    """Loads a reference folder outside the run with the run's session options (a decoder-only one reads the rows
    with the prompt of the tier it judges)."""

    def load(folder: Path, name: str, prompt: str | None) -> Tier:
        causal = detect_kind(folder) == "causal"
        config = sessions.config
        return load_tier(
            folder, config.session, label=f"{name}~reference", name=name, prompt=prompt if causal else None
        )

    return load


@dataclass(frozen=True)
class Unjudged:
    """A quantized tier the run found no reference for, and why: the record keeps it, so the pages say which tier
    went unjudged and how to give it a reference instead of reading silence as faithful."""

    tier: str
    reason: str


class Sources:
    """Each tier's source as its graphs tell it (:mod:`measure.engine.lineage`), for a quantized tier nobody named a
    reference for: every tier folder of the run read once, without sessions, on the first such tier."""

    def __init__(self, tiers: tuple[TierSpec, ...]) -> None:
        self.tiers = tiers
        self._found: dict[str, Lineage] | None = None

    def of(self, spec: TierSpec) -> Found:
        if self._found is None:
            self._found = {t.name: lineage(t.path) for t in self.tiers}
        return find_source(self._found[spec.name], self._found)


def check_reference(
    sessions: Sessions, spec: TierSpec, tier: Tier, golden: GoldenRows, sources: Sources | None = None
) -> Planned | Unjudged | None:
    """``tier`` (its sessions let go of by the caller: its facts are what is checked) against its reference, loaded,
    checked (kind, vocabulary, how both read the rows) and let go of: a bad reference is one line before anything
    is measured, and the two are never loaded at once. A tier with no
    reference named (config, tier.json) is given the one its graphs tell (``sources``); a quantized tier without
    one is :class:`Unjudged`, a full-precision one is a reference itself (None)."""
    config = sessions.config
    name = spec.reference or reference_named(tier)
    graph = None
    if name is None:
        if tier.fingerprint().precision in FULL:
            return None
        found = (sources or Sources(config.tiers)).of(spec)
        if found.name is None:
            return Unjudged(spec.name, found.why)
        name = graph = found.name
    held: dict[str, Tier] = {spec.name: tier}
    if name in {t.name for t in config.tiers} and name != spec.name:
        held[name] = sessions.tier(name, label=f"{name}~reference")
    judged = None
    try:
        judged = reference_of(tier, spec.reference, held, _loader(sessions), config.path, graph)
        if judged is None:
            return None
        check_streams([judged], golden)
        reference = judged.reference
        return Planned(spec.name, reference.name, reference.path, judged.source, judged.in_run, tier.prompt)
    finally:
        outside = () if judged is None or judged.in_run else (judged.reference,)
        release(*(t for n, t in held.items() if n != spec.name), *outside)


def run_fidelity_steps(
    planned: list[Planned],
    pairs: Iterable[PairSpec],
    sessions: Sessions,
    golden: GoldenRows,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
    unjudged: Iterable[Unjudged] = (),
) -> dict[str, Any]:
    """Fill ``out`` (the record's ``fidelity`` block), one reference's group, then one pair, at a time; saved
    after each. ``unjudged``: the quantized tiers without a reference, and why."""
    out.update(fidelity_part())
    if unjudged:
        out["unjudged"] = [unjudged_part(u.tier, u.reason) for u in unjudged]
    groups: dict[Path, list[Planned]] = {}
    for p in planned:
        groups.setdefault(p.folder, []).append(p)
    pairs = list(pairs)
    total, done = len(groups) + len(pairs), 0
    progress("fidelity begins", done, total)  # a reference's group takes minutes at real size: say what is running
    load = _loader(sessions)
    for group in groups.values():
        first = group[0]
        with tempfile.TemporaryDirectory(prefix=LOGITS_PREFIX) as folder:
            if first.in_run:
                reference = sessions.tier(first.reference, label=f"{first.reference}~reference")
            else:
                reference = load(first.folder, first.reference, first.prompt)
            try:
                scored = score_reference(reference, golden, Path(folder), first.in_run)
            finally:
                release(reference)  # before any tier of its group loads
            del reference
            out["references"].append(scored.part)
            for p in group:
                tier = sessions.tier(p.tier, label=p.tier)
                try:
                    out["tiers"].append(score_tier(scored, tier, p.source, golden))
                finally:
                    release(tier)
                del tier
        done += 1
        progress(f"fidelity against {first.reference}", done, total)
        save()
    for spec in pairs:
        label = f"{spec.drafter}~drafter" if spec.drafter == spec.verifier else None
        with tempfile.TemporaryDirectory(prefix=LOGITS_PREFIX) as folder:
            verifier = sessions.tier(spec.verifier)
            try:  # the verifier's greedy path scored and let go of, then the drafter alone (checked in preflight)
                scored = score_reference(verifier, golden, Path(folder), True, greedy_only=True)
            finally:
                release(verifier)
            del verifier
            drafter = sessions.tier(spec.drafter, label=label)
            try:
                out["pairs"].append(score_drafter(scored, drafter, spec.verifier, golden))
            finally:
                release(drafter)
            del drafter
        done += 1
        progress(f"fidelity {spec.name}", done, total)
        save()
    return out
