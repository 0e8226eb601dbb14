"""The framing parity facts of one block size: batched against single-step decodes, per layer and over the logits.

The Python leg's ``blocks`` and ``prefill`` (the prompt framings), and every later leg's ``blocks``, hold these; each
class reads (``from_dict``) and writes (``to_dict``) its part, beside the builders the Python leg fills.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Part = dict[str, Any]
"""Figures are kept as stored, not cast: another runtime's leg writes an exact 0 as ``0``, and a record read and
written back is the record it was."""


@dataclass(frozen=True)
class LayerDiff:
    """One layer's |single - batched| of present keys and values, and their mean magnitude."""

    layer: int
    key_mean_abs_diff: float
    key_max_abs_diff: float
    value_mean_abs_diff: float
    value_max_abs_diff: float
    key_mean_abs: float
    value_mean_abs: float

    @classmethod
    def from_dict(cls, x: Part) -> LayerDiff:
        get = x.get  # a record holds hundreds of these: each read spelled out, not looped over
        return cls(
            int(x["layer"]),
            get("key_mean_abs_diff", 0.0),
            get("key_max_abs_diff", 0.0),
            get("value_mean_abs_diff", 0.0),
            get("value_max_abs_diff", 0.0),
            get("key_mean_abs", 0.0),
            get("value_mean_abs", 0.0),
        )

    def to_dict(self) -> Part:
        return layer_facts(
            self.layer,
            self.key_mean_abs_diff,
            self.key_max_abs_diff,
            self.value_mean_abs_diff,
            self.value_max_abs_diff,
            self.key_mean_abs,
            self.value_mean_abs,
        )


@dataclass(frozen=True)
class Block:
    """One batched block size replayed on top of single-step prefixes."""

    block: int | str
    """k, or "whole"."""
    layers: tuple[LayerDiff, ...]
    present_max_abs_diff: float
    logits_max_abs_diff: float
    argmax_agree: int
    argmax_total: int
    first_divergent_step: tuple[int | None, ...]
    """Per golden row: the first step whose argmax the block changes, or None."""

    @classmethod
    def from_dict(cls, b: Part) -> Block:
        return cls(
            block=b["block"],
            layers=tuple(LayerDiff.from_dict(x) for x in b.get("layers", ())),
            present_max_abs_diff=b["present_max_abs_diff"],
            logits_max_abs_diff=b["logits_max_abs_diff"],
            argmax_agree=int(b["argmax_agree"]),
            argmax_total=int(b["argmax_total"]),
            first_divergent_step=tuple(b["first_divergent_step"]),
        )

    def to_dict(self) -> Part:
        return block_facts(
            self.block,
            [x.to_dict() for x in self.layers],
            self.present_max_abs_diff,
            self.logits_max_abs_diff,
            self.argmax_agree,
            self.argmax_total,
            list(self.first_divergent_step),
        )


def layer_facts(
    layer: int, key_mean: float, key_max: float, value_mean: float, value_max: float, key_abs: float, value_abs: float
) -> Part:
    """One layer's |single - batched| of present keys and values (mean and max) and their mean magnitude."""
    return {
        "layer": layer,
        "key_mean_abs_diff": key_mean,
        "key_max_abs_diff": key_max,
        "value_mean_abs_diff": value_mean,
        "value_max_abs_diff": value_max,
        "key_mean_abs": key_abs,
        "value_mean_abs": value_abs,
    }


def block_facts(
    block: int | str,
    layers: list[Part],
    present_max: float,
    logits_max: float,
    agree: int,
    total: int,
    first_divergent: list[int | None],
) -> Part:
    """One block size's comparison over the golden rows (``first_divergent``: one step or None per row)."""
    return {
        "block": block,
        "layers": layers,
        "present_max_abs_diff": present_max,
        "logits_max_abs_diff": logits_max,
        "argmax_agree": agree,
        "argmax_total": total,
        "first_divergent_step": first_divergent,
    }
