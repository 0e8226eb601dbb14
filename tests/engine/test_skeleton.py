"""A graph read without its weights: the same model as ``onnx.load`` but for the initializers' data."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from measure import bundled
from measure.engine.skeleton import load_skeleton


def _graphs() -> list[Path]:
    folders = [*bundled.TIERS, bundled.DEMO_DIR / "lm-base-fp32", bundled.DEMO_DIR / "genai-base-int4"]
    return sorted(p for folder in folders for p in folder.glob("*.onnx"))


def _without_data(model: onnx.ModelProto) -> onnx.ModelProto:
    for init in model.graph.initializer:
        for field in ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data"):
            init.ClearField(field)
        init.ClearField("uint64_data")
    return model


@pytest.mark.parametrize("path", _graphs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_skeleton_is_the_model_less_its_weights(path):
    full = onnx.load(str(path), load_external_data=False)
    skeleton = load_skeleton(path)
    assert skeleton.SerializeToString(deterministic=True) == _without_data(full).SerializeToString(deterministic=True)
    assert not any(init.raw_data or init.float_data for init in skeleton.graph.initializer)


def test_external_data_entries_are_kept():
    path = bundled.DEMO_DIR / "genai-base-int4" / "model.onnx"
    external = [i for i in load_skeleton(path).graph.initializer if i.data_location == onnx.TensorProto.EXTERNAL]
    assert external and all(any(e.key == "location" for e in i.external_data) for i in external)


def test_a_truncated_file_is_refused(tmp_path):
    data = (bundled.REFERENCE / "encoder.onnx").read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        load_skeleton(cut)
