"""A decoder-only tier as onnxruntime-genai reads it: its own folder, or a generated ``genai_config.json`` beside links.

A genai folder is used as it is. An optimum export gets a config written from
its graph's contract (:meth:`CausalGraphs.describe`: names, layers, heads),
``past_present_share_buffer: false`` (optimum's graph grows its cache) and
``position_ids`` named, in a temporary folder beside links to the tier's files:
the tier folder is never written. No onnxruntime-genai import here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from measure.engine.causal.tier import CausalTier
from measure.errors import MeasureError


def _decoder(tier: CausalTier, filename: str) -> dict[str, Any]:
    g, s = tier.graphs, tier.shape
    inputs = {"input_ids": "input_ids", "attention_mask": "attention_mask"}
    if g.positions:
        inputs["position_ids"] = "position_ids"
    inputs |= {"past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"}
    heads = tier.meta.get("num_attention_heads", s.heads)
    return {
        "filename": filename,
        "head_size": s.head_dim,
        "hidden_size": int(tier.meta.get("hidden_size", heads * s.head_dim)),
        "num_attention_heads": int(heads),
        "num_key_value_heads": s.heads,
        "num_hidden_layers": s.layers,
        "inputs": inputs,
        "outputs": {
            "logits": "logits",
            "present_key_names": "present.%d.key",
            "present_value_names": "present.%d.value",
        },
        "session_options": {"provider_options": []},
    }


def genai_config_for(tier: CausalTier, max_length: int, draft: CausalTier | None = None) -> dict[str, Any]:
    """onnxruntime-genai's config for an optimum ``causal`` tier (one graph), greedy, ``max_length`` positions."""
    if tier.layout != "causal":
        raise MeasureError(
            f"{tier.path}: layout {tier.layout}; onnxruntime-genai runs one decoder graph (an optimum model.onnx)"
        )
    model: dict[str, Any] = {
        "type": str(tier.meta.get("model_type", "decoder")),
        "bos_token_id": tier.special.bos if tier.special.bos is not None else tier.special.pad,
        "eos_token_id": tier.special.eos,
        "pad_token_id": tier.special.pad,
        "context_length": tier.context or max_length,
        "vocab_size": tier.shape.vocab_size,
        "decoder": _decoder(tier, "model.onnx"),
    }
    if draft is not None:
        model["draft"] = _decoder(draft, "draft.onnx")
    return {
        "model": model,
        "search": {
            "do_sample": False,
            "num_beams": 1,
            "max_length": max_length,
            "past_present_share_buffer": False,
        },
    }


def _link(src: Path, dst: Path) -> None:
    try:
        os.symlink(src.resolve(), dst)
    except OSError:
        shutil.copyfile(src, dst)


@contextmanager
def genai_folder(tier: CausalTier, max_length: int, draft: CausalTier | None = None) -> Iterator[Path]:
    """A folder onnxruntime-genai can open for ``tier``: its own (genai layout), else a temporary one."""
    if tier.layout == "genai" and draft is None:
        yield tier.path
        return
    config = genai_config_for(tier, max_length, draft)
    with tempfile.TemporaryDirectory(prefix="measure-genai-") as tmp:
        root = Path(tmp)
        for p in tier.path.iterdir():
            if p.is_file() and p.name != "genai_config.json":
                _link(p, root / p.name)
        if draft is not None:
            _link(draft.path / "model.onnx", root / "draft.onnx")
        (root / "genai_config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        yield root
