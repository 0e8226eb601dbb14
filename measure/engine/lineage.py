"""Which full-precision tier a quantized one was made from, told by the graphs when nobody wrote it down.

onnxruntime's quantizers keep each weight's name and add a suffix to what they write for it
(``_quantized`` / ``_scale`` / ``_zero_point`` for dynamic int8, ``_Q4`` / ``_scales`` / ``_zp`` for
MatMulNBits); optimum names a weight after the node it feeds (``onnx::MatMul_732``), so two exports of two
models rarely share those names, and two exports of one model share all of them. A tier's source is then the
full-precision tier of the same kind whose weight names it holds, the graph files' names breaking a tie (the
vocabulary is checked where the two are judged, :func:`~measure.engine.speculative.mismatch`). Graphs are read
without their weights (:func:`~measure.engine.skeleton.load_skeleton`): no session is made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from measure.engine.fingerprint import graph_fingerprint, tier_precision
from measure.engine.kind import detect_kind
from measure.engine.skeleton import load_skeleton
from measure.errors import MeasureError

SUFFIX = re.compile(r"_(?:quantized|scale|scales|zero_point|zero_points|zp|Q4|Q8|Q\d+G\d+|DequantizeLinear.*)$")
"""What a quantizer appends to the name of the weight it rewrote."""
COVER = 0.9
"""The share of a source's weight names a quantized tier must hold."""
FULL = ("fp32", "fp16")


@dataclass(frozen=True)
class Lineage:
    """What a folder's graphs say of it: its kind, precision, graph files and its weights' base names."""

    folder: Path
    kind: str
    layout: frozenset[str]
    precision: str
    names: frozenset[str]

    @property
    def full(self) -> bool:
        return self.precision in FULL


def lineage(folder: Path) -> Lineage:
    """Every graph file of ``folder``: each initializer's name with the quantizer's suffix dropped, the precision
    as a fingerprint states it. No session is made."""
    graphs = sorted(p for p in Path(folder).glob("*.onnx") if p.is_file())
    if not graphs:
        raise MeasureError(f"{folder}: no .onnx graph in this folder; expected a tier folder")
    names: set[str] = set()
    for graph in graphs:
        try:
            names.update(SUFFIX.sub("", t.name) for t in load_skeleton(graph).graph.initializer)
        except Exception as exc:  # protobuf's DecodeError and ValueError: a file that is not a graph
            raise MeasureError(f"{graph}: not a readable ONNX model ({exc})") from exc
    precision = tier_precision(tuple(graph_fingerprint(g) for g in graphs))
    return Lineage(Path(folder), detect_kind(folder), frozenset(g.name for g in graphs), precision, frozenset(names))


def cover(tier: Lineage, source: Lineage) -> float:
    """The share of ``source``'s weight names that ``tier`` holds too (a quantized tier keeps every weight of its
    source under its name or a suffixed one; a static one adds its activations' scales, which do not count)."""
    return len(tier.names & source.names) / len(source.names) if source.names else 0.0


@dataclass(frozen=True)
class Found:
    """A quantized tier's source among candidates: ``name`` (None where none or several fit) and why."""

    name: str | None
    why: str


def find_source(tier: Lineage, candidates: dict[str, Lineage]) -> Found:
    """The full-precision candidate of ``tier``'s kind whose weight names ``tier`` holds (at least :data:`COVER`),
    the best cover first, then the same graph files; several equal ones are ambiguous."""
    if tier.full:
        return Found(None, f"{tier.folder.name} is {tier.precision}: it is a reference itself")
    fits = {
        name: cover(tier, c)
        for name, c in candidates.items()
        if c.full and c.kind == tier.kind and c.folder.resolve() != tier.folder.resolve()
    }
    fits = {name: share for name, share in fits.items() if share >= COVER}
    if not fits:
        return Found(None, "no full-precision tier of its kind holds its weights")
    best = max(fits.values())
    top = [n for n, share in fits.items() if share == best]
    if len(top) > 1:
        same = [n for n in top if candidates[n].layout == tier.layout]
        top = same if same else top
    if len(top) > 1:
        return Found(None, f"its weights are in {' and '.join(sorted(top))} alike: name its reference")
    return Found(top[0], f"its graphs hold {best:.0%} of {top[0]}'s weight names")
