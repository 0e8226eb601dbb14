"""Tier folders whose logits are a known transform of a bundled tier's: the conditions tests need, built.

A test must not hope that a quantized tier happens to decode something on this
machine; it builds a graph that does. :func:`edit_logits` copies a tier folder and
appends ``logits = raw * scale + bias`` to every graph that outputs logits, so
the transformed tier's distribution is known in closed form from the original's
(a temperature ``1 / scale``, a bias on chosen tokens), and a bias large enough
on the end-of-sequence token makes a tier that decodes nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def _edit(path: Path, scale: float, bias: dict[int, float]) -> bool:
    model = onnx.load(str(path))
    graph = model.graph
    out = next((o for o in graph.output if o.name == "logits"), None)
    if out is None:
        return False
    vocab = out.type.tensor_type.shape.dim[-1].dim_value
    if not vocab:
        raise ValueError(f"{path}: logits have a symbolic vocabulary; state it to edit them")
    for node in graph.node:
        node.output[:] = ["logits.raw" if name == "logits" else name for name in node.output]
    vector = np.zeros(vocab, dtype=np.float32)
    for token, value in bias.items():
        vector[token] = value
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(scale, dtype=np.float32), "logits.scale"),
            numpy_helper.from_array(vector, "logits.bias"),
        ]
    )
    graph.node.extend(
        [
            helper.make_node("Mul", ["logits.raw", "logits.scale"], ["logits.scaled"]),
            helper.make_node("Add", ["logits.scaled", "logits.bias"], ["logits"]),
        ]
    )
    onnx.save(model, str(path))
    return True


def edit_logits(src: Path, dst: Path, *, scale: float = 1.0, bias: dict[int, float] | None = None) -> Path:
    """A copy of tier folder ``src`` at ``dst`` whose logits are ``scale * logits + bias`` (fp32 graphs
    without external data); its tier.json names it after ``dst``."""
    shutil.copytree(src, dst)
    edited = [_edit(p, scale, bias or {}) for p in sorted(dst.glob("*.onnx"))]
    if not any(edited):
        raise ValueError(f"{src}: no graph outputs logits")
    meta = dst / "tier.json"
    if meta.is_file():
        import json

        doc = json.loads(meta.read_text(encoding="utf-8"))
        doc["name"] = dst.name
        meta.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return dst
