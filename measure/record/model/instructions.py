"""Instruction counts under callgrind (``instructions``): per tier, one count per run and the tokens those decodes
produced; written, read and viewed here (:mod:`measure.record.model.section` says how its fields are its keys)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from measure.record.model.convert import ints
from measure.record.model.section import FILED

Part = dict[str, Any]


@dataclass(frozen=True)
class InstructionTier:
    """One greedy tier's counts: callgrind Ir of the decode region, one per child process (run)."""

    tier: str = field(metadata=FILED)
    tokens: int
    """Output tokens of the counted decodes (greedy decoding makes them the same every run)."""
    instructions: tuple[int, ...]

    @cached_property
    def per_token(self) -> np.ndarray:
        """Instructions per output token, one per run (read-only): the samples ``compare --metric instructions``
        reads."""
        per_token = np.asarray(self.instructions, dtype=float) / max(1, self.tokens)
        per_token.flags.writeable = False
        return per_token

    @property
    def runs(self) -> int:
        return len(self.instructions)

    @classmethod
    def from_dict(cls, tier: str, d: Part) -> InstructionTier:
        return cls(tier, int(d["tokens"]), ints(d["instructions"]))

    def to_dict(self) -> Part:
        return {"tokens": self.tokens, "instructions": list(self.instructions)}


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

    @classmethod
    def from_dict(cls, d: Part | None) -> Instructions | None:
        """None where the run counted no instructions (most records)."""
        if not d:
            return None
        tiers = {n: InstructionTier.from_dict(n, t) for n, t in d["tiers"].items()}
        return cls(d["tool"], d["valgrind"], int(d["rows"]), int(d["runs"]), tiers)

    def to_dict(self) -> Part:
        return {
            "tool": self.tool,
            "valgrind": self.valgrind,
            "rows": self.rows,
            "runs": self.runs,
            "tiers": {n: t.to_dict() for n, t in self.tiers.items()},
        }


def instructions_part(valgrind: str, rows: int, runs: int) -> Part:
    """The callgrind counts as they start: how they are taken, no tier yet."""
    return Instructions("callgrind", valgrind, rows, runs, {}).to_dict()


def instructions_tier_part(tokens: int) -> Part:
    """One tier's counts as its first run makes them: the tokens its decodes produced, one count per run
    (appended to ``instructions`` run by run)."""
    return InstructionTier("", tokens, ()).to_dict()
