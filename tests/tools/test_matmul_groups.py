"""MatMul groups read from the names exporters write: the demo's graphs and the names of real exports."""

from __future__ import annotations

from collections import Counter

import onnx
import pytest
from onnx import TensorProto, helper

from measure import bundled
from measure.tools.matmul_groups import graph_matmuls, group_of, weight_matmuls

LM = bundled.CONFIG.parent


def _counts(path) -> Counter[tuple[str, int | None]]:
    return Counter((m.group, m.layer) for m in graph_matmuls(path))


def test_an_optimum_decoder_only_export_splits_into_attention_mlp_and_head():
    """lm-small-fp32 (optimum, Llama-like, 2 layers): q/k/v/o and gate/up/down per layer, one LM head; the
    attention-score and rotary MatMuls (no stored weight) are in no group."""
    assert _counts(LM / "lm-small-fp32" / "model.onnx") == {
        ("attention", 0): 4,
        ("attention", 1): 4,
        ("mlp", 0): 3,
        ("mlp", 1): 3,
        ("lm_head", None): 1,
    }
    names = [m.node for m in graph_matmuls(LM / "lm-small-fp32" / "model.onnx")]
    assert "/model/rotary_emb/MatMul" not in names and "/model/layers.0/self_attn/MatMul" not in names
    assert names[-1] == "/lm_head/MatMul"


def test_the_demo_seq2seq_graphs_have_layers_and_a_head():
    """small-fp32: the encoder's enc.N blocks; the decoder's dec.N blocks (self and cross attention, ff), its
    cross-attention keys and values precomputed from the encoder output without a layer index, and /head/."""
    assert _counts(bundled.SMALL_FP32 / "encoder.onnx") == {
        ("attention", 0): 4,
        ("attention", 1): 4,
        ("mlp", 0): 2,
        ("mlp", 1): 2,
    }
    assert _counts(bundled.SMALL_FP32 / "decoder-kv.onnx") == {
        ("attention", None): 4,
        ("attention", 0): 6,
        ("attention", 1): 6,
        ("mlp", 0): 2,
        ("mlp", 1): 2,
        ("lm_head", None): 1,
    }


@pytest.mark.parametrize(
    ("name", "group", "layer"),
    [
        ("/model/layers.3/self_attn/q_proj/MatMul", "attention", 3),
        ("/model/layers.12/mlp/down_proj/MatMul", "mlp", 12),
        ("/lm_head/MatMul", "lm_head", None),
        ("/transformer/h.3/attn/c_proj/MatMul", "attention", 3),  # GPT-2: the block decides, not c_proj
        ("/transformer/h.3/mlp/c_proj/MatMul", "mlp", 3),
        ("/encoder/block.1/layer.0/SelfAttention/q/MatMul", "attention", 1),  # T5: block.N, not layer.N
        ("/decoder/block.2/layer.2/DenseReluDense/wi/MatMul", "mlp", 2),
        ("/model/decoder/layers.2/encoder_attn/k_proj/MatMul", "attention", 2),  # BART
        ("/model/decoder/layers.2/fc1/MatMul", "mlp", 2),
        ("model.layers.5.self_attn.v_proj.weight", "attention", 5),  # a weight name, dotted
        ("/dec.1/q_1/MatMul", "attention", 1),  # the demo's repeated module
        ("/dec.1/ff/ff.2/MatMul", "mlp", 1),
        ("/model/embed_tokens/Gather", "other", None),
    ],
)
def test_group_of_names_from_real_exports(name, group, layer):
    assert group_of(name) == (group, layer)


def test_a_graph_with_unhelpful_node_names_is_grouped_by_its_weights_and_branches_are_read():
    """A node named ``MatMul_7`` says nothing; its weight ``model.layers.1.mlp.up_proj.weight`` does. A MatMul
    inside an If branch reading the outer graph's weight counts, as the int4 quantizer reaches it."""
    w = helper.make_tensor("model.layers.1.mlp.up_proj.weight", TensorProto.FLOAT, [2, 2], [1, 0, 0, 1])
    h = helper.make_tensor("lm_head.weight", TensorProto.FLOAT, [2, 2], [1, 0, 0, 1])
    then = helper.make_graph(
        [helper.make_node("MatMul", ["x", "lm_head.weight"], ["y1"], name="/lm_head/MatMul")],
        "then",
        [],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [1, 2])],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y2"])],
        "else",
        [],
        [helper.make_tensor_value_info("y2", TensorProto.FLOAT, [1, 2])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "model.layers.1.mlp.up_proj.weight"], ["a"], name="MatMul_7"),
            helper.make_node("MatMul", ["x", "a"], ["b"], name="/model/layers.1/self_attn/MatMul"),
            helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
        ],
        "g",
        [
            helper.make_tensor_value_info(n, t, s)
            for n, t, s in (("x", TensorProto.FLOAT, [1, 2]), ("c", TensorProto.BOOL, []))
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
        initializer=[w, h],
    )
    found = weight_matmuls(helper.make_model(graph), "g.onnx")
    assert [(m.node, m.group, m.layer) for m in found] == [
        ("MatMul_7", "mlp", 1),
        ("/lm_head/MatMul", "lm_head", None),
    ]
    onnx.checker.check_model(helper.make_model(graph))
