"""What speculative decoding should gain on this machine, from costs measured here, beside Leviathan's prediction.

Leviathan et al. (2023) predict the speedup from the acceptance rate a, the
draft length k and the cost ratio c = drafter call / verifier call, assuming a
verifier call of k + 1 tokens costs what a single-step call costs and the
drafter makes k calls per round. On a CPU neither needs to hold, so this model
takes the measured costs instead:

    speedup = E(a, k) * single_s / (draft_calls_per_round * draft_s + batched_s)

with E(a, k) = (1 - a^(k+1)) / (1 - a) tokens per round (k + 1 when a = 1), or the
tokens per round a decode really committed when that is given (short rows end in
rounds cut by the length cap or eos, which E does not know). With
``batched_s == single_s``, k drafter calls and E tokens per round it is exactly
Leviathan's figure. The *efficiency* of a pair is observed speedup / this prediction: how much
of what the measured calls allow the decode loop delivers.

Pure Python: plain floats in, frozen dataclasses out; no onnxruntime.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from measure.analysis.stats import predicted_speedup
from measure.errors import MeasureError


def expected_tokens_per_round(acceptance: float, k: int) -> float:
    """Leviathan et al.'s expected tokens per round, the verifier's own token included."""
    a = min(max(acceptance, 0.0), 1.0)
    return k + 1.0 if a == 1.0 else (1 - a ** (k + 1)) / (1 - a)


@dataclass(frozen=True)
class CallCostInputs:
    """Seconds per onnxruntime call, each measured on its own."""

    single_s: float
    """One single-step verifier call (one token on top of the cache)."""
    batched_s: float
    """One verifier call of n = k + 1 tokens (the last committed token and k drafts)."""
    draft_s: float
    """One single-step drafter call."""

    def __post_init__(self) -> None:
        for name in ("single_s", "batched_s", "draft_s"):
            if not getattr(self, name) > 0:
                raise MeasureError(f"call cost {name}: expected seconds > 0, got {getattr(self, name)!r}")

    @property
    def cost_ratio(self) -> float:
        """Leviathan's c: a drafter call over a single-step verifier call."""
        return self.draft_s / self.single_s

    @property
    def batch_ratio(self) -> float:
        """A verifier call of k + 1 tokens over a single-step one; Leviathan's prediction assumes 1."""
        return self.batched_s / self.single_s


@dataclass(frozen=True)
class SpeculativePrediction:
    """One pair at one k: both predictions and, when an observed speedup is given, the efficiency."""

    k: int
    acceptance: float
    expected_tokens: float
    """Tokens per round, E(a, k)."""
    tokens_per_round: float
    """Tokens per round the measured-cost prediction uses: observed when given, else E."""
    cost_ratio: float
    batch_ratio: float
    draft_calls_per_round: float
    leviathan: float
    """Predicted speedup, Leviathan et al.: E / (k c + 1)."""
    measured_cost: float
    """Predicted speedup from the measured call costs: tokens per round x single / (m draft + batched)."""
    observed: float | None = None
    efficiency: float | None = None
    """observed / measured_cost; None without an observed speedup."""


def predict(
    k: int,
    acceptance: float,
    costs: CallCostInputs,
    *,
    draft_calls_per_round: float | None = None,
    tokens_per_round: float | None = None,
    observed: float | None = None,
) -> SpeculativePrediction:
    """Both predicted speedups for draft length ``k``.

    ``draft_calls_per_round`` defaults to k and ``tokens_per_round`` to E(a, k), Leviathan's
    assumptions; pass the measured ones to predict from what the decode really did.
    """
    if k < 1:
        raise MeasureError(f"speculative k: expected at least 1, got {k}")
    if not 0.0 <= acceptance <= 1.0:
        raise MeasureError(f"acceptance: expected a rate in [0, 1], got {acceptance!r}")
    m = float(k if draft_calls_per_round is None else draft_calls_per_round)
    e = expected_tokens_per_round(acceptance, k)
    tokens = e if tokens_per_round is None else float(tokens_per_round)
    if not 1.0 <= tokens <= k + 1:
        raise MeasureError(f"tokens per round: expected between 1 and k + 1 = {k + 1}, got {tokens_per_round!r}")
    leviathan = predicted_speedup(acceptance, k, costs.cost_ratio)
    measured = tokens * costs.single_s / (m * costs.draft_s + costs.batched_s)
    return SpeculativePrediction(
        k=k,
        acceptance=acceptance,
        expected_tokens=e,
        tokens_per_round=tokens,
        cost_ratio=costs.cost_ratio,
        batch_ratio=costs.batch_ratio,
        draft_calls_per_round=m,
        leviathan=leviathan,
        measured_cost=measured,
        observed=observed,
        efficiency=None if observed is None else observed / measured,
    )


@dataclass(frozen=True)
class BatchCostLine:
    """A verifier call's cost against the tokens it takes: ``fixed_s + per_token_s * n``, least squares."""

    fixed_s: float
    per_token_s: float

    def at(self, n: int) -> float:
        return self.fixed_s + self.per_token_s * n

    def ratio(self, n: int) -> float:
        """A call of n tokens over a single-step call, on the line."""
        return self.at(n) / self.at(1)


def fit_batch_cost(tokens: Sequence[int], seconds: Sequence[float]) -> BatchCostLine:
    """Fit the line through measured (tokens per call, seconds per call) points; needs two distinct n."""
    if len(tokens) != len(seconds) or len(set(tokens)) < 2:
        raise MeasureError("batch cost fit: expected paired points at two or more distinct token counts")
    n = len(tokens)
    mx, my = sum(tokens) / n, sum(seconds) / n
    sxx = sum((x - mx) ** 2 for x in tokens)
    sxy = sum((x - mx) * (y - my) for x, y in zip(tokens, seconds, strict=True))
    slope = sxy / sxx
    return BatchCostLine(fixed_s=my - slope * mx, per_token_s=slope)
