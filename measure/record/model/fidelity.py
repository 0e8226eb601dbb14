"""The fidelity pass as the record stores it: per row, how far each quantized tier's next-token distribution lies
from its full-precision reference's, teacher-forced on the same token streams.

Two streams per row: the reference's own greedy continuation (plus end-of-sequence: what the tier would be asked
to reproduce) and the golden row's expected output (absolute quality). Per row the sums a bootstrap over rows
needs; per tier the KL divergence's distribution over every position as exact order statistics at
:data:`QUANTILES` and a histogram of log10 KLD (:data:`HIST_PER_DECADE` bins a decade from 10^:data:`HIST_LOW`;
bin 0 holds what lies below, zeros apart). What they add up to is :mod:`measure.analysis.fidelity`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

QUANTILES = (0.5, 0.9, 0.95, 0.99, 0.999, 1.0)
"""The KLD quantiles every tier's and pair's record keeps (numpy's linear interpolation): median, p90, p95, p99,
p99.9 and the maximum, as llama.cpp's ``--kl-divergence`` prints them."""
HIST_PER_DECADE = 4
HIST_LOW = -12
"""log10 of the histogram's lowest edge (bin 0 also holds every positive KLD below it)."""


@dataclass(frozen=True)
class FidelityReference:
    """A full-precision tier other tiers are judged against: its streams' positions and its own NLL."""

    name: str
    path: str
    precision: str
    in_run: bool
    """A tier of the run itself (its fingerprint is in ``tiers``), or loaded for this pass only."""
    sha256: str
    """Over its files' names and sha256, so two records can tell whether they judged against the same artifact."""
    greedy_positions: tuple[int, ...]
    """Per golden row: positions scored on its own greedy path (its tokens and end-of-sequence)."""
    golden_positions: tuple[int, ...]
    """Per golden row: positions scored on the expected output (its tokens and end-of-sequence)."""
    golden_nll: np.ndarray
    """Per golden row: -log p of the expected output's tokens (and end-of-sequence) under the reference."""


@dataclass(frozen=True)
class PathFidelity:
    """One tier (or drafter) against its reference (or verifier) on a stream: per-row sums and the distribution."""

    kld: np.ndarray
    """Per row: the sum over its positions of KL(P_ref || P_tier), nats."""
    same_top1: tuple[int, ...]
    """Per row: positions where both pick the same top token."""
    top5: int
    """Over every position: the reference's five likeliest tokens found among the tier's five, summed."""
    dp: float
    dp_sq: float
    """Over every position: sum of p_tier - p_ref of the reference's top token, and of its square."""
    quantiles: tuple[float, ...]
    """KLD at :data:`QUANTILES` over every position (empty: no position)."""
    zeros: int
    """Positions whose KLD is exactly 0 (identical distributions)."""
    hist: tuple[tuple[int, int], ...]
    """(bin, count) of the positive KLDs' log10 histogram, bins with a count only."""


@dataclass(frozen=True)
class TierFidelity:
    tier: str
    reference: str
    source: str
    """How the reference was found: ``config`` (the tier's ``reference`` key), ``quantization.from`` (tier.json) or
    ``graph`` (the run's full-precision tier whose weights the tier's graphs hold)."""
    greedy: PathFidelity
    """On the reference's greedy path."""
    golden_kld: float
    golden_same_top1: int
    golden_nll: np.ndarray
    """Per golden row: -log p of the expected output under this tier (the reference's is on its FidelityReference)."""


@dataclass(frozen=True)
class PairFidelity:
    """A speculative pair's drafter against its verifier, on the verifier's greedy path."""

    drafter: str
    verifier: str
    positions: tuple[int, ...]
    greedy: PathFidelity


@dataclass(frozen=True)
class Fidelity:
    references: dict[str, FidelityReference]
    tiers: tuple[TierFidelity, ...]
    pairs: tuple[PairFidelity, ...]
    unjudged: tuple[tuple[str, str], ...] = ()
    """(tier, why) for each quantized tier the run found no reference for."""

    def tier(self, name: str) -> TierFidelity | None:
        return next((t for t in self.tiers if t.tier == name), None)
