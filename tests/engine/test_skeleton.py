"""A graph read without its weights: the same model as ``onnx.load`` but for the initializers' data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from measure import bundled
from measure.engine.skeleton import load_skeleton, split_weights


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


def _loaded(path: Path) -> bytes:
    """The model with every tensor's data inline, however the file keeps it."""
    model = onnx.load(str(path))
    for init in model.graph.initializer:
        init.ClearField("data_location")
    return model.SerializeToString(deterministic=True)


@pytest.mark.parametrize("folder", ["lm-base-fp32", "base-int8"])
def test_a_split_graph_is_the_same_model_with_its_weights_beside_it(folder, tmp_path):
    src = sorted((bundled.DEMO_DIR / folder).glob("*.onnx"))[0]
    graph, data = tmp_path / src.name, tmp_path / f"{src.name}.0.data"
    moved = split_weights(src, graph, data, least=1024)
    full = onnx.load(str(src))
    large = [i for i in full.graph.initializer if len(i.raw_data) >= 1024]
    assert large and moved == sum(len(i.raw_data) for i in large)
    assert graph.stat().st_size < src.stat().st_size - moved + 128 * len(large)  # its entries: ~60 bytes a tensor
    skeleton = load_skeleton(graph)
    external = {i.name for i in skeleton.graph.initializer if i.data_location == onnx.TensorProto.EXTERNAL}
    assert external == {i.name for i in large}  # the small tensors stay inline
    assert _loaded(graph) == _loaded(src)


def test_onnxruntime_decodes_a_split_graph_as_the_original(tmp_path):
    src = bundled.DEMO_DIR / "lm-base-fp32" / "model.onnx"
    split_weights(src, tmp_path / "model.onnx", tmp_path / "weights.data")
    sessions = [
        ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]) for p in (src, tmp_path / "model.onnx")
    ]
    ids = np.array([[5, 9, 2, 7]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "position_ids": np.arange(4, dtype=np.int64)[None]}
    for i in sessions[0].get_inputs()[3:]:  # an empty cache: batch 1, past length 0
        feeds[i.name] = np.zeros([1, i.shape[1], 0, i.shape[3]], dtype=np.float32)
    first, second = (s.run(None, feeds) for s in sessions)
    assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))


def test_tensors_already_beside_a_graph_keep_their_entries(tmp_path):
    src = bundled.DEMO_DIR / "genai-base-int4" / "model.onnx"
    before = {i.name: list(i.external_data) for i in load_skeleton(src).graph.initializer if i.external_data}
    split_weights(src, tmp_path / "model.onnx", tmp_path / "model.onnx.0.data")
    after = {i.name: list(i.external_data) for i in load_skeleton(tmp_path / "model.onnx").graph.initializer}
    assert before and all(after[name] == entries for name, entries in before.items())
