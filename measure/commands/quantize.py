"""Write a quantized tier from an fp32 tier: dynamic int8 or int4 MatMulNBits."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("src", type=Path, metavar="SRC_DIR", help="the fp32 tier folder")
    p.add_argument("out", type=Path, metavar="OUT_DIR", help="a new (or empty) folder for the quantized tier")
    p.add_argument("--to", choices=["int8", "int4"], required=True, help="int8: dynamic; int4: MatMulNBits")
    p.add_argument("--block-size", type=int, default=32, help="int4 block size (default 32)")
    p.add_argument("--accuracy-level", type=int, default=None, help="int4 MatMulNBits accuracy_level (default unset)")


def run(args: argparse.Namespace) -> int:
    from measure.artifacts import load_tier
    from measure.quantize import quantize_tier

    out = quantize_tier(args.src, args.out, args.to, block_size=args.block_size, accuracy_level=args.accuracy_level)
    fp = load_tier(out).fingerprint()
    print(f"{out}: {fp.precision}, {fp.total_bytes:,} B")
    return 0
