"""Where a recipe's error enters, on the demo's decoder-only model: units partition the MatMuls, a layer made lossy
on purpose ranks first, and the recipe that keeps it is built and judged.

The lossy layer is built, not found: one weight of layer 0's MLP is made 60x the largest in its tensor, so
per-tensor int8 gives the rest of that tensor two or three levels (what any CPU's kernels then decode differs,
but not which layer the error enters by: the constructed error is orders of magnitude above the others).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from measure import bundled
from measure.cli import main
from measure.suites.golden import head, load_golden
from measure.tools.locate import alone, keeping, locate, units
from measure.tools.matmul_groups import graph_matmuls
from measure.tools.recipes import resolve_recipe

LM = bundled.DEMO_DIR / "lm-small-fp32"
LOSSY = "/model/layers.0/mlp/down_proj/MatMul"


@pytest.fixture(scope="module")
def lossy(tmp_path_factory):
    """lm-small-fp32 with one outlier weight in layer 0's MLP down projection."""
    out = tmp_path_factory.mktemp("lossy") / "lm-lossy-fp32"
    shutil.copytree(LM, out)
    model = onnx.load(out / "model.onnx")
    node = next(n for n in model.graph.node if n.name == LOSSY)
    init = next(i for i in model.graph.initializer if i.name == node.input[1])
    w = numpy_helper.to_array(init).copy()
    w.flat[0] = 60 * np.abs(w).max()
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(model, out / "model.onnx")
    return out


def test_each_axis_partitions_every_weight_matmul_once():
    matmuls = graph_matmuls(LM / "model.onnx")
    every = sorted(m.node for m in matmuls)
    for axis in ("group", "layer"):
        found = [n for u in units(matmuls, (axis,)) for n in u.nodes]
        assert sorted(found) == every, axis
    names = [u.name for u in units(matmuls, ("layer",))]
    assert names == ["layer 0", "layer 1", "lm_head"]


def test_a_unit_alone_quantizes_exactly_its_nodes_and_keeping_it_keeps_exactly_them():
    matmuls = graph_matmuls(LM / "model.onnx")
    every = tuple(m.node for m in matmuls)
    recipe = resolve_recipe("int8")
    (layer0,) = [u for u in units(matmuls, ("layer",)) if u.name == "layer 0"]
    only = alone(recipe, layer0, every)
    assert set(only.keep.kept(matmuls)) == set(every) - set(layer0.nodes)
    assert set(keeping(recipe, layer0).keep.kept(matmuls)) == set(layer0.nodes)
    assert keeping(recipe, layer0).keep.layers == (0,)


def test_a_layer_made_lossy_on_purpose_ranks_first_and_keeping_it_helps(lossy):
    golden = head(load_golden(bundled.GOLDEN), 3)
    found = locate(lossy, resolve_recipe("int8"), golden)
    by_layer = found.ranking["layer"]
    assert by_layer[0].unit.name == "layer 0" and by_layer[0].share > 0.9
    assert found.ranking["group"][0].unit.name == "mlp"
    assert abs(sum(e.share for e in by_layer) - 1) < 1e-9
    tried = {t.keeps.name: t for t in found.tried}
    assert set(tried) == {"mlp", "layer 0"}
    for t in tried.values():  # the constructed error is gone with the unit that carries it
        assert t.divergence.kld_mean < found.whole.kld_mean / 10
    assert found.whole.positions == by_layer[0].divergence.positions > 0


def test_the_verb_prints_the_ranking_and_strict_json(lossy, capsys):
    before = sorted(p.name for p in lossy.parent.rglob("*"))
    assert main(["locate", str(lossy), "--recipe", "int8", "--rows", "2", "--axis", "layer", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert next(u["unit"] for u in doc["ranking"]["layer"]) == "layer 0"
    assert doc["recipe"]["name"] == "int8" and doc["rows"] == 2
    assert sorted(p.name for p in lossy.parent.rglob("*")) == before  # nothing written beside the reference


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--recipe", "int9"], "int9"),
        (["--recipe", "int8", "--rows", "0"], "--rows 0: expected 1 to 10000"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys):
    assert main(["locate", str(LM), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_quantized_reference_is_refused(capsys):
    assert main(["locate", str(bundled.DEMO_DIR / "lm-small-int4"), "--recipe", "int8"]) == 2
    assert "not full precision" in capsys.readouterr().err
