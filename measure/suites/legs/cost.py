"""What a leg costs the planner: data only, so the planner (:mod:`measure.suites.plan_costs`) reads every leg's
cost without importing a leg, the engine or the config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class LegCost:
    """What a leg costs the planner, in the terms of the warm-up's Python timings (:mod:`measure.suites.plan_costs`).

    ``replay``: the leg replays every framing block of the Python leg's decodes and times ``leg_repeats`` greedy
    passes, ``factor`` times slower than Python onnxruntime, plus ``start_s`` per tier (a process, a browser).
    ``loop``: the leg decodes each row under its own loop beside measure's, ``repeats_min`` paired passes at
    least, and also decodes the speculative pairs (``pairs``)."""

    key: str
    kinds: frozenset[str]
    style: Literal["replay", "loop"]
    factor: float = 1.0
    start_s: float = 0.0
    repeats_min: int = 1
    pairs: bool = False


@dataclass(frozen=True)
class LegRate:
    """What a replaying leg measured on one tier in the planning warm-up (:mod:`measure.suites.legs.probe`): its
    greedy decode ``factor`` times Python onnxruntime's on the same row and tokens, and ``start_s`` to start and
    load the tier there; ``skipped``: the leg does not decode this tier (the planner counts nothing for it).

    A leg's factor depends on the tier's precision, not only on the leg: onnxruntime-web's wasm kernels decoded a
    135M model's int4 tier 13x slower than Python's and its int8 one about 3x, so one stated factor per leg either
    overruns a budget or wastes it."""

    factor: float = 1.0
    start_s: float = 0.0
    skipped: bool = False
    precision: str = ""
    """The precision measured (tiers of one kind and precision share the figure of the smallest of them)."""
