"""The verdict policy: the stated rules verdicts are judged by. Pure data, no runtime imports.

Kept apart from the suite config so that verdicts and the site (downstream of
measurement) read a record's policy without importing onnxruntime.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Policy:
    """The stated rules verdicts are computed with; changing one never needs a re-run."""

    exponent_max: float = 1.15
    """Decoding is O(T) when the fitted exponent's upper bound is at most this."""
    overhead_max: float = 0.10
    """Harness overhead (wall time outside session.run) at most this share."""
    framing_tolerance: float = 1e-4
    """Largest present/logit difference that still counts as 'framing does not change the decode'."""
    speedup_min: float = 1.0
    """Speculative counts as faster when the lower bound of its speedup over plain exceeds this."""
    compare_tolerance: float = 0.05
    """compare: a ratio within 1 +/- this is 'same'; an A/A calibration may only widen it."""
    compare_alpha: float = 0.05
    """compare: chance of any false faster/slower call among all metrics compared (Holm-corrected)."""
    instructions_tolerance: float = 0.02
    """compare --metric instructions: a ratio of instructions per token within 1 +/- this is 'same'.

    Most separate runs of one build agree to 0.01%, but an odd run lands up to about 1% away: 2% keeps such a
    run inside the band and a 3% slowdown of one tier past it (with three runs a record, a 3% slowdown is
    called in 96-100% of simulated pairs: ``benchmarks/bench_compare.py instructions``)."""
    lite_ratio_max: float = 1.0
    """The lite tier is smaller / lighter / faster to load when its ratio to plain (95% interval) is below this."""


def tolerance_of(policy: Policy, metric: str) -> float:
    """The band of one compare metric: the instruction count has its own, every timed metric shares one."""
    return policy.instructions_tolerance if metric == "instructions" else policy.compare_tolerance


def policy_from(data: dict[str, Any] | None) -> Policy:
    """The policy stored in a record (unknown keys ignored, so an older record still reads)."""
    names = {f.name for f in fields(Policy)}
    return Policy(**{k: v for k, v in (data or {}).items() if k in names})
