"""Writing quantized tiers: dynamic int8 and int4 MatMulNBits, from an fp32 tier folder.

Quantization is part of measure rather than a one-off script, so every
quantized tier states how it was made (``tier.json`` ``quantization``) and
can be rebuilt from its source with one command.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import onnx

from measure.artifacts import read_meta
from measure.errors import MeasureError
from measure.graphs import LAYOUT_FILES, detect_layout

TARGETS = ("int8", "int4")


def _int8(src: Path, dst: Path) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(src),
        str(dst),
        op_types_to_quantize=["MatMul"],
        weight_type=QuantType.QInt8,
        per_channel=False,
        reduce_range=False,
    )
    return {"method": "onnxruntime.quantize_dynamic", "ops": ["MatMul"], "weight_type": "QInt8", "per_channel": False}


def _int4(src: Path, dst: Path, block_size: int, accuracy_level: int | None) -> dict[str, Any]:
    try:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as exc:  # onnx-ir missing, or an onnxruntime without the quantizer
        raise MeasureError(f"int4 quantization needs onnxruntime's MatMulNBits quantizer and onnx-ir ({exc})") from exc
    quant = MatMulNBitsQuantizer(
        onnx.load(str(src)), bits=4, block_size=block_size, is_symmetric=True, accuracy_level=accuracy_level
    )
    quant.process()
    quant.model.save_model_to_file(str(dst), False)
    return {
        "method": "onnxruntime.MatMulNBitsQuantizer",
        "bits": 4,
        "block_size": block_size,
        "symmetric": True,
        "accuracy_level": accuracy_level or 0,
    }


def quantize_tier(
    src: Path | str, dst: Path | str, to: str, *, block_size: int = 32, accuracy_level: int | None = None
) -> Path:
    """Quantize every graph of ``src`` into ``dst``; other files (tokenizer, metadata) are copied."""
    src, dst = Path(src), Path(dst)
    if to not in TARGETS:
        raise MeasureError(f"quantize --to: expected one of {', '.join(TARGETS)}, got {to!r}")
    if block_size < 16 or block_size & (block_size - 1):
        raise MeasureError(f"quantize --block-size: expected a power of two >= 16, got {block_size}")
    layout = detect_layout(src)
    if dst.resolve() == src.resolve():
        raise MeasureError(f"{dst}: the output folder must differ from the source tier")
    if dst.exists() and any(dst.iterdir()):
        raise MeasureError(f"{dst}: output folder is not empty; expected a new or empty folder")
    dst.mkdir(parents=True, exist_ok=True)
    graphs = LAYOUT_FILES[layout]
    params: dict[str, Any] = {}
    logging.disable(logging.WARNING)  # onnxruntime's quantizers advise pre-processing on the root logger
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name in graphs:
                out = Path(tmp) / name
                params = _int8(src / name, out) if to == "int8" else _int4(src / name, out, block_size, accuracy_level)
                shutil.move(str(out), dst / name)
    finally:
        logging.disable(logging.NOTSET)
    for path in src.iterdir():
        if path.is_file() and path.name not in graphs and path.suffix != ".onnx" and path.name != "tier.json":
            shutil.copy2(path, dst / path.name)
    meta = read_meta(src) if (src / "tier.json").is_file() else {}
    meta = {k: v for k, v in meta.items() if k in _TIER_KEYS}
    meta["name"] = dst.name
    meta["quantization"] = params | {"from": src.name}
    (dst / "tier.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return dst


_TIER_KEYS = {
    "tokenizer",
    "pad_token_id",
    "eos_token_id",
    "decoder_start_token_id",
    "max_source_tokens",
    "max_target_tokens",
    "num_heads",
    "head_dim",
    "vocab_size",
    "note",
}
