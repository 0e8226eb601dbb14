"""A speculative pair of either model kind, chosen by its tiers: the one place suites and verbs build pairs."""

from __future__ import annotations

from measure.engine.artifacts import Tier
from measure.engine.causal import CausalTier
from measure.engine.causal_speculative import CausalSpeculativePair
from measure.engine.speculative import SpeculativePair, refuse_pair


def open_pair(drafter: Tier | CausalTier, verifier: Tier | CausalTier) -> SpeculativePair | CausalSpeculativePair:
    """Two encoder-decoder tiers or two decoder-only ones sharing a vocabulary; anything else is a one-line error."""
    refuse_pair(drafter, verifier, verifier.kind)
    if isinstance(verifier, CausalTier):
        return CausalSpeculativePair(drafter, verifier)  # type: ignore[arg-type]
    return SpeculativePair(drafter, verifier)  # type: ignore[arg-type]
