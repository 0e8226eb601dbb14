"""Framing-parity suite: does feeding k tokens per call decode like feeding one?

For each tier and golden row: decode single-step, then replay the very same
token prefix in blocks of k (and the whole prefix in one call) and compare
present keys/values per layer, logits and argmax. Then acceptance three ways
for each speculative pair and self-pair (probe, runtime, self), output
preservation, and quality against the golden outputs. What is measured is
recorded; nothing is assumed about which precision should differ.

Each runtime is a *leg* (:mod:`measure.suites.legs`): Python onnxruntime always
(:mod:`~measure.suites.legs.python`); every registered leg after it where the config enables it, on the very
prefixes the Python leg decoded, plus its own greedy decodes (timed, and where they leave Python's), so the page
can set runtime against precision. This module names no leg.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from measure.engine.speculative import Pair
from measure.engine.tier import Tier
from measure.record.model.acceptance import acceptance_part, differing
from measure.record.model.framing import framing_part
from measure.record.model.framing_leg import python_leg
from measure.suites import Progress, Save, no_progress
from measure.suites.config import FramingConfig
from measure.suites.golden import GoldenRows
from measure.suites.legs.contract import Leg, LegSetup, LegSkipped
from measure.suites.legs.node_driver import describe
from measure.suites.legs.python import tier_parity
from measure.suites.legs.registry import open_legs
from measure.suites.steps import OneAtATime, first_folder, kinds_of, release, session_threads


class _Greedy:
    """A greedy decode the Python leg already made: its tokens and text, as :class:`Decoded` gives them."""

    def __init__(self, tier: Tier, tokens: list[int]) -> None:
        self.tokens = tuple(tokens)
        self.text = tier.tokenizer.decode(tokens)


def pair_acceptance(
    pair: Pair, golden: GoldenRows, k: int, is_self: bool, greedy: list[list[int]] | None = None
) -> dict[str, Any]:
    """Probe (uniform single-step framing) vs runtime (batched verifier) acceptance, and output preservation;
    ``greedy``: the verifier's greedy decodes of the rows, as the Python leg recorded them (decoded here if not)."""
    probe = [0, 0]
    runtime = [0, 0]
    differs: list[dict[str, Any]] = []
    for i, row in enumerate(golden.rows):
        p = pair.decode(row.input, k, verify="single")
        r = pair.decode(row.input, k)
        plain = pair.verifier.greedy(row.input) if greedy is None else _Greedy(pair.verifier, greedy[i])
        probe[0] += p.accepted
        probe[1] += p.proposed
        runtime[0] += r.accepted
        runtime[1] += r.proposed
        if r.tokens != plain.tokens:
            differs.append(differing(row.line, row.input, r.text, plain.text))
    names = (pair.drafter.name, pair.verifier.name)
    return acceptance_part(*names, is_self, k, (probe[0], probe[1]), (runtime[0], runtime[1]), len(golden), differs)


def _let_go(tiers: Mapping[str, Tier], tier: Tier) -> tuple[dict[str, Any] | None, Callable[[], Tier] | None]:
    """Before the legs that run in processes of their own: the tier as they are told it, and, where the tiers are
    loaded one at a time, its sessions let go of (each leg's process loads its own copy) with how to load them
    again. A caller's own tiers are kept as they are."""
    if not isinstance(tiers, OneAtATime):
        return None, None
    try:
        described = describe(tier)
    except LegSkipped:  # each leg says so for itself, from the tier's shape
        described = None
    release(tier)
    return described, lambda: tiers[tier.name]


def _legs_on(
    tier: Tier,
    legs: list[Leg],
    golden: GoldenRows,
    python: dict[str, Any],
    let_go: tuple[dict[str, Any] | None, Callable[[], Tier] | None],
    prefill_rows: int | None,
    done: int,
    total: int,
    progress: Progress,
    save: Save,
) -> int:
    """``tier`` under each of ``legs``, saved after each; the count of units done."""
    described, reopen = let_go
    for leg in legs:
        leg.add(tier, golden, python, described, reopen, prefill_rows)
        leg.finish()
        done += 1
        progress(f"framing {tier.name} ({leg.label})", done, total)
        save()
    return done


def run_framing(
    tiers: Mapping[str, Tier],
    pairs: Mapping[str, Pair],
    self_pairs: Mapping[str, Pair],
    golden: GoldenRows,
    config: FramingConfig,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
    runtime_version: str | None = None,
    prefill_rows: int | None = None,
) -> dict[str, Any]:
    """Fill ``out`` (the record's ``framing`` section) in place, saving after every tier and pair.

    ``runtime_version`` is the onnxruntime version from the run's environment fingerprint,
    the one place it is read. ``tiers`` and the pairs may be loaded one at a time as they are reached
    (:class:`~measure.suites.steps.OneAtATime`); ``prefill_rows``: a budget's cut of the prompt framings.
    """
    blocks: list[int | str] = [*config.k, *(["whole"] if config.whole_prefix else [])]
    python = python_leg(runtime_version)
    out.update(framing_part(blocks, python))
    setup = LegSetup(config, tuple(blocks), frozenset(kinds_of(tiers)), session_threads(tiers), first_folder(tiers))
    legs = open_legs(setup)
    out["legs"].extend(leg.out for leg in legs)
    paired = [leg for leg in legs if leg.cost.pairs]
    total = len(tiers) * (1 + len(legs)) + len(pairs) + len(self_pairs) + len(paired)
    done = 0
    progress("framing begins", done, total)  # the first tier takes minutes at real size: say what is running
    # a leg beside Python's sessions runs first; the legs in processes of their own run after Python lets go of a
    # tier loaded one at a time
    beside = [leg for leg in legs if leg.beside]
    apart = [leg for leg in legs if not leg.beside]
    try:
        for tier in tiers.values():
            python["tiers"].append(tier_parity(tier, golden, config, prefill_rows))
            done += 1
            progress(f"framing {tier.name}", done, total)
            save()
            done = _legs_on(
                tier, beside, golden, python["tiers"][-1], (None, None), prefill_rows, done, total, progress, save
            )
            let_go = _let_go(tiers, tier) if apart else (None, None)
            done = _legs_on(tier, apart, golden, python["tiers"][-1], let_go, prefill_rows, done, total, progress, save)
    finally:
        for leg in legs:
            leg.close()
    for leg in paired:  # a runtime's own speculative decoding of the pairs, beside measure's
        leg.add_pairs(pairs.values(), golden, config.probe_k)
        done += 1
        progress(f"framing pairs ({leg.label})", done, total)
        save()
    decoded = {t["tier"]: t["output_ids"] for t in python["tiers"]}  # each verifier's greedy, decoded once
    for is_self, group in ((False, pairs), (True, self_pairs)):
        for name, pair in group.items():
            greedy = decoded.get(name.split("->")[-1])
            out["acceptance"].append(pair_acceptance(pair, golden, config.probe_k, is_self, greedy))
            done += 1
            progress(f"acceptance {name}", done, total)
            save()
    return out
