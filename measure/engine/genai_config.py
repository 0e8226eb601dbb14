"""An onnxruntime-genai folder's ``genai_config.json``, read and checked: what measure's loop needs to call it.

onnxruntime-genai's model builder writes the file beside ``model.onnx``. Only the
fields that decide how the graph is called are read (the decoder's file, its
input/output names, the cache's shape and mode, the special ids, the lengths);
a malformed file, a missing field or a file it names that is absent is one line
naming the file and the field. No onnxruntime here: :mod:`causal_layouts` opens
the graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.engine.meta import read_json_object
from measure.errors import MeasureError

GENAI_CONFIG = "genai_config.json"
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
    if not isinstance(node, kind) or bad_bool or (kind is int and node < 0):
        raise MeasureError(f"{path}: field {dotted}: expected {getattr(kind, '__name__', kind)}, got {node!r}")
    return node


def _pattern(path: Path, doc: dict[str, Any], dotted: str) -> str:
    value = _field(path, doc, dotted, str)
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
    max_length = _field(path, doc, "search.max_length", int, required=False) or context
    if not max_length:
        raise MeasureError(f"{path}: field search.max_length: missing (and no model.context_length)")
    return GenaiConfig(
        path=path,
        model_type=_field(path, doc, "model.type", str),
        filename=filename,
        past_key=_pattern(path, doc, "model.decoder.inputs.past_key_names"),
        past_value=_pattern(path, doc, "model.decoder.inputs.past_value_names"),
        present_key=_pattern(path, doc, "model.decoder.outputs.present_key_names"),
        present_value=_pattern(path, doc, "model.decoder.outputs.present_value_names"),
        position_ids=position,
        head_size=_field(path, doc, "model.decoder.head_size", int),
        kv_heads=_field(path, doc, "model.decoder.num_key_value_heads", int),
        heads=_field(path, doc, "model.decoder.num_attention_heads", int),
        layers=_field(path, doc, "model.decoder.num_hidden_layers", int),
        vocab_size=_field(path, doc, "model.vocab_size", int, required=False),
        context_length=context,
        max_length=max_length,
        share_buffer=bool(_field(path, doc, "search.past_present_share_buffer", bool, required=False)),
        eos=_field(path, doc, "model.eos_token_id", int),
        bos=_field(path, doc, "model.bos_token_id", int, required=False),
        pad=_field(path, doc, "model.pad_token_id", int, required=False),
    )
