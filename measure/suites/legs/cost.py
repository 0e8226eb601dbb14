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
