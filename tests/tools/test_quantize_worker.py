"""A recipe quantized in a process of its own is the recipe quantized in this one: the same bytes, the same
refusal, and every recipe's fields across the JSON between them."""

from __future__ import annotations

import json

import pytest

from measure import bundled
from measure.engine.fingerprint import sha256_file
from measure.errors import MeasureError
from measure.tools.quantize import quantize_recipe
from measure.tools.quantize_worker import quantize_apart, recipe_of, request
from measure.tools.recipes import NAMED, Keep, Recipe

LM = bundled.CONFIG.parent / "lm-small-fp32"


@pytest.mark.parametrize(
    "recipe",
    [
        *NAMED.values(),
        Recipe("kept", "matmul-nbits", bits=4, keep=Keep(groups=("lm_head",), layers=(0, 1), last=1, nodes=("/a",))),
    ],
    ids=lambda r: r.name,
)
def test_every_recipe_crosses_to_the_worker_whole(recipe, tmp_path):
    sent = json.loads(json.dumps(request(LM, tmp_path / "q", recipe, None)))
    assert recipe_of(sent["recipe"]) == recipe


def test_a_tier_quantized_apart_is_byte_for_byte_the_one_quantized_here(tmp_path):
    """Dynamic int8 and 8-bit MatMulNBits are deterministic: two paths of one quantizer, one machine, one result."""
    for name in ("int8", "int8-nbits"):
        here, apart = tmp_path / f"{name}-here", tmp_path / f"{name}-apart"
        quantize_recipe(LM, here, NAMED[name])
        quantize_apart(LM, apart, NAMED[name], None)
        assert sha256_file(apart / "model.onnx") == sha256_file(here / "model.onnx"), name
        meta = [json.loads((d / "tier.json").read_text())["quantization"] for d in (here, apart)]
        assert meta[0]["recipe"] == meta[1]["recipe"] == NAMED[name].to_dict()


def test_the_workers_refusal_is_the_quantizers_line(tmp_path):
    odd = Recipe("x", "dynamic-int8", keep=Keep(nodes=("/model/layer.0/MatMul",)))
    with pytest.raises(MeasureError) as here:
        quantize_recipe(LM, tmp_path / "here", odd)
    with pytest.raises(MeasureError) as apart:
        quantize_apart(LM, tmp_path / "apart", odd, None)
    assert str(apart.value) == str(here.value)
    assert not (tmp_path / "apart").exists()
