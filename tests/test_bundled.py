"""The bundled demo: every tier present, small enough to ship, drafter genuinely smaller."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from measure import bundled


def _parameters(folder) -> int:
    total = 0
    for graph in sorted(folder.glob("*.onnx")):
        model = onnx.load(str(graph))
        total += sum(
            int(np.prod(numpy_helper.to_array(t).shape))
            for t in model.graph.initializer
            if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 2
        )
    return total


def test_every_tier_is_there():
    for folder in bundled.TIERS:
        assert (folder / "tier.json").is_file(), folder
        assert (folder / "tokenizer.json").is_file(), folder


def test_demo_stays_under_25_mb():
    size = sum(p.stat().st_size for p in bundled.DEMO_DIR.rglob("*") if p.is_file())
    assert size < 25 * 1024 * 1024


def test_drafter_has_at_least_3x_fewer_parameters():
    assert _parameters(bundled.REFERENCE) >= 3 * _parameters(bundled.SMALL_FP32)
