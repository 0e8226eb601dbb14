"""The verdict policy: the stated rules verdicts are judged by. Pure data, no runtime imports.

Kept apart from the suite config so that verdicts and the site (downstream of
measurement) read a record's policy without importing onnxruntime.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

Bound = float | dict[str, float]
"""One figure for every role, or one per role (``plain``, ``lite``, ...) with ``default`` for the rest."""

KLD_MEAN_MAX = {"plain": 0.01, "lite": 0.05, "default": 0.05}
SAME_TOP1_MIN = {"plain": 0.97, "lite": 0.93, "default": 0.93}
PPL_RATIO_MAX = {"plain": 1.02, "lite": 1.05, "default": 1.05}


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
    kld_mean_max: Bound = field(default_factory=lambda: dict(KLD_MEAN_MAX))
    """A tier is faithful to its reference when its mean KL divergence (nats per position, 95% interval) lies
    below this. The defaults follow llama.cpp's published tables: 8-bit quantizations sit near 0.001, 4-bit
    ones near 0.03."""
    same_top1_min: Bound = field(default_factory=lambda: dict(SAME_TOP1_MIN))
    """... and its share of positions picking the reference's top token lies above this (Q8_0: 99%, Q4: ~94%)."""
    ppl_ratio_max: Bound = field(default_factory=lambda: dict(PPL_RATIO_MAX))
    """... and its perplexity on the golden outputs over the reference's lies below this."""

    def bound(self, name: str, role: str) -> float:
        """One fidelity bound for a tier of ``role``: the figure, or the role's (else the default's)."""
        value: Bound = getattr(self, name)
        if isinstance(value, dict):
            defaults = {"kld_mean_max": KLD_MEAN_MAX, "same_top1_min": SAME_TOP1_MIN, "ppl_ratio_max": PPL_RATIO_MAX}
            return float(value.get(role, value.get("default", defaults[name]["default"])))
        return float(value)


def tolerance_of(policy: Policy, metric: str) -> float:
    """The band of one compare metric: the instruction count has its own, every timed metric shares one."""
    return policy.instructions_tolerance if metric == "instructions" else policy.compare_tolerance


def policy_from(data: dict[str, Any] | None) -> Policy:
    """The policy stored in a record (unknown keys ignored, so an older record still reads)."""
    names = {f.name for f in fields(Policy)}
    return Policy(**{k: v for k, v in (data or {}).items() if k in names})
