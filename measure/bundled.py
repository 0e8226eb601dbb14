"""Where the bundled demo lives inside the installed package, so ``pip install`` carries it."""

from __future__ import annotations

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent / "demo"
GOLDEN = DEMO_DIR / "golden-v1.jsonl"

REFERENCE = DEMO_DIR / "base-fp32"
"""Base model, fp32: the control every other tier is compared with."""
PLAIN = DEMO_DIR / "base-int8"
"""Base model, dynamic int8: the verifier tier users ship."""
PLAIN_STATIC = DEMO_DIR / "base-int8-static"
"""Base model, static int8 (QDQ) calibrated on ``calibration-v1.jsonl``: the third precision class."""
CALIBRATION = DEMO_DIR / "calibration-v1.jsonl"
"""Calibration sources for static int8: training words, disjoint from the golden rows."""
LITE = DEMO_DIR / "small-int4"
"""Small model, int4 MatMulNBits: the cheap drafter."""
SMALL_INT8 = DEMO_DIR / "small-int8"
SMALL_FP32 = DEMO_DIR / "small-fp32"
SMALL_OPTIMUM = DEMO_DIR / "small-fp32-optimum"
SMALL_MERGED = DEMO_DIR / "small-fp32-merged"

TIERS = (REFERENCE, PLAIN, PLAIN_STATIC, LITE, SMALL_INT8, SMALL_FP32, SMALL_OPTIMUM, SMALL_MERGED)
CONFIG = DEMO_DIR / "demo.toml"
"""The suite config `measure run` uses when given none."""
