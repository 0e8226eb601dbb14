"""What each replaying leg costs on each tier precision, measured in a budgeted run's warm-up.

A leg's stated factor (:class:`~measure.suites.legs.cost.LegCost`) holds where its runtime's kernels keep pace
with Python onnxruntime's; they need not. On a 135M model onnxruntime-web's wasm decoded the int4 tier 13x slower
than Python (343 ms a token), and a planner that assumed 3x overran a 10-minute budget by 2.2 minutes. So before
the plan, each replaying leg decodes one golden row's first :data:`PROBE_TOKENS` tokens on the smallest tier of
each kind and precision, beside Python's decode of the same tokens on the same tier: the ratio is the leg's factor
on that precision, the rest of the probe's time its start and load (:class:`~measure.suites.legs.cost.LegRate`).
Tiers of at most :data:`PROBE_MIN_BYTES` are not probed: there a leg takes seconds and the stated factor does.
Python's sessions are let go of before a leg's process loads its copy, as in the framing suite.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from time import perf_counter

from measure.engine.load import load_tier
from measure.engine.tier import Tier
from measure.suites import Progress, no_progress
from measure.suites.config import SuiteConfig, TierSpec
from measure.suites.golden import GoldenRow, GoldenRows
from measure.suites.legs.browser import KEEP_BROWSER_BYTES, folder_bytes
from measure.suites.legs.contract import LegSetup, LegSkipped
from measure.suites.legs.cost import LegRate
from measure.suites.legs.node_driver import describe
from measure.suites.legs.registry import open_legs
from measure.suites.steps import release

PROBE_TOKENS = 8
"""Tokens each probe decodes: enough for the decode steps to outweigh the prompt's prefill on a chat prompt."""
PROBE_MIN_BYTES = KEEP_BROWSER_BYTES
"""Tier folders of at most this size are not probed (a small tier's legs cost seconds whatever their factor)."""

Rates = dict[tuple[str, str], LegRate]
"""By (leg key, tier name), as :class:`~measure.suites.plan_costs.Asks` takes them."""


def probe_legs(
    config: SuiteConfig,
    golden: GoldenRows,
    precisions: Mapping[str, str],
    progress: Progress = no_progress,
    min_bytes: int = PROBE_MIN_BYTES,
) -> Rates:
    """Each enabled replaying leg on the smallest tier of each (kind, precision) above ``min_bytes``, on the first
    of ``golden``'s rows; every tier of that kind and precision above ``min_bytes`` takes its rate. ``precisions``:
    each tier's, from the checks' fingerprints. A leg that cannot run here, or fails, gives no rate (the planner
    then takes its stated one)."""
    sizes = {spec.name: folder_bytes(spec.path) for spec in config.tiers}
    chosen: dict[tuple[str, str], TierSpec] = {}
    for spec in config.tiers:
        key = (spec.kind, precisions.get(spec.name, ""))
        if sizes[spec.name] > min_bytes and (key not in chosen or sizes[spec.name] < sizes[chosen[key].name]):
            chosen[key] = spec
    rates: Rates = {}
    for done, (key, spec) in enumerate(chosen.items(), 1):
        measured = _probe(config, spec, golden, progress)
        for other in config.tiers:
            if (other.kind, precisions.get(other.name, "")) == key and sizes[other.name] > min_bytes:
                rates.update({(leg, other.name): rate for leg, rate in measured.items()})
        progress(f"legs warm-up {spec.name} (timing the plan)", done, len(chosen))
    return rates


def _load(config: SuiteConfig, spec: TierSpec) -> Tier:
    prompt = spec.prompt if spec.kind == "causal" else None
    return load_tier(
        spec.path,
        config.session,
        label=f"{spec.name}~probe",
        name=spec.name,
        prompt=prompt,
        max_new_tokens=PROBE_TOKENS,
    )


def _probe(config: SuiteConfig, spec: TierSpec, golden: GoldenRows, progress: Progress) -> dict[str, LegRate]:
    """One tier: Python's decode of the row (the second after the load: the first is not its pace), then each
    replaying leg's, its sessions let go of first."""
    row: GoldenRow = golden.rows[0]
    tier = _load(config, spec)
    try:
        ids = tier.source_ids(row.input)
        tier.greedy_ids(ids)
        python = tier.greedy_ids(ids)
        precision = tier.fingerprint().precision
        try:
            described = describe(tier)
        except LegSkipped:  # a cache the other runtimes do not read: every replaying leg skips this tier
            described = None
    finally:
        release(tier)
    setup = LegSetup(
        replace(config.framing, leg_repeats=2), (), frozenset({spec.kind}), config.session.intra_op_threads, spec.path
    )
    out: dict[str, LegRate] = {}
    python_s = python.wall_s / max(len(python.tokens), 1)
    for leg in open_legs(setup, style="replay"):
        if described is None:
            out[leg.key] = LegRate(skipped=True, precision=precision)
            continue
        began = perf_counter()
        try:
            entry = {"output_ids": [list(python.tokens)], "precision": precision}
            leg.add(tier, replace(golden, rows=(row,)), entry, described, lambda: _load(config, spec), prefill_rows=0)
        finally:
            leg.close()
        wall = perf_counter() - began
        found = leg.out["tiers"][-1] if leg.out["tiers"] else {}
        if found.get("status") == "skipped":
            out[leg.key] = LegRate(skipped=True, precision=precision)
        elif found.get("timing") and python_s > 0:
            ms, tokens = found["timing"]["greedy_ms"], max(found["timing"]["tokens"], 1)
            factor = ms[-1] / 1000 / tokens / python_s
            out[leg.key] = LegRate(factor, max(wall - sum(ms) / 1000, 0.0), precision=precision)
    return out
