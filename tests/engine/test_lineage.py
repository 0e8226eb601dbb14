"""A quantized tier's source is told by its graphs: the demo's tiers, copied without their tier.json."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest

from measure import bundled
from measure.engine.lineage import COVER, cover, find_source, lineage
from measure.errors import MeasureError

DEMO = bundled.CONFIG.parent


def _copy(name: str, to: Path, *, keep_meta: bool = False) -> Path:
    folder = to / name
    shutil.copytree(DEMO / name, folder)
    if not keep_meta:
        (folder / "tier.json").unlink(missing_ok=True)
    return folder


def test_every_quantized_demo_tier_finds_the_tier_it_was_made_from():
    """What tier.json's quantization.from says, the graphs say too: for every demo tier that names its source."""
    found = {p.name: lineage(p) for p in sorted(DEMO.iterdir()) if p.is_dir() and any(p.glob("*.onnx"))}
    named = 0
    for name, line in found.items():
        meta = DEMO / name / "tier.json"
        source = (
            json.loads(meta.read_text(encoding="utf-8")).get("quantization", {}).get("from") if meta.exists() else None
        )
        if line.full or source is None or source not in found:
            continue
        assert find_source(line, found).name == source, name
        named += 1
    assert named >= 5


def test_a_folder_without_tier_json_is_paired_by_its_weights(tmp_path):
    int8 = lineage(_copy("small-int8", tmp_path))
    candidates = {n: lineage(DEMO / n) for n in ("base-fp32", "small-fp32", "lm-small-fp32")}
    got = find_source(int8, candidates)
    assert got.name == "small-fp32" and "100%" in got.why
    assert cover(int8, candidates["base-fp32"]) < COVER  # a model of the same code, other weights: not its source


def test_a_tier_whose_weights_are_renamed_has_no_source(tmp_path):
    folder = _copy("small-int8", tmp_path)
    for graph in folder.glob("*.onnx"):
        model = onnx.load(graph)
        renamed = {t.name: f"other.{i}" for i, t in enumerate(model.graph.initializer)}
        for t in model.graph.initializer:
            t.name = renamed[t.name]
        for node in model.graph.node:
            node.input[:] = [renamed.get(x, x) for x in node.input]
        onnx.save(model, graph)
    got = find_source(lineage(folder), {"small-fp32": lineage(DEMO / "small-fp32")})
    assert got.name is None and "holds its weights" in got.why


def test_two_equal_sources_are_ambiguous_and_a_full_precision_tier_is_its_own_reference(tmp_path):
    twin = _copy("small-fp32", tmp_path)
    int4 = lineage(DEMO / "small-int4")
    got = find_source(int4, {"small-fp32": lineage(DEMO / "small-fp32"), "twin": lineage(twin)})
    assert got.name is None and "small-fp32 and twin alike" in got.why
    # the merged export has other graph files: the same layout decides
    got = find_source(int4, {"small-fp32": lineage(DEMO / "small-fp32"), "m": lineage(DEMO / "small-fp32-merged")})
    assert got.name == "small-fp32"
    assert find_source(lineage(DEMO / "small-fp32"), {}).name is None


def test_a_folder_with_no_graph_or_a_broken_one_is_one_line(tmp_path):
    with pytest.raises(MeasureError, match=r"no \.onnx graph"):
        lineage(tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"\xff\xff not protobuf")
    with pytest.raises(MeasureError, match=r"model\.onnx: not a readable ONNX model"):
        lineage(tmp_path)
