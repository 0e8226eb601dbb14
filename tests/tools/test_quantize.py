"""Quantization as a measure function: real onnxruntime quantizers, real graphs, fingerprinted output."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from measure import bundled
from measure.engine.fingerprint import sha256_file
from measure.engine.load import load_tier
from measure.errors import MeasureError
from measure.suites.golden import load_golden
from measure.tools.matmul_groups import graph_matmuls
from measure.tools.quantize import quantize_recipe, quantize_tier
from measure.tools.recipes import NAMED, Keep, Recipe, parse_recipe


def _same_model(tier, golden) -> None:
    """The quantized tier is the fp32 model it came from, without asserting what it decodes (that depends on
    the CPU's int8 kernels): it decodes every row to an end, and on the fp32 tier's own greedy prefixes its
    next-token logits follow the fp32 ones (correlation per step; about 0.999 here, near 0 for broken weights)."""
    source = load_tier(bundled.SMALL_FP32)
    found = []
    for row in golden.rows[:16]:
        decoded = tier.greedy(row.input)
        assert decoded.stopped in ("eos", "max_new_tokens") and all(
            0 <= t < tier.shape.vocab_size for t in decoded.tokens
        )
        ids = source.source_ids(row.input)
        prefix = [source.special.decoder_start, *source.greedy(row.input).tokens]
        a, b = source.feed_prefix(ids, prefix, 1)[0], tier.feed_prefix(ids, prefix, 1)[0]
        found += [float(np.corrcoef(x, y)[0, 1]) for x, y in zip(a, b, strict=True)]
    assert np.mean(found) > 0.95, np.mean(found)


def test_int8_quantization_writes_a_working_dynamic_int8_tier(tmp_path, golden):
    out = quantize_tier(bundled.SMALL_FP32, tmp_path / "q8", "int8")
    tier = load_tier(out)
    fp = tier.fingerprint()
    assert fp.precision == "int8-dynamic"
    assert fp.total_bytes < load_tier(bundled.SMALL_FP32).fingerprint().total_bytes / 2
    meta = json.loads((out / "tier.json").read_text())
    assert meta["quantization"]["method"] == "onnxruntime.quantize_dynamic"
    assert meta["quantization"]["from"] == "small-fp32"
    _same_model(tier, golden)


def test_int4_quantization_records_bits_and_block(tmp_path):
    out = quantize_tier(bundled.SMALL_FP32, tmp_path / "q4", "int4", block_size=16)
    fp = load_tier(out).fingerprint()
    assert fp.precision == "int4"
    assert {g.nbits["block_size"] for g in fp.graphs} == {16}
    assert json.loads((out / "tier.json").read_text())["quantization"]["block_size"] == 16


def test_int8_static_calibrates_on_recorded_decode_feeds(tmp_path, golden):
    out = quantize_tier(
        bundled.SMALL_FP32, tmp_path / "q8s", "int8-static", calibration=bundled.CALIBRATION, calibration_rows=8
    )
    tier = load_tier(out)
    assert tier.fingerprint().precision == "int8-static"
    q = json.loads((out / "tier.json").read_text())["quantization"]
    assert q["method"] == "onnxruntime.quantize_static" and q["format"] == "QDQ"
    cal = q["calibration"]
    assert cal["sha256"] == load_golden(bundled.CALIBRATION).sha256
    assert cal["rows"] == 8 and cal["file"] == "calibration-v1.jsonl"
    assert cal["feeds"]["encoder.onnx"] == 8
    assert cal["feeds"]["decoder-kv.onnx"] > 8 * 3  # one feed per decoded token, eos included
    _same_model(tier, golden)


def test_int8_static_is_reproducible_from_the_same_calibration(tmp_path):
    a, b = (
        quantize_tier(
            bundled.SMALL_FP32, tmp_path / n, "int8-static", calibration=bundled.CALIBRATION, calibration_rows=4
        )
        for n in ("a", "b")
    )
    assert sha256_file(a / "decoder-kv.onnx") == sha256_file(b / "decoder-kv.onnx")
    assert sha256_file(a / "encoder.onnx") == sha256_file(b / "encoder.onnx")


def test_int8_static_covers_every_graph_of_the_optimum_layout(tmp_path):
    out = quantize_tier(
        bundled.SMALL_OPTIMUM, tmp_path / "oq8s", "int8-static", calibration=bundled.CALIBRATION, calibration_rows=4
    )
    assert [g.precision for g in load_tier(out).fingerprint().graphs] == ["int8-static"] * 3
    feeds = json.loads((out / "tier.json").read_text())["quantization"]["calibration"]["feeds"]
    assert feeds["decoder_model.onnx"] == 4  # the first step of each decode
    assert feeds["decoder_with_past_model.onnx"] > 4


def test_int8_static_refuses_missing_or_bad_calibration(tmp_path):
    with pytest.raises(MeasureError, match="int8-static needs a calibration rows file"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int8-static")
    with pytest.raises(MeasureError, match="only int8-static takes one"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int8", calibration=bundled.CALIBRATION)
    with pytest.raises(MeasureError, match=r"expected 1 to 32 \(the rows in .*calibration-v1.jsonl\), got 99"):
        quantize_tier(
            bundled.SMALL_FP32, tmp_path / "x", "int8-static", calibration=bundled.CALIBRATION, calibration_rows=99
        )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "слово", "output": "slovo"}\n{"input": 3}\n', encoding="utf-8")
    with pytest.raises(MeasureError, match=r"bad.jsonl:2: field .input.: expected a string"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int8-static", calibration=bad)
    assert not (tmp_path / "x").exists()  # nothing written before the calibration is known good


def test_bundled_static_tier_states_its_calibration_truthfully(golden):
    q = json.loads((bundled.PLAIN_STATIC / "tier.json").read_text())["quantization"]
    cal = load_golden(bundled.CALIBRATION)
    assert q["calibration"]["sha256"] == cal.sha256 and q["calibration"]["rows"] == len(cal)
    assert q["from"] == "base-fp32"
    assert not {r.input for r in cal.rows} & {r.input for r in golden.rows}  # never calibrated on what it is judged on


def test_optimum_layout_quantizes_every_graph(tmp_path):
    out = quantize_tier(bundled.SMALL_OPTIMUM, tmp_path / "oq8", "int8")
    fp = load_tier(out).fingerprint()
    assert [g.precision for g in fp.graphs] == ["int8-dynamic"] * 3


def test_refuses_a_non_empty_output_folder(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    with pytest.raises(MeasureError, match="output folder is not empty"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "busy", "int8")
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"


def test_refuses_unknown_target_and_bad_block(tmp_path):
    with pytest.raises(MeasureError, match="expected one of int8, int8-static, int4"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int2")
    with pytest.raises(MeasureError, match="power of two"):
        quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int4", block_size=24)
    for size in (8, 512, 2**40):  # MatMulNBits takes 16..256; 2**40 passed a power-of-two check and ended in 384 TiB
        with pytest.raises(MeasureError, match=r"--block-size: expected a power of two from 16 to 256"):
            quantize_tier(bundled.SMALL_FP32, tmp_path / "x", "int4", block_size=size)
    assert not (tmp_path / "x").exists()


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("to", ["int8", "int8-static", "int4"])
def test_quantize_never_writes_into_the_source_folder(tmp_path, monkeypatch, to):
    """onnxruntime's dynamic quantizer wrote ``<graph>-inferred.onnx`` beside the graph it was given and removed
    it after: a user's file of that name went with it, and a read-only source folder failed naming the output.
    Quantize gives the quantizers a private copy: the source's listing and bytes stay as they were, and even
    their temporary models stay inside the output's staging folder."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    calibration = bundled.DEMO_DIR / "calibration-v1.jsonl" if to == "int8-static" else None
    src = tmp_path / "src"
    shutil.copytree(bundled.SMALL_FP32, src)
    (src / "decoder-kv-inferred.onnx").write_bytes(b"the user's own file")
    (src / "encoder-inferred.onnx").write_bytes(b"another")
    before = _listing(src)
    modes = {p: p.stat().st_mode for p in [src, *src.iterdir()]}
    for path in [*src.iterdir(), src]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        out = quantize_tier(
            src, tmp_path / "q", to, calibration=calibration, calibration_rows=2 if calibration else None
        )
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    assert _listing(src) == before
    assert sorted(p.name for p in out.iterdir()) == ["decoder-kv.onnx", "encoder.onnx", "tier.json", "tokenizer.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q", "src", "system-tmp"]  # no staging folder left
    assert list(system_tmp.iterdir()) == [] and tempfile.tempdir == str(system_tmp)  # restored after
    assert load_tier(out).fingerprint().precision in ("int8-dynamic", "int8-static", "int4")


LM = bundled.CONFIG.parent


def _lm_same_model(tier, golden) -> None:
    """A quantized decoder-only tier is the fp32 model it came from: on lm-base-fp32's own greedy prefixes its
    next-token logits follow the fp32 ones (correlation per step), whatever either decodes on this CPU."""
    source = load_tier(LM / "lm-base-fp32")
    found = []
    for row in golden.rows[:8]:
        ids = source.source_ids(row.input)
        tokens = source.greedy(row.input).tokens
        a, b = source.feed_prefix(ids, tokens, 1)[0], tier.feed_prefix(ids, tokens, 1)[0]
        found += [float(np.corrcoef(x, y)[0, 1]) for x, y in zip(a, b, strict=True)]
    assert np.mean(found) > 0.95, np.mean(found)


@pytest.mark.parametrize(("to", "precision"), [("int8", "int8-dynamic"), ("int4", "int4")])
def test_a_decoder_only_tier_quantizes_as_a_seq2seq_one(tmp_path, golden, to, precision):
    """optimum's model.onnx: the graph quantized, the prompt and special ids kept, the settings in tier.json."""
    out = quantize_tier(LM / "lm-base-fp32", tmp_path / "q", to, block_size=16)
    tier = load_tier(out)
    assert tier.kind == "causal" and tier.fingerprint().precision == precision
    meta = json.loads((out / "tier.json").read_text())
    assert meta["quantization"]["from"] == "lm-base-fp32"
    assert meta["model"] == "lm-base"  # the model its source exports: the Overview's one ship line for both
    assert meta["prompt"] == "{input}=" and meta["bos_token_id"] == 3
    assert {(out / f).is_file() for f in ("config.json", "generation_config.json", "tokenizer.json")} == {True}
    if to == "int4":
        assert meta["quantization"]["block_size"] == 16 and meta["quantization"]["accuracy_level"] == 0
    _lm_same_model(tier, golden)


def test_int4_accuracy_level_reaches_the_graph(tmp_path):
    out = quantize_tier(LM / "lm-small-fp32", tmp_path / "q", "int4", block_size=32, accuracy_level=4)
    assert {g.nbits["accuracy_level"] for g in load_tier(out).fingerprint().graphs} == {4}
    with pytest.raises(MeasureError, match=r"--accuracy-level: expected one of 0, 1, 2, 3, 4 .*got 7"):
        quantize_tier(LM / "lm-small-fp32", tmp_path / "x", "int4", accuracy_level=7)
    with pytest.raises(MeasureError, match="only with --to int4"):
        quantize_tier(LM / "lm-small-fp32", tmp_path / "x", "int8", accuracy_level=4)


@pytest.mark.parametrize(
    ("layout", "to", "precision"),
    [("lm-small-fp32-split", "int8", "int8-dynamic"), ("lm-small-fp32-merged", "int4", "int4")],
)
def test_the_older_decoder_only_layouts_quantize_every_graph(tmp_path, layout, to, precision):
    out = quantize_tier(LM / layout, tmp_path / "q", to)
    tier = load_tier(out)
    assert tier.layout == load_tier(LM / layout).layout
    assert {g.precision for g in tier.fingerprint().graphs} == {precision}


@pytest.mark.parametrize("layout", ["lm-small-fp32-merged", "small-fp32-merged"])
def test_a_merged_decoder_the_int8_quantizer_leaves_in_fp32_is_refused(tmp_path, layout):
    """onnxruntime's int8 quantizers skip a merged decoder's If branches: refused, never a tier labelled int8
    that holds fp32 (the int4 quantizer does reach them)."""
    with pytest.raises(MeasureError, match=r"decoder_model_merged.onnx: .* left every MatMul in fp32.*split layout"):
        quantize_tier(LM / layout, tmp_path / "q", "int8")
    assert not (tmp_path / "q").exists()


def test_decoder_only_static_int8_calibrates_on_the_prompts(tmp_path):
    out = quantize_tier(
        LM / "lm-base-fp32", tmp_path / "q", "int8-static", calibration=bundled.CALIBRATION, calibration_rows=4
    )
    assert load_tier(out).fingerprint().precision == "int8-static"
    cal = json.loads((out / "tier.json").read_text())["quantization"]["calibration"]
    assert cal["rows"] == 4 and cal["max_new_tokens"] == 16
    assert 4 < cal["feeds"]["model.onnx"] <= 4 * 17  # each prompt's prefill, then at most 16 steps


def test_a_folder_of_neither_kind_is_one_line_that_names_what_it_found(tmp_path):
    """The message names what each kind needs and what is there, and never lists a found file as missing."""
    folder = tmp_path / "odd"
    folder.mkdir()
    (folder / "decoder_model.onnx").write_bytes(b"")
    with pytest.raises(MeasureError) as err:
        quantize_tier(folder, tmp_path / "x", "int8")
    message = str(err.value)
    assert "\n" not in message and message.endswith("found decoder_model.onnx")
    assert "decoder-only tier model.onnx" in message
    with pytest.raises(MeasureError, match="onnxruntime-genai folder"):
        quantize_tier(LM / "genai-base-fp32", tmp_path / "x", "int4")


# ---- recipes


def _ops_by_group(folder: Path, source: Path) -> dict[tuple[str, str, int | None], list[str]]:
    """The output graph's op type for every weight MatMul of the source, by (graph, group, layer): the quantizers
    rename what they quantize (``_quant``, ``_Q4``, ``_Q8``) and leave a kept MatMul's name and type alone."""
    import onnx

    found: dict[tuple[str, str, int | None], list[str]] = {}
    for graph in sorted(p.name for p in source.glob("*.onnx")):
        groups = {m.node: (graph, m.group, m.layer) for m in graph_matmuls(source / graph)}
        for node in onnx.load(str(folder / graph), load_external_data=False).graph.node:
            name = re.sub(r"_(quant|Q4|Q8)$", "", node.name)
            if name in groups and node.op_type in ("MatMul", "MatMulInteger", "MatMulNBits"):
                found.setdefault(groups[name], []).append(node.op_type)
    return found


@pytest.mark.parametrize(
    ("source", "base", "keep", "kept"),
    [
        (LM / "lm-small-fp32", "int8-nbits", Keep(groups=("lm_head",)), {("model.onnx", "lm_head", None)}),
        (
            LM / "lm-small-fp32",
            "int8",
            Keep(layers=(1,)),
            {("model.onnx", "attention", 1), ("model.onnx", "mlp", 1)},
        ),
        (
            bundled.SMALL_FP32,
            "int4",
            Keep(groups=("attention",), first=0),
            {(g, "attention", i) for g in ("encoder.onnx", "decoder-kv.onnx") for i in (0, 1)}
            | {("decoder-kv.onnx", "attention", None)},
        ),
        (bundled.SMALL_FP32, "int8", Keep(groups=("mlp",), last=1), None),
    ],
)
def test_a_group_kept_in_fp32_changes_exactly_that_groups_nodes(tmp_path, source, base, keep, kept):
    """The same recipe with and without a keep: the kept group's MatMuls stay MatMul, every other group's op types
    are those of the recipe without the keep, and tier.json lists what was kept."""
    plain = quantize_recipe(source, tmp_path / "plain", NAMED[base])
    recipe = replace(NAMED[base], name="kept", keep=keep)
    out = quantize_recipe(source, tmp_path / "kept", recipe)
    a, b = _ops_by_group(plain, source), _ops_by_group(out, source)
    assert a.keys() == b.keys()
    changed = {k for k in a if a[k] != b[k]}
    if kept is None:  # the mlp group and everything in the last layer of each graph
        kept = {k for k in a if k[1] == "mlp" or k[2] == 1}
    assert changed == kept
    assert all(set(b[k]) == {"MatMul"} for k in kept) and all("MatMul" not in a[k] for k in a)
    q = json.loads((out / "tier.json").read_text())["quantization"]
    assert q["recipe"] == recipe.to_dict() and q["recipe"]["keep"]
    assert sum(len(v) for v in q["kept"].values()) == sum(len(b[k]) for k in kept)
    assert load_tier(out).fingerprint().precision == load_tier(plain).fingerprint().precision


@pytest.mark.parametrize("name", list(NAMED))
@pytest.mark.parametrize("source", [LM / "lm-small-fp32", bundled.SMALL_FP32], ids=["decoder-only", "seq2seq"])
def test_every_named_recipe_builds_a_loadable_tier(tmp_path, golden, name, source):
    """Loaded, fingerprinted and decoding one row to an end (what it decodes is the CPU's business); tier.json
    records the whole recipe, which reads back as the same recipe."""
    recipe = NAMED[name]
    calibration = bundled.CALIBRATION if recipe.method == "static-int8" else None
    out = quantize_recipe(
        source, tmp_path / name, replace(recipe, calibration_rows=2) if calibration else recipe, calibration=calibration
    )
    tier = load_tier(out)
    precision = {"dynamic-int8": "int8-dynamic", "static-int8": "int8-static"}.get(recipe.method, f"int{recipe.bits}")
    assert tier.fingerprint().precision == precision
    assert tier.greedy(golden.rows[0].input).stopped in ("eos", "max_new_tokens")
    q = json.loads((out / "tier.json").read_text())["quantization"]
    assert parse_recipe(q["recipe"], "tier.json") == (replace(recipe, calibration_rows=2) if calibration else recipe)
    assert q["from"] == source.name
    if recipe.method == "matmul-nbits":
        assert {
            (g.nbits["bits"], g.nbits["block_size"], g.nbits["accuracy_level"]) for g in tier.fingerprint().graphs
        } == {(recipe.bits, recipe.block_size, recipe.accuracy_level or 0)}


def test_to_writes_the_settings_it_always_wrote_and_the_recipe(tmp_path):
    """``--to int8`` and ``--to int4`` record what they recorded before (the bundled tiers were made so), and the
    recipe beside it."""
    for to, bundled_tier in (("int8", "small-int8"), ("int4", "small-int4")):
        q = json.loads((quantize_tier(bundled.SMALL_FP32, tmp_path / to, to) / "tier.json").read_text())["quantization"]
        before = json.loads((bundled.DEMO_DIR / bundled_tier / "tier.json").read_text())["quantization"]
        assert {k: v for k, v in q.items() if k != "recipe"} == before
        assert q["recipe"] == NAMED[to].to_dict()
    q = json.loads(
        (
            quantize_tier(bundled.SMALL_FP32, tmp_path / "b16", "int4", block_size=16, accuracy_level=4) / "tier.json"
        ).read_text()
    )["quantization"]
    assert q["recipe"] == replace(NAMED["int4"], block_size=16, accuracy_level=4).to_dict()


def test_a_source_that_is_not_full_precision_is_refused(tmp_path):
    with pytest.raises(MeasureError, match=r"small-int8/encoder\.onnx: is int8-dynamic, not full precision"):
        quantize_recipe(bundled.DEMO_DIR / "small-int8", tmp_path / "q", NAMED["int4"])
    assert not (tmp_path / "q").exists()


def test_a_keep_that_names_nothing_or_everything_is_refused(tmp_path):
    with pytest.raises(MeasureError, match=r"recipe x: keep\.nodes: '/model/layer\.0/MatMul' names no weight MatMul"):
        quantize_recipe(
            LM / "lm-small-fp32",
            tmp_path / "q",
            Recipe("x", "dynamic-int8", keep=Keep(nodes=("/model/layer.0/MatMul",))),
        )
    with pytest.raises(MeasureError, match=r"recipe x: keep\.layers: 2 names no weight MatMul"):
        quantize_recipe(LM / "lm-small-fp32", tmp_path / "q", Recipe("x", "dynamic-int8", keep=Keep(layers=(2,))))
    everything = Keep(groups=("attention", "mlp", "lm_head"))
    with pytest.raises(MeasureError, match=r"recipe x: keeps every weight MatMul .* in full precision"):
        quantize_recipe(LM / "lm-small-fp32", tmp_path / "q", Recipe("x", "matmul-nbits", bits=4, keep=everything))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_graph_the_recipe_keeps_whole_is_copied_as_it_is(tmp_path):
    """Keeping the first two layers keeps every weight MatMul of the two-layer encoder: the encoder is copied, the
    decoder (with its head) is quantized."""
    out = quantize_recipe(bundled.SMALL_FP32, tmp_path / "q", Recipe("x", "dynamic-int8", keep=Keep(first=2)))
    assert (out / "encoder.onnx").read_bytes() == (bundled.SMALL_FP32 / "encoder.onnx").read_bytes()
    assert [g.precision for g in load_tier(out).fingerprint().graphs] == ["fp32", "int8-dynamic"]
