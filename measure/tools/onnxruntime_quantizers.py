"""One graph through one of onnxruntime's quantizers (dynamic int8, static int8 QDQ, int4 MatMulNBits), and the
check that it came out quantized: the tier writer (:mod:`measure.tools.quantize`) owns folders, recipes and
``tier.json``; this module owns what each quantizer is told and what its settings are recorded as."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx

from measure.engine.fingerprint import graph_fingerprint
from measure.errors import MeasureError
from measure.tools.recipes import Recipe

Feeds = list[dict[str, np.ndarray]]
"""The recorded feeds of one graph, call by call, that static int8 calibrates on."""


def _weight_options(recipe: Recipe) -> dict[str, Any]:
    """onnxruntime's int8 quantizers make QInt8 weights symmetric by default; only the other choice is passed."""
    return {} if recipe.symmetric else {"extra_options": {"WeightSymmetric": False}}


def _dynamic_int8(src: Path, dst: Path, recipe: Recipe, kept: tuple[str, ...]) -> dict[str, Any]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(src),
        str(dst),
        op_types_to_quantize=["MatMul"],
        weight_type=QuantType.QInt8,
        per_channel=recipe.per_channel,
        reduce_range=False,
        nodes_to_exclude=list(kept),
        **_weight_options(recipe),
    )
    return {
        "method": "onnxruntime.quantize_dynamic",
        "ops": ["MatMul"],
        "weight_type": "QInt8",
        "per_channel": recipe.per_channel,
    }


def _static_int8(src: Path, dst: Path, feeds: Feeds, recipe: Recipe, kept: tuple[str, ...]) -> dict[str, Any]:
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    if not feeds:
        raise MeasureError(f"{src}: the calibration decodes never called this graph; expected at least one feed")
    quantize_static(
        str(src),
        str(dst),
        Reader(),
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=["MatMul"],
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=recipe.per_channel,
        reduce_range=False,
        calibrate_method=getattr(CalibrationMethod, recipe.calibrate_method),
        nodes_to_exclude=list(kept),
        **_weight_options(recipe),
    )
    return {
        "method": "onnxruntime.quantize_static",
        "format": "QDQ",
        "ops": ["MatMul"],
        "activation_type": "QUInt8",
        "weight_type": "QInt8",
        "per_channel": recipe.per_channel,
        "calibrate_method": recipe.calibrate_method,
    }


def _nbits(src: Path, dst: Path, recipe: Recipe, kept: tuple[str, ...]) -> dict[str, Any]:
    try:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
    except ImportError as exc:  # onnx-ir missing, or an onnxruntime without the quantizer
        raise MeasureError(
            f"{recipe.bits}-bit quantization needs onnxruntime's MatMulNBits quantizer and onnx-ir ({exc})"
        ) from exc
    quant = MatMulNBitsQuantizer(
        onnx.load(str(src)),
        bits=recipe.bits,
        block_size=recipe.block_size,
        is_symmetric=recipe.symmetric,
        accuracy_level=recipe.accuracy_level,
        nodes_to_exclude=list(kept),
    )
    quant.process()
    quant.model.save_model_to_file(str(dst), False)
    return {
        "method": "onnxruntime.MatMulNBitsQuantizer",
        "bits": recipe.bits,
        "block_size": recipe.block_size,
        "symmetric": recipe.symmetric,
        "accuracy_level": recipe.accuracy_level or 0,
    }


def _require_quantized(src: Path, out: Path, recipe: Recipe) -> None:
    """Refuse a graph the quantizer wrote back unchanged: a tier that says int8 and holds fp32 misleads every page.

    onnxruntime's int8 quantizers skip a MatMul inside an ``If`` branch whose weight lives in the outer graph,
    which is every MatMul of a merged decoder (``decoder_model_merged.onnx``); its int4 quantizer does not.
    """
    found = graph_fingerprint(out)
    if found.precision in ("fp32", "fp16") and any(found.ops.get(op) for op in ("MatMul", "Gemm")):
        merged = " (the MatMuls of a merged decoder's If branches read outer-graph weights, which it skips)"
        raise MeasureError(
            f"{src}: onnxruntime's {_METHOD_LABELS[recipe.method]} quantizer left every MatMul in {found.precision}"
            f"{merged if src.name == 'decoder_model_merged.onnx' else ''}; quantize the split layout "
            "(decoder_model.onnx + decoder_with_past_model.onnx) instead, or use --to int4"
        )


def quantize_graph(
    graph: Path, copy: Path, out: Path, recipe: Recipe, feeds: Feeds, kept: tuple[str, ...]
) -> dict[str, Any]:
    """``copy`` (a private copy of the source ``graph``) quantized into ``out`` as ``recipe`` says, ``kept``
    MatMuls left alone; the settings to record. A quantizer's own exception is one line naming ``graph``."""
    try:
        if recipe.method == "dynamic-int8":
            params = _dynamic_int8(copy, out, recipe, kept)
        elif recipe.method == "static-int8":
            params = _static_int8(copy, out, feeds, recipe, kept)
        else:
            params = _nbits(copy, out, recipe, kept)
    except (MeasureError, OSError):
        raise
    except Exception as exc:  # onnx and onnxruntime's quantizers raise their own types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MeasureError(f"{graph}: cannot quantize this graph ({first})") from exc
    _require_quantized(graph, out, recipe)
    return params


_METHOD_LABELS = {
    "dynamic-int8": "dynamic int8",
    "static-int8": "static int8 (QDQ, calibrated)",
    "matmul-nbits": "MatMulNBits",
}
