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

References are resolved and checked (kind, vocabulary, how they tokenize the
rows) before anything is measured, so a bad one is one line and no record.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.speculative import mismatch
from measure.engine.tier import Tier
from measure.errors import MeasureError
from measure.record.model.write_fidelity import (
    add_divergence_row,
    add_golden_row,
    add_reference_row,
    close_divergence,
    fidelity_part,
    pair_fidelity_part,
    reference_part,
    tier_fidelity_part,
)
from measure.suites.divergence import compare_logits
from measure.suites.finite import require_finite
from measure.suites.golden import GoldenRows

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


def _by_reference(judged: list[Judged]) -> dict[str, tuple[Tier, list[Judged]]]:
    groups: dict[str, tuple[Tier, list[Judged]]] = {}
    for j in judged:
        groups.setdefault(j.reference.name, (j.reference, []))[1].append(j)
    return groups


def judge_group(reference: Tier, group: Iterable[Judged], golden: GoldenRows, out: dict[str, Any]) -> None:
    """The reference's greedy path of every row first (token ids only), then each of its tiers in turn, the
    reference's logits on both streams recomputed row by row beside the tier's: ``group`` may load each tier as it
    is reached and let go of it after, so the reference and one tier are alive at once and no row's logits are
    kept past the row."""
    ref: dict[str, Any] | None = None
    eos = reference.special.eos
    paths: list[tuple[int, list[int], list[int], list[int], bool]] = []
    scored = False
    for j in group:
        if ref is None:  # the reference's part before its first tier's, as the record has always listed them
            ref = reference_part(
                reference.name,
                str(reference.path),
                reference.fingerprint().precision,
                j.in_run,
                files_sha256(reference),
            )
            out["references"].append(ref)
            for row in golden.rows:
                ids = reference.source_ids(row.input)
                greedy = list(reference.greedy_ids(ids).tokens)
                paths.append((row.line, ids, greedy, reference.target_ids(row.output), row.truncated))
        part = tier_fidelity_part(j.tier.name, reference.name, j.source)
        klds: list[np.ndarray] = []
        for line, ids, greedy, target, truncated in paths:
            facts = compare_logits(
                *_forced((reference, j.tier), ids, greedy, golden, line, "the reference's greedy path"),
                [*greedy, eos],
            )
            add_divergence_row(part["greedy"], facts.kld, facts.same_top1, facts.top5, facts.dp)
            klds.append(facts.kld)
            scored_golden = target if truncated else [*target, eos]  # a cut output ends in no end-of-sequence
            ref_logits, tier_logits = _forced((reference, j.tier), ids, target, golden, line, "the golden output")
            n = len(scored_golden)
            on_golden = compare_logits(ref_logits[:n], tier_logits[:n], scored_golden)
            add_golden_row(part, on_golden.kld, on_golden.same_top1, on_golden.nll_tier)
            if not scored:  # the reference's own figures once, from its first tier's pass
                add_reference_row(ref, len(greedy) + 1, n, float(on_golden.nll_ref.sum()))
        close_divergence(part["greedy"], np.concatenate(klds))
        out["tiers"].append(part)  # whole or not at all: a row refused midway leaves no half-scored tier
        scored = True


def _forced(
    tiers: tuple[Tier, Tier], ids: list[int], tokens: list[int], golden: GoldenRows, line: int, stream: str
) -> tuple[np.ndarray, np.ndarray]:
    """Both tiers' teacher-forced logits on one stream, each refused if NaN or infinite (a finding about the
    tier, never a figure)."""
    out = []
    for tier in tiers:
        logits = tier.teacher_forced(ids, tokens)
        require_finite(logits, tier.name, golden.path, line, f"the fidelity pass on {stream}")
        out.append(logits)
    return out[0], out[1]


def judge_pair(drafter: Tier, verifier: Tier, golden: GoldenRows) -> dict[str, Any]:
    part = pair_fidelity_part(drafter.name, verifier.name)
    eos, klds = verifier.special.eos, []
    for row in golden.rows:
        ids = verifier.source_ids(row.input)
        tokens = list(verifier.greedy_ids(ids).tokens)
        facts = compare_logits(
            *_forced((verifier, drafter), ids, tokens, golden, row.line, "the verifier's greedy path"),
            [*tokens, eos],
        )
        add_divergence_row(part["greedy"], facts.kld, facts.same_top1, facts.top5, facts.dp)
        part["positions"].append(len(tokens) + 1)
        klds.append(facts.kld)
    close_divergence(part["greedy"], np.concatenate(klds))
    return part


def judge(reference: Tier, tiers: list[Tier], golden: GoldenRows, in_run: bool = False) -> dict[str, Any]:
    """``tiers`` against ``reference`` outside a run (``measure fidelity``): a fidelity block of one reference;
    each tier is checked against it as the run checks its references (kind, vocabulary, the rows' ids)."""
    judged = []
    for tier in tiers:
        _refuse(tier, reference)
        judged.append(Judged(tier, reference, "config", in_run))
    check_streams(judged, golden)
    out = fidelity_part()
    judge_group(reference, judged, golden, out)
    return out
