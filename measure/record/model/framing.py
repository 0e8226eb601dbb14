"""The framing section: the block sizes compared, one leg per runtime (Python onnxruntime first), speculative
acceptance, and the rows a budgeted run sampled.

Its parts live one module each, the class beside the builders a suite calls: a block's parity facts
(:mod:`~measure.record.model.framing_blocks`), a tier under one runtime (:mod:`~measure.record.model.framing_tier`),
a runtime leg (:mod:`~measure.record.model.framing_leg`), acceptance (:mod:`~measure.record.model.acceptance`) and
the genai leg's own figures (:mod:`~measure.record.model.genai`). Sums pages print are properties of the part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.record.model.acceptance import Acceptance
from measure.record.model.framing_leg import Leg
from measure.record.model.framing_tier import FramingTier

Part = dict[str, Any]


@dataclass(frozen=True)
class FramingSample:
    """The golden rows (0-based) a budgeted run's framing suite decoded, and on how many (the first) it fed the
    prompt framings."""

    rows: tuple[int, ...]
    prefill_rows: int

    @classmethod
    def from_dict(cls, s: Part | None) -> FramingSample | None:
        return None if s is None else cls(tuple(int(r) for r in s["rows"]), int(s["prefill_rows"]))

    def to_dict(self) -> Part:
        return framing_sample_part(list(self.rows), self.prefill_rows)


@dataclass(frozen=True)
class Framing:
    blocks: tuple[int | str, ...]
    legs: tuple[Leg, ...]
    acceptance: tuple[Acceptance, ...]
    sample: FramingSample | None = None
    """Where a plan sampled the rows; None: every golden row."""

    @property
    def python_tiers(self) -> tuple[FramingTier, ...]:
        """The Python onnxruntime leg's tiers: the ones that also carry quality."""
        return self.legs[0].tiers if self.legs else ()

    @classmethod
    def from_dict(cls, fr: Part | None) -> Framing | None:
        """The blocks, each runtime's leg with its tiers, and the acceptance facts (None: no framing suite ran)."""
        if not fr:
            return None
        return cls(
            tuple(fr.get("blocks", ())),
            tuple(Leg.from_dict(leg) for leg in fr.get("legs", ())),
            tuple(Acceptance.from_dict(a) for a in fr.get("acceptance", ())),
            FramingSample.from_dict(fr.get("sample")),
        )

    def to_dict(self) -> Part:
        part: Part = {
            "blocks": list(self.blocks),
            "legs": [leg.to_dict() for leg in self.legs],
            "acceptance": [a.to_dict() for a in self.acceptance],
        }
        return part | ({"sample": self.sample.to_dict()} if self.sample else {})


def framing_part(blocks: list[int | str], python: Part) -> Part:
    """The framing section as it starts: the block sizes compared, the Python leg first, no acceptance yet."""
    return {"blocks": blocks, "legs": [python], "acceptance": []}


def framing_sample_part(rows: list[int], prefill_rows: int) -> Part:
    """The framing suite's rows where a plan sampled them (0-based), and how many of them the prompt framings ran
    on (the first ones): stated in the framing section beside what they measured."""
    return {"rows": rows, "prefill_rows": prefill_rows}
