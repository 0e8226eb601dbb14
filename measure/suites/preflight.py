"""What ``measure run`` checks before anything is timed: every golden row fits every tier, every tier decodes a
first token from finite logits, and (with a fidelity pass) each quantized tier's reference is found and checked
beside it. A tier that fails is one line naming the file, and nothing was measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from measure.engine.meta import model_name
from measure.engine.tier import Tier
from measure.errors import MeasureError
from measure.record.model.write import decode_limit_part, tier_part
from measure.suites.fidelity_steps import Planned, Sources, Unjudged, check_reference
from measure.suites.finite import require_finite
from measure.suites.golden import GoldenRows
from measure.suites.steps import Sessions, release


def check_rows(tiers: dict[str, Tier], golden: GoldenRows) -> None:
    for row in golden.rows:
        for tier in tiers.values():
            try:
                tier.source_ids(row.input)
            except MeasureError as exc:
                raise MeasureError(f"{golden.path}:{row.line}: tier {tier.name}: {exc}") from exc


def check_decodes(tiers: dict[str, Tier], golden: GoldenRows, config: Path) -> None:
    """Refuse, before anything is timed or written, a tier whose first step gives NaN or infinite logits on a
    golden row (a broken graph: :mod:`measure.suites.finite`), or decodes no token on any row: its first step
    picks end-of-sequence on every one (a broken prompt template or export). One untimed step per row."""
    for tier in tiers.values():
        empty = 0
        for r in golden.rows:
            first = tier.teacher_forced(tier.source_ids(r.input), [])[-1]  # the greedy decode's first step
            require_finite(first, tier.name, golden.path, r.line, "its first decode step")
            empty += int(first.argmax()) == tier.special.eos
        if empty and empty == len(golden):
            fix = (
                f"check its prompt template ({tier.path}/tier.json prompt, or the tier's prompt in {config}) "
                "and its eos_token_id"
                if tier.kind == "causal"
                else "check its decoder_start_token_id and eos_token_id"
            )
            raise MeasureError(
                f"{golden.path}: tier {tier.name} decoded no token on {empty}/{len(golden)} rows "
                f"(end-of-sequence first on each): {fix}; nothing was measured"
            )


def check_tiers(
    sessions: Sessions, golden: GoldenRows, fidelity: bool = False
) -> tuple[dict[str, Any], list[Planned], list[Unjudged]]:
    """Every tier loaded once, one at a time: its rows and first steps checked, its fingerprint and decode limit
    taken for the record, its sessions let go of, and (``fidelity``) its reference found (named, or told by the
    graphs), loaded and checked against the closed tier's facts, or why it has none; every pair opened once (its
    refusal names ``pairs[i]``). Nothing is timed."""
    config, parts, planned, unjudged = sessions.config, {}, [], []
    sources = Sources(config.tiers)
    refused: MeasureError | None = None  # a reference's refusal waits for the pairs': the tiers' own come first
    for spec in config.tiers:
        tier = sessions.tier(spec.name)
        try:
            try:
                check_rows({spec.name: tier}, golden)
                check_decodes({spec.name: tier}, golden, config.path)
                limit = decode_limit_part(*tier.decode_limit())
                fingerprint, traffic = tier.fingerprint().to_dict(), tier.traffic().to_dict()
                model = spec.model or model_name(tier.path)
                parts[spec.name] = tier_part(
                    spec.role, str(tier.path), tier.kind, tier.prompt, fingerprint, limit, traffic, model
                )
            finally:
                release(tier)  # its facts stay: its reference loads after its sessions are let go of, never beside
            found = check_reference(sessions, spec, tier, golden, sources) if fidelity and refused is None else None
            if isinstance(found, Unjudged):
                unjudged.append(found)
            elif found is not None:
                planned.append(found)
        except MeasureError as exc:
            if spec.name not in parts:
                raise
            refused = exc
        del tier
    for pair in config.pairs:
        release(sessions.pair(pair))
    if refused is not None:
        raise refused
    return parts, planned, unjudged
