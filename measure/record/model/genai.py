"""The onnxruntime-genai leg's own facts: its compiled loop beside measure's, and its speculative decoding."""

from __future__ import annotations

from dataclasses import dataclass

from measure.record.model.framing import Counts


@dataclass(frozen=True)
class Spread:
    """One figure per repeat and their median (None where no repeat had a step to time)."""

    median: float | None
    samples: tuple[float, ...]

    @property
    def lo(self) -> float | None:
        return min(self.samples) if self.samples else None

    @property
    def hi(self) -> float | None:
        return max(self.samples) if self.samples else None


@dataclass(frozen=True)
class GenaiTier:
    """One decoder-only tier under og's generate loop and measure's, paired repeat by repeat on the same rows."""

    config: str
    """"folder" (the genai folder's own genai_config.json) or "generated" (written for an optimum export)."""
    share_buffer: bool
    """og's cache mode: one buffer of max_length shared by past and present, or grown each step."""
    equal_rows: int
    logits_max_abs_diff: float
    steps: int
    measure_steps: int
    ms_per_step: Spread
    measure_ms_per_step: Spread
    measure_over_og: Spread
    """measure's ms per decode step over og's, per repeat: the overhead of measure's loop over a compiled one."""


@dataclass(frozen=True)
class GenaiPair:
    """og's draft-model speculative decoding of one decoder-only pair, beside measure's at the same k."""

    drafter: str
    verifier: str
    k: int
    status: str
    reason: str
    rows: int
    acceptance: Counts
    speedup: float | None
    equal_greedy_rows: int
    measure_acceptance: Counts
    measure_speedup: float | None
    measure_equal_greedy_rows: int

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"

    @property
    def measured(self) -> bool:
        return self.status == "measured"
