"""Framing facts per runtime leg and tier, and acceptance; the sums pages print are properties here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from measure.record.model.genai import GenaiPair, GenaiTier

Part = dict[str, Any]

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
class Divergence:
    """Where another runtime's greedy decode of one golden row first leaves Python onnxruntime's."""

    row: int
    """0-based index into the golden rows."""
    line: int | None
    step: int
    """The decoder step (0: the call fed the start token); the output token's 1-based position is step + 1."""
    token: int
    """This runtime's argmax there."""
    expected: int
    """Python onnxruntime's token (eos where Python stopped)."""
    margin: float
    """This runtime's logit of ``token`` minus its logit of ``expected``."""
    python_margin: float | None
    """Python onnxruntime's logit of ``expected`` minus its logit of ``token`` at the same step."""


@dataclass(frozen=True)
class LegTiming:
    """Greedy passes over every golden row under one runtime, the first being the one that recorded the decodes."""

    greedy_ms: tuple[float, ...]
    tokens: int
    """Output tokens of one pass."""

    @property
    def timed_ms(self) -> tuple[float, ...]:
        """The passes a figure is taken from: all but the first (its calls warm the runtime up), if there are more."""
        return self.greedy_ms[1:] or self.greedy_ms

    @property
    def ms_per_token(self) -> tuple[float, ...]:
        return tuple(ms / max(1, self.tokens) for ms in self.timed_ms)


@dataclass(frozen=True)
class Adapter:
    """The WebGPU adapter a page ran on, as ``navigator.gpu.requestAdapter()`` described it."""

    vendor: str
    architecture: str
    device: str
    description: str
    fallback: bool
    software: bool
    """It renders on the CPU (SwiftShader and the like): its numerics are WebGPU's kernels, its timings mean nothing."""

    @property
    def name(self) -> str:
        said = " ".join(w for w in (self.vendor, self.architecture, self.device or self.description) if w)
        return said or "an unnamed adapter"

    @property
    def note(self) -> str:
        """What the pages and ``show`` say of it."""
        kind = SOFTWARE_ADAPTER if self.software else "hardware adapter"
        return f"{self.name} ({kind})"


SOFTWARE_ADAPTER = "software adapter: numerics only, no timing"
"""The words for a leg on a software WebGPU adapter, wherever its speed would be shown."""


@dataclass(frozen=True)
class Execution:
    """How a runtime ran, as the browser page found it: provider, threads, isolation, SIMD, the WebGPU adapter."""

    provider: str
    threads: int
    threads_requested: int | None
    cross_origin_isolated: bool
    simd: bool
    hardware_concurrency: int | None
    adapter: Adapter | None = None


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
    divergence: tuple[Divergence, ...] = ()
    """Other runtimes' legs: rows whose greedy decode leaves Python's, where and by what margin."""
    timing: LegTiming | None = None
    """Other runtimes' legs: greedy passes timed under that runtime."""
    prefill: tuple[Block, ...] = ()
    """Decoder-only tiers on the Python leg: the prompt fed token by token against blocks of k and whole."""
    genai: GenaiTier | None = None
    """The onnxruntime-genai leg: its compiled loop beside measure's on this tier."""

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
    execution: Execution | None = None
    """The browser leg: execution provider, threads, cross-origin isolation, SIMD."""
    speculative: tuple[GenaiPair, ...] = ()
    """The onnxruntime-genai leg: its draft-model speculative decoding per decoder-only pair."""
    provider: str | None = None
    """What sets this leg apart from another of its runtime (``webgpu``: onnxruntime-web's WebGPU leg)."""

    @property
    def browser(self) -> bool:
        """The leg ran in a browser page (onnxruntime-web)."""
        return self.language == "browser"

    @property
    def name(self) -> str:
        version = f" {self.version}" if self.version else ""
        provider = f", {self.provider}" if self.provider else ""
        return f"{self.runtime}{version} ({self.language}{provider})"

    @property
    def software_adapter(self) -> bool:
        """It ran on a software WebGPU adapter: numerics only, no timing."""
        adapter = self.execution.adapter if self.execution else None
        return adapter is not None and adapter.software

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


def framing_sample_part(rows: list[int], prefill_rows: int) -> Part:
    """The framing suite's rows where a plan sampled them (0-based), and how many of them the prompt framings ran
    on (the first ones): stated in the framing section beside what they measured."""
    return {"rows": rows, "prefill_rows": prefill_rows}
