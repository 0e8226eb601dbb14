"""Writing quantized tiers: dynamic int8, static int8 (QDQ) and int4 MatMulNBits, from an fp32 tier folder.

Quantization is part of measure rather than a one-off script, so every
quantized tier states how it was made (``tier.json`` ``quantization``) and
can be rebuilt from its source with one command. Static int8 fixes its
activation scales ahead of time, so it is calibrated on the inputs the graphs
really see: the feeds of greedy decodes of calibration sources, recorded call
by call from the fp32 tier, and the file they came from is recorded by sha256.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from measure.engine.load import load_tier
from measure.engine.meta import read_meta
from measure.engine.seq2seq.graphs import LAYOUT_FILES, detect_layout
from measure.errors import MeasureError
from measure.suites.golden import GoldenRows, load_golden
from measure.writing import make_dirs, reason, write_text

TARGETS = ("int8", "int8-static", "int4")

Feeds = list[dict[str, np.ndarray]]


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


def record_feeds(src: Path, calibration: GoldenRows, rows: int) -> dict[str, Feeds]:
    """Greedy-decode the first ``rows`` calibration sources with the fp32 tier; every graph's feeds, by file name."""
    tier = load_tier(src)
    sessions = (tier.encoder.session, *tier.decoder.sessions)
    for session in sessions:
        session.recorded = []
    for row in calibration.rows[:rows]:
        try:
            tier.greedy(row.input)
        except MeasureError as exc:
            raise MeasureError(f"{calibration.path}:{row.line}: cannot decode this calibration source ({exc})") from exc
    return {session.path.name: session.recorded or [] for session in sessions}


def _int8_static(src: Path, dst: Path, feeds: Feeds) -> dict[str, Any]:
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
        per_channel=False,
        reduce_range=False,
        calibrate_method=CalibrationMethod.MinMax,
    )
    return {
        "method": "onnxruntime.quantize_static",
        "format": "QDQ",
        "ops": ["MatMul"],
        "activation_type": "QUInt8",
        "weight_type": "QInt8",
        "per_channel": False,
        "calibrate_method": "MinMax",
    }


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
    src: Path | str,
    dst: Path | str,
    to: str,
    *,
    block_size: int = 32,
    accuracy_level: int | None = None,
    calibration: Path | str | None = None,
    calibration_rows: int | None = None,
) -> Path:
    """Quantize every graph of ``src`` into ``dst``; other files (tokenizer, metadata) are copied.

    ``int8-static`` needs ``calibration``: a golden-rows file whose first
    ``calibration_rows`` sources (all by default) are decoded to record feeds.
    Keep it apart from the golden rows the tier is judged on.
    """
    src, dst = Path(src), Path(dst)
    if to not in TARGETS:
        raise MeasureError(f"quantize --to: expected one of {', '.join(TARGETS)}, got {to!r}")
    if block_size < 16 or block_size & (block_size - 1):
        raise MeasureError(f"quantize --block-size: expected a power of two >= 16, got {block_size}")
    if (to == "int8-static") != (calibration is not None):
        raise MeasureError(
            "quantize --calibration: int8-static needs a calibration rows file (and only int8-static takes one)"
        )
    if calibration_rows is not None and calibration is None:
        raise MeasureError("quantize --calibration-rows: only with --calibration")
    layout = detect_layout(src)
    rows = cal = None
    if calibration is not None:
        cal = load_golden(calibration)
        rows = len(cal) if calibration_rows is None else calibration_rows
        if not 1 <= rows <= len(cal):
            raise MeasureError(
                f"quantize --calibration-rows: expected 1 to {len(cal)} (the rows in {cal.path}), got {rows}"
            )
    if dst.resolve() == src.resolve():
        raise MeasureError(f"{dst}: the output folder must differ from the source tier")
    if dst.is_symlink():
        raise MeasureError(f"{dst}: is a symbolic link; expected a new or empty folder")
    if dst.exists() and not dst.is_dir():
        raise MeasureError(f"{dst}: is a file; expected a new or empty folder for the quantized tier")
    if dst.exists() and any(dst.iterdir()):
        raise MeasureError(f"{dst}: output folder is not empty; expected a new or empty folder")
    feeds = record_feeds(src, cal, rows) if cal is not None and rows is not None else {}
    make_dirs(dst.parent)
    try:
        building = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".partial", dir=dst.parent))
    except OSError as exc:
        raise MeasureError(f"{dst.parent}: cannot create a folder here ({reason(exc)})") from exc
    try:
        _build(src, building, dst.name, to, layout, block_size, accuracy_level, cal, rows, feeds)
        if dst.is_dir():
            dst.rmdir()  # empty, checked above
        building.rename(dst)
    except OSError as exc:
        raise MeasureError(f"{dst}: cannot write the quantized tier ({reason(exc)})") from exc
    finally:
        shutil.rmtree(building, ignore_errors=True)  # gone already when renamed; a failure leaves nothing
    return dst


def _build(
    src: Path,
    dst: Path,
    name: str,
    to: str,
    layout: str,
    block_size: int,
    accuracy_level: int | None,
    cal: GoldenRows | None,
    rows: int | None,
    feeds: dict[str, Feeds],
) -> None:
    """Write the whole quantized tier into ``dst`` (a temporary folder renamed into place by the caller)."""
    graphs = LAYOUT_FILES[layout]
    params: dict[str, Any] = {}
    logging.disable(logging.WARNING)  # onnxruntime's quantizers advise pre-processing on the root logger
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for graph in graphs:
                out = Path(tmp) / graph
                try:
                    if to == "int8":
                        params = _int8(src / graph, out)
                    elif to == "int8-static":
                        params = _int8_static(src / graph, out, feeds.get(graph, []))
                    else:
                        params = _int4(src / graph, out, block_size, accuracy_level)
                except (MeasureError, OSError):
                    raise
                except Exception as exc:  # onnx and onnxruntime's quantizers raise their own types
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise MeasureError(f"{src / graph}: cannot quantize this graph ({first})") from exc
                shutil.move(str(out), dst / graph)
    finally:
        logging.disable(logging.NOTSET)
    if cal is not None:
        params["calibration"] = {
            "file": cal.path.name,
            "sha256": cal.sha256,
            "rows": rows,
            "feeds": {graph: len(feeds.get(graph, [])) for graph in graphs},
        }
    for path in src.iterdir():
        if path.is_file() and path.name not in graphs and path.suffix != ".onnx" and path.name != "tier.json":
            shutil.copy2(path, dst / path.name)
    meta = read_meta(src) if (src / "tier.json").is_file() else {}
    meta = {k: v for k, v in meta.items() if k in _TIER_KEYS}
    meta["name"] = name
    meta["note"] = f"{_LABELS[to]} of {src.name}"  # the source's note describes the source, not this tier
    meta["quantization"] = params | {"from": src.name}
    write_text(dst / "tier.json", json.dumps(meta, indent=2, ensure_ascii=False) + "\n", root=dst)
    os.chmod(dst, 0o755)  # mkdtemp makes 0700; a tier folder is meant to be read


_LABELS = {"int8": "dynamic int8", "int8-static": "static int8 (QDQ, calibrated)", "int4": "int4 MatMulNBits"}

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
