"""A speculative pair of either model kind, chosen by its verifier: the one place suites and verbs build pairs."""

from __future__ import annotations

from measure.engine.artifacts import Tier
from measure.engine.causal import CausalTier
from measure.engine.causal_speculative import CausalSpeculativePair
from measure.engine.speculative import SpeculativePair


def open_pair(drafter: Tier | CausalTier, verifier: Tier | CausalTier) -> SpeculativePair | CausalSpeculativePair:
    """Two encoder-decoder tiers or two decoder-only ones sharing a vocabulary; anything else is a one-line error
    (the pair's constructor checks that the drafter is of the verifier's kind)."""
    kind = CausalSpeculativePair if isinstance(verifier, CausalTier) else SpeculativePair
    return kind(drafter, verifier)
