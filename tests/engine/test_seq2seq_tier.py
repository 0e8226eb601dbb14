"""Loading tiers in each layout, discovering their shape from the graphs, and every loader error."""

from __future__ import annotations

import json
import shutil

import onnx
import pytest

from measure import bundled
from measure.engine.load import load_tier
from measure.errors import MeasureError


def test_shape_is_discovered_from_the_graphs(base_fp32, small_fp32):
    assert base_fp32.layout == "simple"
    assert (base_fp32.shape.layers, base_fp32.shape.heads, base_fp32.shape.head_dim) == (3, 4, 32)
    assert (small_fp32.shape.layers, small_fp32.shape.heads, small_fp32.shape.head_dim) == (2, 4, 16)
    assert base_fp32.shape.vocab_size == base_fp32.tokenizer.vocab_size()


def test_special_ids_come_from_metadata(base_fp32):
    meta = json.loads((bundled.REFERENCE / "tier.json").read_text())
    assert base_fp32.special.eos == meta["eos_token_id"]
    assert base_fp32.special.decoder_start == meta["decoder_start_token_id"]
    assert base_fp32.max_source_tokens == meta["max_source_tokens"]


@pytest.mark.parametrize(
    "folder,layout", [(bundled.SMALL_OPTIMUM, "optimum"), (bundled.SMALL_MERGED, "optimum-merged")]
)
def test_optimum_layouts_decode_like_the_simple_layout(folder, layout, small_fp32, golden):
    tier = load_tier(folder)
    assert tier.layout == layout
    assert tier.shape == small_fp32.shape
    for row in golden.rows:
        assert tier.greedy(row.input).tokens == small_fp32.greedy(row.input).tokens, row.input


def test_missing_graph_is_named(tier_copy):
    folder = tier_copy(bundled.REFERENCE)
    (folder / "decoder-kv.onnx").unlink()
    with pytest.raises(MeasureError, match=r"missing model graphs: expected encoder_model\.onnx.*found encoder\.onnx"):
        load_tier(folder)


def test_not_a_folder(tmp_path):
    with pytest.raises(MeasureError, match="not a folder"):
        load_tier(tmp_path / "nothing-here")


def test_unknown_input_name_lists_what_was_found(tier_copy):
    folder = tier_copy(bundled.SMALL_FP32)
    model = onnx.load(str(folder / "decoder-kv.onnx"))
    old = "encoder_attention_mask"
    for inp in model.graph.input:
        if inp.name == old:
            inp.name = "position_bias"
    for node in model.graph.node:
        node.input[:] = ["position_bias" if n == old else n for n in node.input]
    onnx.save(model, str(folder / "decoder-kv.onnx"))
    with pytest.raises(
        MeasureError,
        match=r"input 'position_bias' is not one the engine understands; found inputs: "
        r"input_ids, encoder_hidden_states, position_bias, past_key_0",
    ):
        load_tier(folder)


def test_tokenizer_larger_than_model_is_refused(tier_copy):
    folder = tier_copy(bundled.SMALL_FP32)
    doc = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    size = len(doc["model"]["vocab"])
    doc["model"]["vocab"].update({f"x{i}": size + i for i in range(10)})
    (folder / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(MeasureError, match=rf"tokenizer vocabulary has {size + 10} tokens but the model's logits have"):
        load_tier(folder)


def test_byte_tokenizer_is_checked_against_the_model(tier_copy):
    folder = tier_copy(bundled.SMALL_FP32)
    meta = json.loads((folder / "tier.json").read_text())
    (folder / "tier.json").write_text(json.dumps(meta | {"tokenizer": "bytes"}))
    with pytest.raises(MeasureError, match="tokenizer vocabulary has 259 tokens"):
        load_tier(folder)


def test_missing_tokenizer(tier_copy):
    folder = tier_copy(bundled.SMALL_FP32)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(MeasureError, match=r"no tokenizer: expected tokenizer\.json"):
        load_tier(folder)


def test_malformed_metadata_names_file_and_line(tier_copy):
    folder = tier_copy(bundled.SMALL_FP32)
    (folder / "tier.json").write_text('{\n  "name": "x",\n  oops\n}')
    with pytest.raises(MeasureError, match=r"tier\.json: line 3: not valid JSON"):
        load_tier(folder)


def test_hf_config_supplies_ids_and_tier_json_overrides(tier_copy):
    folder = tier_copy(bundled.SMALL_FP32)
    meta = json.loads((folder / "tier.json").read_text())
    (folder / "config.json").write_text(json.dumps({"eos_token_id": 7, "decoder_start_token_id": 5}))
    del meta["decoder_start_token_id"]
    (folder / "tier.json").write_text(json.dumps(meta))
    tier = load_tier(folder)
    assert tier.special.decoder_start == 5  # only config.json states it
    assert tier.special.eos == meta["eos_token_id"]  # tier.json wins


def test_empty_source_is_refused(base_fp32):
    with pytest.raises(MeasureError, match="empty source text"):
        base_fp32.greedy("   ")


def test_too_long_source_is_refused(base_fp32):
    with pytest.raises(MeasureError, match=r"source is 60 tokens .* this tier accepts at most 48"):
        base_fp32.greedy("а" * 60)


def test_unreadable_graph_is_one_line(tier_copy):
    folder = tier_copy(bundled.SMALL_FP32)
    (folder / "encoder.onnx").write_bytes(b"not a model")
    with pytest.raises(MeasureError, match=r"encoder\.onnx: onnxruntime cannot load this graph"):
        load_tier(folder)


def test_copies_of_a_tier_load_from_anywhere(tmp_path):
    dst = tmp_path / "elsewhere" / "tier"
    shutil.copytree(bundled.LITE, dst)
    assert load_tier(dst).fingerprint().precision == "int4"
