"""Write a quantized tier from an fp32 tier by a recipe: dynamic or static int8, or MatMulNBits at 4 or 8 bits.

Either model kind: an encoder-decoder folder or a decoder-only one (optimum's ``model.onnx``, or its older split
and merged layouts). ``--to`` takes the three original targets; ``--recipe`` a named recipe or a recipe file
(``measure.tools.recipes``), which may keep MatMul groups in fp32. A MatMulNBits tier's line says what its accuracy
level means for speed on CPU.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from measure.tools.recipes import NAMED


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", type=Path, metavar="SRC_DIR", help="the fp32 tier folder (encoder-decoder or decoder-only)")
    p.add_argument("out", type=Path, metavar="OUT_DIR", help="a new (or empty) folder for the quantized tier")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--to",
        choices=["int8", "int8-static", "int4"],
        help="int8: dynamic; int8-static: QDQ with calibrated activation scales; int4: MatMulNBits "
        "(the named recipes of the same names)",
    )
    which.add_argument(
        "--recipe",
        metavar="NAME|FILE.toml",
        help=f"a named recipe ({', '.join(NAMED)}) or a recipe file (TOML: method, bits, per_channel, block_size, "
        "symmetric, accuracy_level, calibrate_method, calibration_rows, [keep] groups/layers/first/last/nodes, "
        "or base = NAME and the keys it changes); tier.json records the whole recipe",
    )
    p.add_argument(
        "--block-size",
        type=int,
        default=None,
        help="--to int4 block size: 16, 32, 64, 128 or 256 (MatMulNBits; default 32)",
    )
    p.add_argument(
        "--accuracy-level",
        type=int,
        default=None,
        help="--to int4 MatMulNBits accuracy_level, what it multiplies in: 0 unset (as 1), 1 fp32, 2 fp16, 3 bf16, "
        "4 int8 "
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
    from dataclasses import replace

    from measure.engine.load import load_tier
    from measure.errors import MeasureError
    from measure.tools.quantize import accuracy_effect, quantize_recipe, quantize_tier
    from measure.tools.recipes import resolve_recipe

    if args.recipe is not None:
        for flag, value in (("--block-size", args.block_size), ("--accuracy-level", args.accuracy_level)):
            if value is not None:
                raise MeasureError(f"quantize {flag}: only with --to int4; a recipe states it (block_size, ...)")
        recipe = resolve_recipe(args.recipe)
        if args.calibration_rows is not None:
            if args.calibration is None:
                raise MeasureError("quantize --calibration-rows: only with --calibration")
            recipe = replace(recipe, calibration_rows=args.calibration_rows)
        out = quantize_recipe(args.src, args.out, recipe, calibration=args.calibration)
        nbits, level = recipe.method == "matmul-nbits", recipe.accuracy_level
    else:
        out = quantize_tier(
            args.src,
            args.out,
            args.to,
            block_size=32 if args.block_size is None else args.block_size,
            accuracy_level=args.accuracy_level,
            calibration=args.calibration,
            calibration_rows=args.calibration_rows,
        )
        nbits, level = args.to == "int4", args.accuracy_level
    fp = load_tier(out).fingerprint()
    print(f"{out}: {fp.precision}, {fp.total_bytes:,} B")
    if nbits:
        print(f"  {accuracy_effect(level or 0)}")
    return 0
