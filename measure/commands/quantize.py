"""Write a quantized tier from an fp32 tier: dynamic int8, static int8 (calibrated QDQ) or int4 MatMulNBits.

Either model kind: an encoder-decoder folder or a decoder-only one (optimum's ``model.onnx``, or its older split
and merged layouts). ``--to int4`` says what its accuracy level means for speed on CPU.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", type=Path, metavar="SRC_DIR", help="the fp32 tier folder (encoder-decoder or decoder-only)")
    p.add_argument("out", type=Path, metavar="OUT_DIR", help="a new (or empty) folder for the quantized tier")
    p.add_argument(
        "--to",
        choices=["int8", "int8-static", "int4"],
        required=True,
        help="int8: dynamic; int8-static: QDQ with calibrated activation scales; int4: MatMulNBits",
    )
    p.add_argument(
        "--block-size", type=int, default=32, help="int4 block size: 16, 32, 64, 128 or 256 (MatMulNBits; default 32)"
    )
    p.add_argument(
        "--accuracy-level",
        type=int,
        default=None,
        help="int4 MatMulNBits accuracy_level, what it multiplies in: 0 unset (as 1), 1 fp32, 2 fp16, 3 bf16, 4 int8 "
        "(default unset: fp32, which on CPU can be slower than dynamic int8; 4 is usually the fastest int4)",
    )
    p.add_argument(
        "--calibration",
        type=Path,
        metavar="ROWS.jsonl",
        help="int8-static: golden-rows file whose sources are decoded to record calibration feeds "
        "(keep it apart from the rows the tier is judged on)",
    )
    p.add_argument("--calibration-rows", type=int, metavar="N", help="use the first N calibration rows (default all)")
    p.epilog = "A decoder-only tier is calibrated on its prompts (the template applied) and the first steps after them."


def run(args: argparse.Namespace) -> int:
    from measure.engine.load import load_tier
    from measure.tools.quantize import accuracy_effect, quantize_tier

    out = quantize_tier(
        args.src,
        args.out,
        args.to,
        block_size=args.block_size,
        accuracy_level=args.accuracy_level,
        calibration=args.calibration,
        calibration_rows=args.calibration_rows,
    )
    fp = load_tier(out).fingerprint()
    print(f"{out}: {fp.precision}, {fp.total_bytes:,} B")
    if args.to == "int4":
        print(f"  {accuracy_effect(args.accuracy_level or 0)}")
    return 0
