"""An onnxruntime-genai folder's ``genai_config.json``, read and checked: what measure's loop needs to call it.

onnxruntime-genai's model builder writes the file beside ``model.onnx``. Only the
fields that decide how the graph is called are read (the decoder's file, its
input/output names, the cache's shape and mode, the special ids, the lengths);
a malformed file, a missing field or a file it names that is absent is one line
naming the file and the field. No onnxruntime here: :mod:`measure.engine.causal.layouts` opens
the graph; :func:`check_genai_graph` reads the graph's own attention numbers from
its proto (no weights) so a config that disagrees is refused before anything is
allocated by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.engine.kind import GENAI_MARKER
from measure.engine.meta import read_json_object
from measure.engine.skeleton import load_skeleton
from measure.errors import MeasureError

GENAI_CONFIG = GENAI_MARKER
STANDARD_NAMES = {"input_ids": "input_ids", "attention_mask": "attention_mask", "logits": "logits"}
"""The names measure's loop feeds and reads; a config naming others is refused."""


@dataclass(frozen=True)
class GenaiConfig:
    """The decoder's contract as the config states it (names with ``%d`` per layer)."""

    path: Path
    model_type: str
    filename: str
    past_key: str
    past_value: str
    present_key: str
    present_value: str
    position_ids: str | None
    head_size: int
    kv_heads: int
    heads: int
    layers: int
    vocab_size: int | None
    context_length: int | None
    max_length: int
    max_length_field: str
    """Where ``max_length`` came from: ``search.max_length``, or ``model.context_length`` in its absence."""
    share_buffer: bool
    eos: int
    bos: int | None
    pad: int | None

    def past_names(self) -> list[str]:
        return [n % i for i in range(self.layers) for n in (self.past_key, self.past_value)]

    def present_names(self) -> list[str]:
        return [n % i for i in range(self.layers) for n in (self.present_key, self.present_value)]

    def meta(self) -> dict[str, Any]:
        """What the config says in config.json's words, for a graph whose shapes are symbolic."""
        doc = {"head_dim": self.head_size, "num_key_value_heads": self.kv_heads, "vocab_size": self.vocab_size}
        return {k: v for k, v in doc.items() if v is not None}

    def cache_mode(self) -> dict[str, Any]:
        """JSON-ready: how onnxruntime-genai holds the key/value cache for this folder."""
        return {
            "past_present_share_buffer": self.share_buffer,
            "max_length": self.max_length,
            "context_length": self.context_length,
        }


def _field(path: Path, doc: dict[str, Any], dotted: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    node: Any = doc
    for part in dotted.split("."):
        if not isinstance(node, dict):
            raise MeasureError(f"{path}: field {dotted}: expected an object at {part!r}, got {type(node).__name__}")
        if part not in node:
            if not required:
                return None
            raise MeasureError(f"{path}: field {dotted}: missing (an onnxruntime-genai model builder config has it)")
        node = node[part]
    if isinstance(node, list) and kind is int and node:  # eos may be a list of ids: the first decides
        node = node[0]
    bad_bool = isinstance(node, bool) and kind is not bool
    if not isinstance(node, kind) or bad_bool or (kind is int and isinstance(node, int) and node < 0):
        raise MeasureError(f"{path}: field {dotted}: expected {getattr(kind, '__name__', kind)}, got {node!r}")
    return node


def _count(path: Path, doc: dict[str, Any], dotted: str) -> int:
    """A count the graph is built with (heads, layers, head size): a positive integer."""
    value: int = _field(path, doc, dotted, int)
    if value < 1:
        raise MeasureError(f"{path}: field {dotted}: expected a positive integer, got {value!r}")
    return value


def _pattern(path: Path, doc: dict[str, Any], dotted: str) -> str:
    value: str = _field(path, doc, dotted, str)
    if value.count("%d") != 1:
        raise MeasureError(f"{path}: field {dotted}: expected a name with one %d (the layer), got {value!r}")
    return value


def _names(path: Path, doc: dict[str, Any]) -> None:
    for group, key in (("inputs", "input_ids"), ("inputs", "attention_mask"), ("outputs", "logits")):
        value = _field(path, doc, f"model.decoder.{group}.{key}", str, required=False)
        if value is not None and value != STANDARD_NAMES[key]:
            raise MeasureError(
                f"{path}: field model.decoder.{group}.{key}: {value!r}; measure's loop feeds {key!r} only"
            )


def read_genai_config(folder: Path) -> GenaiConfig:
    """The folder's ``genai_config.json``; a malformed one, or one naming a missing file, is a one-line error."""
    path = Path(folder) / GENAI_CONFIG
    doc = read_json_object(path, " (onnxruntime-genai's model config)")
    filename = _field(path, doc, "model.decoder.filename", str)
    if not filename or Path(filename).name != filename or not (path.parent / filename).is_file():
        raise MeasureError(f"{path}: field model.decoder.filename: {filename!r} is not a file in {path.parent}")
    _names(path, doc)
    position = _field(path, doc, "model.decoder.inputs.position_ids", str, required=False)
    context = _field(path, doc, "model.context_length", int, required=False)
    searched = _field(path, doc, "search.max_length", int, required=False)
    max_length = searched or context
    if not max_length:
        raise MeasureError(f"{path}: field search.max_length: missing (and no model.context_length)")
    if searched and context and searched > context:
        raise MeasureError(
            f"{path}: field search.max_length: {searched} positions, beyond model.context_length {context}; "
            "expected at most the model's context"
        )
    return GenaiConfig(
        path=path,
        model_type=_field(path, doc, "model.type", str),
        filename=filename,
        past_key=_pattern(path, doc, "model.decoder.inputs.past_key_names"),
        past_value=_pattern(path, doc, "model.decoder.inputs.past_value_names"),
        present_key=_pattern(path, doc, "model.decoder.outputs.present_key_names"),
        present_value=_pattern(path, doc, "model.decoder.outputs.present_value_names"),
        position_ids=position,
        head_size=_count(path, doc, "model.decoder.head_size"),
        kv_heads=_count(path, doc, "model.decoder.num_key_value_heads"),
        heads=_count(path, doc, "model.decoder.num_attention_heads"),
        layers=_count(path, doc, "model.decoder.num_hidden_layers"),
        vocab_size=_field(path, doc, "model.vocab_size", int, required=False),
        context_length=context,
        max_length=max_length,
        max_length_field="search.max_length" if searched else "model.context_length",
        share_buffer=bool(_field(path, doc, "search.past_present_share_buffer", bool, required=False)),
        eos=_field(path, doc, "model.eos_token_id", int),
        bos=_field(path, doc, "model.bos_token_id", int, required=False),
        pad=_field(path, doc, "model.pad_token_id", int, required=False),
    )


@dataclass(frozen=True)
class GraphAttention:
    """What the graph's first GroupQueryAttention node fixes: heads, key/value heads, head size (from the packed
    query/key/value width, None where the graph does not say) and the positions its rotary cache holds."""

    heads: int
    kv_heads: int
    head_size: int | None
    positions: int | None


def _width(name: str, producers: dict[str, Any], shapes: dict[str, list[int]]) -> int | None:
    """The last dimension of ``name``, read from the projection that makes it (MatMulNBits' N, a MatMul's
    weight, through a bias Add); None where the graph does not fix it."""
    node = producers.get(name)
    if node is None:
        return None
    if node.op_type == "MatMulNBits":
        return next((int(a.i) for a in node.attribute if a.name == "N"), None)
    if node.op_type in ("MatMul", "Gemm") and len(node.input) > 1 and node.input[1] in shapes:
        return shapes[node.input[1]][-1] if shapes[node.input[1]] else None
    if node.op_type == "Add":
        known = [shapes[i][-1] for i in node.input if shapes.get(i)]
        return known[0] if known else next((w for i in node.input if (w := _width(i, producers, shapes))), None)
    return None


def graph_attention(path: Path) -> GraphAttention | None:
    """The attention a genai graph was built with, read from its proto (weights not loaded); None with no
    GroupQueryAttention node."""
    try:
        graph = load_skeleton(path).graph
    except Exception as exc:  # a truncated or foreign file: onnxruntime names it when it opens the graph
        raise MeasureError(f"{path}: not a readable ONNX graph ({type(exc).__name__})") from exc
    node = next((n for n in graph.node if n.op_type == "GroupQueryAttention"), None)
    if node is None:
        return None
    attrs = {a.name: int(a.i) for a in node.attribute if a.name in ("num_heads", "kv_num_heads")}
    shapes = {i.name: [int(d) for d in i.dims] for i in graph.initializer}
    producers = {out: n for n in graph.node for out in n.output}
    inputs = [*node.input, *[""] * 9]
    width = _width(inputs[0], producers, shapes)
    heads, kv_heads = attrs.get("num_heads", 0), attrs.get("kv_num_heads", 0)
    packed = not inputs[1]  # no separate key input: the query input holds query, key and value
    parts = heads + 2 * kv_heads if packed else heads
    head_size = width // parts if width and parts and width % parts == 0 else None
    cos = shapes.get(inputs[7])
    return GraphAttention(heads, kv_heads, head_size, cos[0] if cos else None)


def check_genai_graph(cfg: GenaiConfig, graph: Path) -> GraphAttention | None:
    """The config's attention numbers against the graph's own: a disagreement is one line naming the field,
    the config's value and the graph's (onnxruntime would otherwise fail inside a decode, or silently read
    a cache laid out for other heads)."""
    found = graph_attention(graph)
    if found is None:
        return None
    checks = (
        ("model.decoder.num_attention_heads", cfg.heads, found.heads, "num_heads"),
        ("model.decoder.num_key_value_heads", cfg.kv_heads, found.kv_heads, "kv_num_heads"),
        ("model.decoder.head_size", cfg.head_size, found.head_size, "its query/key/value projection width"),
    )
    for field, said, actual, where in checks:
        if actual is not None and said != actual:
            raise MeasureError(
                f"{cfg.path}: field {field}: {said}, but {graph.name}'s GroupQueryAttention has {actual} "
                f"({where}); expected the config to describe the graph"
            )
    if found.positions is not None and cfg.max_length > found.positions:
        raise MeasureError(
            f"{cfg.path}: field {cfg.max_length_field}: {cfg.max_length} positions, but {graph.name}'s rotary "
            f"cache holds {found.positions}; expected at most {found.positions}"
        )
    return found
