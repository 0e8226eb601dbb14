"""One tier's framing facts under one runtime leg: its parity blocks, greedy decodes, quality (the Python leg),
where another runtime's decode leaves Python's, that runtime's timed passes, and the genai loop's figures.

Each class reads (``from_dict``) and writes (``to_dict``) its part; the legs fill a tier through the builders below.
A tier that ran holds its blocks and outputs; one that did not (``skipped``, ``failed``) its reason instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.record.model.framing_blocks import Block
from measure.record.model.genai import GenaiTier
from measure.record.model.status import MEASURED, written_reason

Part = dict[str, Any]

FP32 = ("fp32", "fp16")
"""Precisions whose framing or speculative differences are bugs (the policy gates them)."""
UNKNOWN = "?"
"""The precision of a tier whose record does not say it (one that never ran may not)."""


@dataclass(frozen=True)
class Miss:
    line: int
    input: str
    expected: str
    output: str

    @classmethod
    def from_dict(cls, m: Part) -> Miss:
        return cls(int(m["line"]), m["input"], m["expected"], m["output"])

    def to_dict(self) -> Part:
        return miss(self.line, self.input, self.expected, self.output)


@dataclass(frozen=True)
class Quality:
    """The Python leg's greedy decodes against the golden rows."""

    rows: int
    exact: int
    cer_mean: float
    cer: tuple[float, ...] = ()
    """Per row (empty: a record from before it)."""
    misses: tuple[Miss, ...] | None = None
    """The rows the tier got wrong (None: a record from before they were kept)."""

    @classmethod
    def from_dict(cls, q: Part | None) -> Quality | None:
        if q is None:
            return None
        found = q.get("misses")
        misses = None if found is None else tuple(Miss.from_dict(m) for m in found)
        return cls(int(q["rows"]), int(q["exact"]), float(q["cer_mean"]), tuple(q.get("cer", ())), misses)

    def to_dict(self) -> Part:
        part: Part = {"rows": self.rows, "exact": self.exact, "cer_mean": self.cer_mean}
        part |= {"cer": list(self.cer)} if self.cer else {}
        return part | ({} if self.misses is None else {"misses": [m.to_dict() for m in self.misses]})


@dataclass(frozen=True)
class Divergence:
    """Where another runtime's greedy decode of one golden row first leaves Python onnxruntime's."""

    row: int
    """0-based index into the golden rows."""
    step: int
    """The decoder step (0: the call fed the start token); the output token's 1-based position is step + 1."""
    token: int
    """This runtime's argmax there."""
    expected: int
    """Python onnxruntime's token (eos where Python stopped)."""
    margin: float
    """This runtime's logit of ``token`` minus its logit of ``expected``."""
    line: int | None = None
    python_margin: float | None = None
    """Python onnxruntime's logit of ``expected`` minus its logit of ``token`` at the same step."""

    @classmethod
    def from_dict(cls, d: Part) -> Divergence:
        return cls(
            row=int(d["row"]),
            step=int(d["step"]),
            token=int(d["token"]),
            expected=int(d["expected"]),
            margin=d["margin"],
            line=d.get("line"),
            python_margin=d.get("python_margin"),
        )

    def to_dict(self) -> Part:
        part: Part = {
            "row": self.row,
            "step": self.step,
            "token": self.token,
            "expected": self.expected,
            "margin": self.margin,
        }
        part |= {} if self.line is None else {"line": self.line}
        return part | ({} if self.python_margin is None else {"python_margin": self.python_margin})


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

    @classmethod
    def from_dict(cls, t: Part | None) -> LegTiming | None:
        if not t:
            return None
        return cls(tuple(t["greedy_ms"]), int(t["tokens"]))

    def to_dict(self) -> Part:
        return {"greedy_ms": list(self.greedy_ms), "tokens": self.tokens}


@dataclass(frozen=True)
class FramingTier:
    """One tier's framing facts under one runtime; quality only on the Python leg."""

    tier: str
    status: str
    precision: str = UNKNOWN
    reason: str = ""
    blocks: tuple[Block, ...] = ()
    outputs: tuple[str, ...] = ()
    output_ids: tuple[tuple[int, ...], ...] | None = None
    """None in records from before the greedy decodes' token ids were kept."""
    quality: Quality | None = None
    divergence: tuple[Divergence, ...] | None = None
    """Other runtimes' legs: rows whose greedy decode leaves Python's, where and by what margin (None: a record
    from before they were kept, or the Python leg)."""
    timing: LegTiming | None = None
    """Other runtimes' legs: greedy passes timed under that runtime."""
    prefill: tuple[Block, ...] = ()
    """Decoder-only tiers: the prompt fed token by token against blocks of k and whole."""
    genai: GenaiTier | None = None
    """The onnxruntime-genai leg: its compiled loop beside measure's on this tier."""

    @property
    def measured(self) -> bool:
        return self.status == MEASURED

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

    @classmethod
    def from_dict(cls, t: Part) -> FramingTier:
        ids, found = t.get("output_ids"), t.get("divergence")
        return cls(
            tier=t["tier"],
            status=t.get("status", MEASURED),
            precision=t.get("precision", UNKNOWN),
            reason=t.get("reason", ""),
            blocks=tuple(Block.from_dict(b) for b in t.get("blocks", ())),
            outputs=tuple(t.get("outputs", ())),
            output_ids=None if ids is None else tuple(map(tuple, ids)),
            quality=Quality.from_dict(t.get("quality")),
            divergence=None if found is None else tuple(Divergence.from_dict(d) for d in found),
            timing=LegTiming.from_dict(t.get("timing")),
            prefill=tuple(Block.from_dict(b) for b in t.get("prefill", ())),
            genai=GenaiTier.from_dict(t.get("genai")),
        )

    def to_dict(self) -> Part:
        part: Part = {"tier": self.tier} | ({} if self.precision == UNKNOWN else {"precision": self.precision})
        part |= {"status": self.status} | written_reason(self.status, self.reason)
        if self.measured:
            part |= {"blocks": [b.to_dict() for b in self.blocks], "outputs": list(self.outputs)}
        optional = {
            "output_ids": None if self.output_ids is None else [list(i) for i in self.output_ids],
            "quality": self.quality.to_dict() if self.quality else None,
            "divergence": None if self.divergence is None else [d.to_dict() for d in self.divergence],
            "timing": self.timing.to_dict() if self.timing else None,
            "prefill": [b.to_dict() for b in self.prefill] or None,
            "genai": self.genai.to_dict() if self.genai else None,
        }
        return part | {k: v for k, v in optional.items() if v is not None}


# ------------------------------------------------------------------ the parts the legs fill


def miss(line: int, source: str, expected: str, output: str) -> Part:
    return {"line": line, "input": source, "expected": expected, "output": output}


def quality_part(rows: int, exact: int, cer_mean: float, cer: list[float], misses: list[Part]) -> Part:
    return {"rows": rows, "exact": exact, "cer_mean": cer_mean, "cer": cer, "misses": misses}


def python_tier(
    tier: str,
    precision: str,
    blocks: list[Part],
    quality: Part,
    outputs: list[str],
    output_ids: list[list[int]],
    prefill: list[Part] | None = None,
) -> Part:
    """One tier on the Python leg: its parity blocks, quality against the golden rows, and its greedy decodes;
    a decoder-only tier adds its prefill blocks (the prompt token by token against blocks and whole)."""
    part = {"tier": tier, "precision": precision, "status": MEASURED, "blocks": blocks}
    if prefill is not None:
        part["prefill"] = prefill
    return part | {"quality": quality, "outputs": outputs, "output_ids": output_ids}


def leg_tier(tier: str, precision: str) -> Part:
    """One tier on a later leg, before it runs (a skip or failure adds ``status`` and ``reason``)."""
    return {"tier": tier, "precision": precision}


def leg_tier_measured(
    entry: Part, blocks: list[Part], output_ids: list[list[int]], outputs: list[str], divergence: list[Part]
) -> Part:
    """A later leg's tier that ran: the runtime's parity blocks, greedy decodes and where they leave Python's."""
    return entry | {
        "status": MEASURED,
        "blocks": blocks,
        "output_ids": output_ids,
        "outputs": outputs,
        "divergence": divergence,
    }


def divergence(found: Part, line: int, python_margin: float) -> Part:
    """A row where a runtime's decode leaves Python's (as its leg reported it), with the golden line and the
    margin Python onnxruntime had there."""
    return found | {"line": line, "python_margin": python_margin}
