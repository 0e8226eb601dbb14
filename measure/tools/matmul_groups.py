"""A graph's weight MatMuls sorted into groups (attention projections, MLP, LM head) and layers, by their names.

A recipe keeps groups of MatMuls in full precision ("the LM head", "layer 3", "the last two layers"), and the error
of a quantized tier is located group by group, so both need one answer to "which group is this MatMul in?". The
answer is read from node names (then weight names) as exporters write them: optimum's decoder-only exports
(``/model/layers.3/self_attn/q_proj/MatMul``, ``/model/layers.3/mlp/down_proj/MatMul``, ``/lm_head/MatMul``), GPT-2's
(``/transformer/h.0/attn/c_attn/MatMul``), T5's (``/encoder/block.0/layer.0/SelfAttention/q/MatMul``), BART's
(``/model/decoder/layers.0/encoder_attn/k_proj/MatMul``, ``fc1``) and the demo's seq2seq graphs
(``/enc.0/q/MatMul``, ``/dec.1/ff/ff.0/MatMul``, ``/head/MatMul``; its cross-attention keys ``/k_1/MatMul`` carry no
layer index). Only a MatMul whose second input is a stored weight counts: the quantizers leave the others (attention
scores, rotary tables) alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from measure.errors import MeasureError

if TYPE_CHECKING:
    import onnx

GROUPS = ("attention", "mlp", "lm_head", "other")
"""Every group a weight MatMul falls in; ``other`` for a name none of the patterns knows."""

_LAYER = re.compile(r"(?:^|[/.])(?:block|blocks|layers|layer|h|enc|dec)\.(\d+)(?=[/.]|$)")
"""A transformer block's index: T5's ``block.N`` is tried first (its ``layer.N`` is a sub-layer), then the rest."""
_BLOCK = re.compile(r"(?:^|[/.])(?:block|blocks)\.(\d+)(?=[/.]|$)")

_ATTENTION_BLOCKS = {
    "self_attn",
    "attn",
    "attention",
    "encoder_attn",
    "cross_attn",
    "crossattention",
    "selfattention",
    "encdecattention",
}
_MLP_BLOCKS = {"mlp", "ff", "ffn", "feed_forward", "densereludense"}
"""A block that names a group decides before a leaf name: GPT-2's ``attn/c_proj`` and ``mlp/c_proj``."""
_ATTENTION = {
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "qkv_proj",
    "out_proj",
    "query",
    "key",
    "value",
    "c_attn",
    "q",
    "k",
    "v",
    "o",
}
_MLP = {
    "fc1",
    "fc2",
    "gate_proj",
    "up_proj",
    "down_proj",
    "gate_up_proj",
    "dense_h_to_4h",
    "dense_4h_to_h",
    "c_fc",
    "wi",
    "wo",
    "intermediate",
}
_HEAD = {"lm_head", "head", "embed_out"}


@dataclass(frozen=True)
class WeightMatMul:
    """One MatMul with a stored weight, as a recipe or the error ranking names it."""

    graph: str
    """The graph file it is in (``model.onnx``, ``decoder-kv.onnx``)."""
    node: str
    """The node's name, which the quantizers' ``nodes_to_exclude`` takes."""
    weight: str
    group: str
    """``attention``, ``mlp``, ``lm_head`` or ``other``."""
    layer: int | None
    """The transformer block's index; None outside the blocks (the LM head) or where the name carries none."""


def _parts(name: str) -> list[str]:
    """Path components, lower case, torch's ``_1`` repeat suffix dropped (the demo's ``q_1`` is ``q``)."""
    return [re.sub(r"_\d+$", "", p).lower() for p in re.split(r"[/.]", name) if p and not p.isdigit()]


def group_of(name: str) -> tuple[str, int | None]:
    """The group and layer index one node (or weight) name says; ``("other", None)`` where it says neither."""
    found = _BLOCK.search(name) or _LAYER.search(name)
    layer = int(found.group(1)) if found else None
    parts = _parts(name)
    for part in parts:  # the outermost block that names a group decides
        if part in _ATTENTION_BLOCKS:
            return "attention", layer
        if part in _MLP_BLOCKS:
            return "mlp", layer
    for part in reversed(parts):
        if part in _HEAD and layer is None:
            return "lm_head", None
        if part in _ATTENTION:
            return "attention", layer
        if part in _MLP:
            return "mlp", layer
    return "other", layer


def _walk(graph: onnx.GraphProto, outer: frozenset[str]) -> Iterator[tuple[onnx.NodeProto, frozenset[str]]]:
    """Every node with the weights it can see (a merged decoder's If branches read the outer graph's)."""
    import onnx

    names = outer | {i.name for i in graph.initializer}
    for node in graph.node:
        yield node, names
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _walk(attr.g, names)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _walk(g, names)


def weight_matmuls(model: onnx.ModelProto, graph: str) -> tuple[WeightMatMul, ...]:
    """The graph's MatMuls whose second input is a stored weight, each with its group and layer."""
    found = []
    for node, weights in _walk(model.graph, frozenset()):
        if node.op_type != "MatMul" or len(node.input) < 2 or node.input[1] not in weights:
            continue
        group, layer = group_of(node.name)
        if group == "other":
            group, layer = group_of(node.input[1])
        found.append(WeightMatMul(graph, node.name, node.input[1], group, layer))
    return tuple(found)


def graph_matmuls(path: Path) -> tuple[WeightMatMul, ...]:
    """:func:`weight_matmuls` of one graph file, read without its weights."""
    from measure.engine.skeleton import load_skeleton

    try:
        model = load_skeleton(path)
    except Exception as exc:
        raise MeasureError(f"{path}: not a readable ONNX model ({exc})") from exc
    return weight_matmuls(model, path.name)
