"""The fidelity pass: each quantized tier against the full-precision tier it was made from, teacher-forced.

A tier's **reference** is its ``[[tiers]]`` entry's ``reference`` (a tier of the
config, or a folder), else its tier.json ``quantization.from`` (which ``measure
quantize`` writes: a tier of the config by that name, else the folder of that
name beside the tier's); a reference that is not a tier of the run is loaded for
this pass only. Both tiers score the same token streams, each row in one batched
call on the cache its source left (:meth:`measure.engine.tier.Tier.teacher_forced`):
the reference's own greedy continuation, and the golden row's expected output,
each followed by end-of-sequence. Each speculative pair's drafter is scored the
same way against its verifier on the verifier's greedy path.

A reference scores every row first, its logits written to a temporary folder, and
is let go of before the first tier it judges loads (:func:`score_reference`, then
:func:`score_tier`): a reference and a tier are never alive at once, so a pass
holds the larger of the two, not their sum.

References are resolved and checked (kind, vocabulary, how they tokenize the
rows) before anything is measured, so a bad one is one line and no record.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.speculative import mismatch
from measure.engine.tier import Tier
from measure.errors import MeasureError
from measure.record.model.fidelity import (
    add_divergence_row,
    add_golden_row,
    add_reference_row,
    close_divergence,
    fidelity_part,
    pair_fidelity_part,
    reference_part,
    tier_fidelity_part,
)
from measure.suites.divergence import compare_logits, log_softmax, target_nll
from measure.suites.finite import require_finite
from measure.suites.golden import GoldenRows
from measure.suites.steps import release

Loader = Callable[[Path, str, str | None], Tier]
"""Loads a reference folder as a tier named so, with a decoder-only tier's prompt template (the run's session
options)."""


@dataclass(frozen=True)
class Judged:
    """One tier and the reference it is judged against; ``source`` says how the reference was found."""

    tier: Tier
    reference: Tier
    source: str
    in_run: bool


def files_sha256(tier: Tier) -> str:
    """One digest over a tier's files' names and sha256: which artifact the reference was."""
    files = tier.fingerprint().files
    return hashlib.sha256("".join(f"{f.name}:{f.sha256};" for f in files).encode()).hexdigest()


def reference_named(tier: Tier) -> str | None:
    quantization = tier.meta.get("quantization")
    found = quantization.get("from") if isinstance(quantization, dict) else None
    if found is not None and (not isinstance(found, str) or not found):
        raise MeasureError(f"{tier.path / 'tier.json'}: field quantization.from: expected a tier name, got {found!r}")
    return found


def reference_of(
    tier: Tier, named: str | None, tiers: dict[str, Tier], load: Loader, config: Path, graph: str | None = None
) -> Judged | None:
    """The reference of one tier (None: it has none), loaded and checked against the tier: the config's
    ``named``, else tier.json's ``quantization.from``, else the tier of the run its graphs tell (``graph``)."""
    source = "config" if named is not None else "quantization.from" if graph is None else "graph"
    name = named if named is not None else (reference_named(tier) or graph)
    if name is None or (name == tier.name and named is None):
        return None
    if name in tiers:
        reference, in_run = tiers[name], True
    else:
        base = config.parent if named is not None else tier.path.parent
        folder = (base / name).resolve()
        if not folder.is_dir():
            where = (
                f"{config}: the reference of tier {tier.name}"
                if named is not None
                else (f"{tier.path / 'tier.json'}: field quantization.from")
            )
            raise MeasureError(
                f"{where}: {name!r} is neither a tier of the suite nor a folder ({folder}); expected the "
                f'full-precision tier this one was made from (name it with reference = "..." on the tier, or set '
                "[framing] fidelity = false)",
                docs="guide/your-tiers.md#quantizing-a-tier",
            )
        # a decoder-only reference reads the rows as the tier it judges does
        reference, in_run = load(folder, folder.name, tier.prompt), False
    _refuse(tier, reference)
    return Judged(tier, reference, source, in_run)


def _refuse(tier: Tier, reference: Tier) -> None:
    why = mismatch(tier, reference, ("tier", "reference"))
    if why is not None:
        raise MeasureError(f"tier {tier.path} cannot be judged against reference {reference.path}: {why}")


def check_streams(judged: Iterable[Judged], golden: GoldenRows) -> None:
    """Before anything is measured: each golden row has an output to score, tier and reference take the same
    ids for it (a decoder-only tier's prompt template must match its reference's), and the output fits both
    tiers' decode positions (a longer one would index past the graph's position table mid-pass)."""
    judged = list(judged)
    for row in golden.rows if judged else ():
        if not row.output:
            raise MeasureError(
                f"{golden.path}:{row.line}: field 'output': empty; the fidelity pass scores each expected output "
                "teacher-forced (set [framing] fidelity = false to measure without it)",
                docs="guide/your-tiers.md#golden-rows",
            )
        for j in judged:
            ids = j.reference.source_ids(row.input)
            if j.tier.source_ids(row.input) != ids:
                raise MeasureError(
                    f"{golden.path}:{row.line}: tier {j.tier.name} and its reference {j.reference.name} take "
                    "different token ids for this row (their prompt templates differ?); expected the same stream"
                )
            target = j.reference.target_ids(row.output)
            for tier in (j.reference, j.tier):
                _check_room(tier, len(ids), len(target), golden, row.line, len(row.output))


def _check_room(tier: Tier, source: int, tokens: int, golden: GoldenRows, line: int, chars: int) -> None:
    room = tier.target_room(source)
    if room is not None and tokens > room[0]:
        raise MeasureError(
            f"{golden.path}:{line}: field 'output': {tokens} tokens ({chars} characters), longer than tier "
            f"{tier.name} can take teacher-forced: at most {room[0]} ({room[1]}); shorten the row's output "
            "or leave the row out (in measure run, or set [framing] fidelity = false); nothing was measured",
            docs="guide/your-tiers.md#golden-rows",
        )


@dataclass(frozen=True)
class Streams:
    """One golden row as the reference reads it: its line, the source ids, the reference's greedy path and the
    golden output's ids (empty where only the greedy path is scored: a speculative pair's verifier)."""

    line: int
    ids: list[int]
    greedy: list[int]
    target: list[int]
    scored: list[int]
    """The golden stream's scored next tokens: the output's, then end-of-sequence (none after a truncated one)."""


@dataclass(frozen=True)
class Scored:
    """What judging a tier needs of its reference once the reference's sessions are let go of: each row's streams,
    its end-of-sequence id, and its teacher-forced logits, written to ``folder`` and read back a row at a time."""

    name: str
    eos: int
    rows: tuple[Streams, ...]
    folder: Path
    part: dict[str, Any]
    """The reference's entry in the record (``fidelity.references``): its own figures on the golden outputs."""

    def logits(self, i: int, stream: str) -> np.ndarray:
        return np.load(self.folder / f"{i}.{stream}.npy", allow_pickle=False)


GREEDY, GOLDEN = "the reference's greedy path", "the golden output"
LOGITS_PREFIX = "measure-fidelity-"
"""The temporary folder a reference's logits are written to while its tiers are judged (removed after)."""


def score_reference(
    reference: Tier, golden: GoldenRows, folder: Path, in_run: bool, greedy_only: bool = False
) -> Scored:
    """The reference's side of every row, before any tier it judges is loaded: its greedy path, then its
    teacher-forced logits on that path and on the golden output, each written to ``folder`` (exactly what
    :func:`~measure.suites.divergence.compare_logits` reads: KLD needs the whole distribution, so nothing shorter
    than the logits would leave the figures unchanged) and its own figures on the golden outputs. The caller lets
    go of the reference after, so a reference and a tier are never alive at once; a 135M model's 24 rows of 32
    tokens leave about 300 MB in ``folder``, one row of it in memory at a time."""
    part = reference_part(
        reference.name, str(reference.path), reference.fingerprint().precision, in_run, files_sha256(reference)
    )
    eos, rows = reference.special.eos, []
    for i, row in enumerate(golden.rows):
        ids = reference.source_ids(row.input)
        greedy = list(reference.greedy_ids(ids).tokens)
        np.save(folder / f"{i}.greedy.npy", _forced(reference, ids, greedy, golden, row.line, GREEDY))
        target: list[int] = []
        scored: list[int] = []
        if not greedy_only:
            target = reference.target_ids(row.output)
            scored = target if row.truncated else [*target, eos]  # a cut output ends in no end-of-sequence
            logits = _forced(reference, ids, target, golden, row.line, GOLDEN)[: len(scored)]
            np.save(folder / f"{i}.golden.npy", logits)
            nll = float(target_nll(log_softmax(logits), scored).sum())
            add_reference_row(part, len(greedy) + 1, len(scored), nll)
        rows.append(Streams(row.line, ids, greedy, target, scored))
    return Scored(reference.name, eos, tuple(rows), folder, part)


def score_tier(scored: Scored, tier: Tier, source: str, golden: GoldenRows) -> dict[str, Any]:
    """One tier against its scored reference, row by row (both streams): its entry in ``fidelity.tiers``, whole
    or not at all (a row refused midway leaves no half-scored tier)."""
    part = tier_fidelity_part(tier.name, scored.name, source)
    klds: list[np.ndarray] = []
    for i, r in enumerate(scored.rows):
        logits = _forced(tier, r.ids, r.greedy, golden, r.line, GREEDY)
        facts = compare_logits(scored.logits(i, "greedy"), logits, [*r.greedy, scored.eos])
        add_divergence_row(part["greedy"], facts.kld, facts.same_top1, facts.top5, facts.dp)
        klds.append(facts.kld)
        logits = _forced(tier, r.ids, r.target, golden, r.line, GOLDEN)[: len(r.scored)]
        on_golden = compare_logits(scored.logits(i, "golden"), logits, r.scored)
        add_golden_row(part, on_golden.kld, on_golden.same_top1, on_golden.nll_tier)
    close_divergence(part["greedy"], np.concatenate(klds))
    return part


def score_drafter(scored: Scored, drafter: Tier, verifier: str, golden: GoldenRows) -> dict[str, Any]:
    """A speculative pair's drafter against its verifier's scored greedy path (``greedy_only``): its entry in
    ``fidelity.pairs``."""
    part = pair_fidelity_part(drafter.name, verifier)
    klds = []
    for i, r in enumerate(scored.rows):
        logits = _forced(drafter, r.ids, r.greedy, golden, r.line, "the verifier's greedy path")
        facts = compare_logits(scored.logits(i, "greedy"), logits, [*r.greedy, scored.eos])
        add_divergence_row(part["greedy"], facts.kld, facts.same_top1, facts.top5, facts.dp)
        part["positions"].append(len(r.greedy) + 1)
        klds.append(facts.kld)
    close_divergence(part["greedy"], np.concatenate(klds))
    return part


def _forced(tier: Tier, ids: list[int], tokens: list[int], golden: GoldenRows, line: int, stream: str) -> np.ndarray:
    """One tier's teacher-forced logits on one stream, refused if NaN or infinite (a finding about the tier, never
    a figure)."""
    logits = tier.teacher_forced(ids, tokens)
    require_finite(logits, tier.name, golden.path, line, f"the fidelity pass on {stream}")
    return logits


def judge(
    reference: Tier,
    tiers: list[Tier],
    golden: GoldenRows,
    in_run: bool = False,
    reload: Callable[[Tier], Tier] | None = None,
) -> dict[str, Any]:
    """``tiers`` against ``reference`` outside a run (``measure fidelity``): a fidelity block of one reference;
    each tier is checked against it as the run checks its references (kind, vocabulary, the rows' ids), then
    judged as the run judges (:func:`score_reference`, then :func:`score_tier` for each). ``reload``: the tiers
    come closed (their facts are what the checks read) and each is loaded again by it for its own scoring, after
    the reference is let go of, then let go of itself: one tier's sessions at a time, as in a run."""
    judged = []
    for tier in tiers:
        _refuse(tier, reference)
        judged.append(Judged(tier, reference, "config", in_run))
    check_streams(judged, golden)
    out = fidelity_part()
    if not judged:
        return out
    with tempfile.TemporaryDirectory(prefix=LOGITS_PREFIX) as folder:
        scored = score_reference(reference, golden, Path(folder), in_run)
        out["references"].append(scored.part)
        if reload is not None:
            release(reference)
        for j in judged:
            tier = j.tier if reload is None else reload(j.tier)
            try:
                out["tiers"].append(score_tier(scored, tier, j.source, golden))
            finally:
                if reload is not None:
                    release(tier)
    return out
