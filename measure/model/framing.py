"""Framing facts per runtime leg and tier, and acceptance; the sums pages print are properties here."""

from __future__ import annotations

from dataclasses import dataclass

FP32 = ("fp32", "fp16")
"""Precisions whose framing or speculative differences are bugs (the policy gates them)."""


@dataclass(frozen=True)
class LayerDiff:
    layer: int
    key_mean_abs_diff: float
    value_mean_abs_diff: float
    key_max_abs_diff: float
    value_max_abs_diff: float


@dataclass(frozen=True)
class Block:
    """One batched block size replayed on top of single-step prefixes."""

    block: int | str
    """k, or "whole"."""
    present_max_abs_diff: float
    logits_max_abs_diff: float
    argmax_agree: int
    argmax_total: int
    first_divergent_step: tuple[int | None, ...]
    """Per golden row: the first step whose argmax the block changes, or None."""
    layers: tuple[LayerDiff, ...]


@dataclass(frozen=True)
class Miss:
    line: int
    input: str
    expected: str
    output: str


@dataclass(frozen=True)
class Quality:
    rows: int
    exact: int
    cer_mean: float
    misses: tuple[Miss, ...]


@dataclass(frozen=True)
class FramingTier:
    """One tier's framing facts under one runtime; quality only on the Python leg."""

    tier: str
    precision: str
    status: str
    reason: str
    blocks: tuple[Block, ...]
    outputs: tuple[str, ...]
    output_ids: tuple[tuple[int, ...], ...] | None
    quality: Quality | None

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def fp32(self) -> bool:
        return self.precision in FP32

    @property
    def argmax_agree(self) -> int:
        return sum(b.argmax_agree for b in self.blocks)

    @property
    def argmax_total(self) -> int:
        return sum(b.argmax_total for b in self.blocks)

    @property
    def present_max_abs_diff(self) -> float:
        return max((b.present_max_abs_diff for b in self.blocks), default=0.0)

    @property
    def logits_max_abs_diff(self) -> float:
        return max((b.logits_max_abs_diff for b in self.blocks), default=0.0)

    @property
    def rows(self) -> int:
        return len(self.blocks[0].first_divergent_step) if self.blocks else len(self.outputs)

    @property
    def rows_same(self) -> int:
        """Rows where no batched block changes any argmax of the single-step decode."""
        if not self.blocks:
            return len(self.outputs)
        per_row = zip(*(b.first_divergent_step for b in self.blocks), strict=True)
        return sum(all(step is None for step in row) for row in per_row)


@dataclass(frozen=True)
class Leg:
    """One runtime that decoded the tiers; the first leg is always Python onnxruntime."""

    runtime: str
    language: str
    version: str | None
    host: str | None
    status: str
    reason: str
    tiers: tuple[FramingTier, ...]

    @property
    def name(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"{self.runtime}{version} ({self.language})"

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    def tier(self, name: str) -> FramingTier | None:
        return next((t for t in self.tiers if t.tier == name), None)


@dataclass(frozen=True)
class Counts:
    accepted: int
    proposed: int

    @property
    def ratio(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None


@dataclass(frozen=True)
class Differing:
    line: int
    input: str
    speculative: str
    greedy: str


@dataclass(frozen=True)
class Acceptance:
    """A drafter/verifier pair at the probe k: acceptance three ways and output preservation."""

    drafter: str
    verifier: str
    self_pair: bool
    k: int
    probe: Counts
    runtime: Counts
    rows: int
    preserved: int
    differing: tuple[Differing, ...]

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"


@dataclass(frozen=True)
class Framing:
    blocks: tuple[int | str, ...]
    legs: tuple[Leg, ...]
    acceptance: tuple[Acceptance, ...]

    @property
    def python_tiers(self) -> tuple[FramingTier, ...]:
        """The Python onnxruntime leg's tiers: the ones that also carry quality."""
        return self.legs[0].tiers if self.legs else ()
