"""Instruction counts under callgrind: per tier, one count per run and the tokens those decodes produced."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class InstructionTier:
    """One greedy tier's counts: callgrind Ir of the decode region, one per child process (run)."""

    tier: str
    tokens: int
    """Output tokens of the counted decodes (greedy decoding makes them the same every run)."""
    instructions: tuple[int, ...]
    per_token: np.ndarray
    """Instructions per output token, one per run (read-only): the samples ``compare --metric instructions`` reads."""

    @property
    def runs(self) -> int:
        return len(self.instructions)


@dataclass(frozen=True)
class Instructions:
    """The record's instruction counts: a proxy for one tier's regressions over time, never for comparing tiers.

    valgrind emulates a CPU without the wider SIMD paths onnxruntime picks natively, so the kernels counted
    are not the ones a native run executes; a count is comparable only with the same tier's, on the same
    machine, onnxruntime build and ``rows``.
    """

    tool: str
    valgrind: str
    rows: int
    """The first N golden rows each run decodes."""
    runs: int
    """Runs per tier asked for (a complete record has this many counts per tier)."""
    tiers: dict[str, InstructionTier]

    def key(self) -> tuple[str, str, int]:
        """What two records' counts must share to be compared: the tool, its version, the rows counted."""
        return (self.tool, self.valgrind, self.rows)


def instruction_tier(name: str, tokens: int, counts: tuple[int, ...]) -> InstructionTier:
    per_token = np.asarray(counts, dtype=float) / max(1, tokens)
    per_token.flags.writeable = False
    return InstructionTier(name, tokens, counts, per_token)
