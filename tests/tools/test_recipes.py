"""Recipes as data: the named ones, recipe files parsed strictly, and the MatMuls a recipe keeps."""

from __future__ import annotations

import pytest

from measure import bundled
from measure.errors import MeasureError
from measure.tools.matmul_groups import graph_matmuls
from measure.tools.recipes import NAMED, Keep, Recipe, load_recipe_file, parse_recipe, resolve_recipe

LM_MODEL = bundled.CONFIG.parent / "lm-small-fp32" / "model.onnx"


def test_the_to_targets_are_named_recipes_with_their_settings():
    """``--to int8`` is dynamic per-tensor, ``int8-static`` MinMax QDQ per-tensor, ``int4`` MatMulNBits block 32
    symmetric with its accuracy level unset: what ``measure quantize --to`` always made."""
    assert NAMED["int8"] == Recipe("int8", "dynamic-int8", bits=8, per_channel=False, symmetric=True)
    assert NAMED["int8-static"] == Recipe("int8-static", "static-int8", calibrate_method="MinMax")
    assert NAMED["int4"] == Recipe("int4", "matmul-nbits", bits=4, block_size=32, symmetric=True, accuracy_level=None)
    assert NAMED["int8-nbits"].bits == 8 and NAMED["int8-nbits"].accuracy_level == 4
    assert NAMED["int8-nbits-level0"].accuracy_level == 0
    assert NAMED["int8-per-channel"].per_channel and not NAMED["int4-asym"].symmetric
    assert NAMED["int4-level4"].accuracy_level == 4


@pytest.mark.parametrize("name", list(NAMED))
def test_a_recipe_reads_back_from_what_tier_json_stores(name):
    recipe = NAMED[name]
    assert parse_recipe(recipe.to_dict(), "tier.json: quantization.recipe") == recipe


def test_a_recipe_file_starts_from_a_base_and_keeps_groups(tmp_path):
    path = tmp_path / "Head-Kept.toml"
    path.write_text('base = "int8-nbits"\naccuracy_level = 0\n[keep]\ngroups = ["lm_head"]\nlast = 1\n')
    recipe = load_recipe_file(path)
    assert recipe.name == "head-kept"  # the file's stem, lower case
    assert (recipe.method, recipe.bits, recipe.block_size, recipe.accuracy_level) == ("matmul-nbits", 8, 32, 0)
    assert recipe.keep == Keep(groups=("lm_head",), last=1)
    assert parse_recipe(recipe.to_dict(), "x") == recipe
    assert resolve_recipe(str(path)) == recipe and resolve_recipe("int4") is NAMED["int4"]


def test_a_full_recipe_file(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(
        'name = "q4-b64"\nmethod = "matmul-nbits"\nbits = 4\nblock_size = 64\nsymmetric = false\naccuracy_level = 4\n'
        '[keep]\nlayers = [0]\nnodes = ["/lm_head/MatMul"]\n'
    )
    recipe = load_recipe_file(path)
    assert recipe == Recipe(
        "q4-b64",
        "matmul-nbits",
        4,
        block_size=64,
        symmetric=False,
        accuracy_level=4,
        keep=Keep(layers=(0,), nodes=("/lm_head/MatMul",)),
    )
    assert "block 64, accuracy 4, asymmetric" in recipe.label and "layer 0" in recipe.label


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('method = "dynamic-int8"\nper_chanel = true\n', ("key per_chanel", "unknown")),
        ('method = "matmul-nbits"\nbits = 4\nblock_size = 512\n', ("key block_size", "16, 32, 64, 128, 256", "512")),
        ('method = "matmul-nbits"\nbits = 4\nblock_size = 24\n', ("key block_size", "got 24")),
        ('method = "matmul-nbits"\nbits = 3\n', ("key bits", "4, 8", "got 3")),
        ('method = "matmul-nbits"\n', ("key bits", "missing")),
        ('method = "dynamic-int8"\nbits = 4\n', ("key bits", "expected one of 8")),
        ('method = "dynamic-int8"\nblock_size = 32\n', ("key block_size", "only for method matmul-nbits")),
        ('method = "matmul-nbits"\nbits = 4\nper_channel = true\n', ("key per_channel", "only for method")),
        ('method = "int2"\n', ("key method", "dynamic-int8, static-int8, matmul-nbits")),
        ("bits = 8\n", ("key method", "missing")),
        ('method = "matmul-nbits"\nbits = true\n', ("key bits", "expected an integer")),
        ('method = "matmul-nbits"\nbits = 4\naccuracy_level = 5\n', ("key accuracy_level", "got 5")),
        ('base = "int9"\n', ("key base", "no recipe named 'int9'")),
        ('base = "int8"\nmethod = "matmul-nbits"\n', ("key method", "already sets it")),
        ('name = "../up"\nmethod = "dynamic-int8"\n', ("key name",)),
        ('method = "static-int8"\ncalibrate_method = "Guess"\n', ("key calibrate_method", "MinMax")),
        ('method = "static-int8"\ncalibration_rows = 0\n', ("key calibration_rows", "at least 1")),
        ('method = "dynamic-int8"\n[keep]\ngroups = ["embeddings"]\n', ("keep.groups", "attention, mlp, lm_head")),
        ('method = "dynamic-int8"\n[keep]\nfirst = -1\n', ("keep.first", "at least 0")),
        ('method = "dynamic-int8"\n[keep]\nlayer = [1]\n', ("keep.layer", "unknown key")),
        ('method = "dynamic-int8"\nkeep = "lm_head"\n', ("key keep", "expected a table")),
        ('method = "dynamic-int8"\n[keep]\nnodes = [""]\n', ("keep.nodes", "non-empty strings")),
        ('method = "dynamic-int8\n', ("not valid TOML",)),
    ],
)
def test_a_bad_recipe_file_is_one_line_naming_the_file_and_key(tmp_path, text, names):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(MeasureError) as err:
        load_recipe_file(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)), message
    for name in names:
        assert name in message, message


def test_unknown_names_and_missing_files():
    with pytest.raises(MeasureError, match=r"no recipe named 'int2'; expected one of int8, int8-static, int4"):
        resolve_recipe("int2")
    with pytest.raises(MeasureError, match=r"missing\.toml: no such recipe file"):
        resolve_recipe("missing.toml")


def test_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "r.toml"
    path.write_bytes(b'method = "\xff"\n')
    with pytest.raises(MeasureError, match=r"r\.toml: not UTF-8"):
        load_recipe_file(path)


def test_keep_picks_groups_layers_first_last_and_nodes():
    matmuls = graph_matmuls(LM_MODEL)
    by = {m.node: m for m in matmuls}

    def kept(**kw) -> set[tuple[str, int | None]]:
        return {(by[n].group, by[n].layer) for n in Keep(**kw).kept(matmuls)}

    assert kept(groups=("lm_head",)) == {("lm_head", None)}
    assert kept(groups=("attention",)) == {("attention", 0), ("attention", 1)}
    assert kept(first=1) == {("attention", 0), ("mlp", 0)}
    assert kept(last=1) == kept(layers=(1,)) == {("attention", 1), ("mlp", 1)}
    assert kept(first=5) == kept(layers=(0, 1))  # more than there are: all of them
    assert Keep(nodes=("/model/layers.0/mlp/up_proj/MatMul",)).kept(matmuls) == ("/model/layers.0/mlp/up_proj/MatMul",)
    assert len(Keep(groups=("mlp",), layers=(0,)).kept(matmuls)) == 3 + 3 + 4  # a MatMul counts once
    assert Keep().kept(matmuls) == () and not Keep()
    assert Keep(layers=(7,), nodes=("/nope",)).unmatched(matmuls) == ["keep.layers: 7", "keep.nodes: '/nope'"]
