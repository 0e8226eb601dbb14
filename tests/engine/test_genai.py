"""onnxruntime-genai: its folders decoded in measure's loop, and its compiled loop beside ours (the genai leg).

Both loops run the same graph with the same onnxruntime kernels, so on fp32 tiers the
tokens and the logits agree exactly by construction; quantized tiers are only run, never
asserted on (their kernels differ between CPUs).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from tests_support import ROOT

from measure.engine.causal.genai_config import read_genai_config
from measure.engine.causal.genai_export import genai_config_for, genai_folder
from measure.engine.causal.tier import CausalTier
from measure.engine.load import load_tier
from measure.errors import MeasureError
from measure.suites.legs.genai_driver import run_genai_leg, run_genai_speculative

DEMO = ROOT / "measure" / "demo"
GOLDEN = [json.loads(line)["input"] for line in (DEMO / "golden-v1.jsonl").read_text(encoding="utf-8").splitlines()]
ROWS = GOLDEN[:16]

needs_og = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime_genai") is None, reason="onnxruntime-genai is not installed (the genai extra)"
)


def measure_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "measure", *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def genai_fp32() -> CausalTier:
    tier = load_tier(DEMO / "genai-base-fp32")
    assert isinstance(tier, CausalTier)
    return tier


@pytest.fixture(scope="module")
def lm_fp32() -> CausalTier:
    tier = load_tier(DEMO / "lm-base-fp32")
    assert isinstance(tier, CausalTier)
    return tier


# --- the genai layout in measure's own loop ---------------------------------------------------------------------


def test_genai_folder_loads_as_a_causal_tier_with_its_config(genai_fp32):
    cfg = read_genai_config(genai_fp32.path)
    assert genai_fp32.layout == "genai" and genai_fp32.kind == "causal"
    assert genai_fp32.shape.head_dim == cfg.head_size == 16 and genai_fp32.shape.heads == cfg.kv_heads
    assert genai_fp32.shape.layers == cfg.layers and not genai_fp32.graphs.positions
    assert cfg.share_buffer and cfg.max_length == 128
    assert genai_fp32.fingerprint().graphs[0].file == "model.onnx"


@needs_og
def test_genai_folder_decoded_by_both_loops_gives_the_same_tokens_and_logits(genai_fp32):
    leg = run_genai_leg([genai_fp32], ROWS, repeats=1)
    assert leg["status"] == "ok"
    facts = leg["tiers"]["genai-base-fp32"]
    assert facts["status"] == "ok" and facts["config"] == "folder"
    assert facts["cache"]["past_present_share_buffer"] is True
    ours = [list(genai_fp32.greedy_ids(genai_fp32.source_ids(text)).tokens) for text in ROWS]
    assert [r["tokens"] for r in facts["rows"]] == ours
    assert facts["equal_rows"] == len(ROWS) and facts["differing_rows"] == []
    assert all(r["logits_max_abs_diff"] <= 1e-5 and r["logits_rows"] == len(r["tokens"]) + 1 for r in facts["rows"])


@needs_og
def test_optimum_tier_under_onnxruntime_genai_equals_measures_greedy(lm_fp32):
    before = sorted(p.name for p in lm_fp32.path.iterdir())
    ours = {lm_fp32.name: [list(lm_fp32.greedy_ids(lm_fp32.source_ids(t)).tokens) for t in ROWS]}
    leg = run_genai_leg([lm_fp32], ROWS, ours, repeats=2)
    facts = leg["tiers"][lm_fp32.name]
    assert facts["status"] == "ok" and facts["config"] == "generated"
    assert facts["cache"]["past_present_share_buffer"] is False
    assert facts["equal_rows"] == len(ROWS) and [r["tokens"] for r in facts["rows"]] == ours[lm_fp32.name]
    assert sorted(p.name for p in lm_fp32.path.iterdir()) == before  # the tier folder is never written
    # raw samples: one per repeat, and the summary is their median
    assert len(facts["ms_per_step"]["samples"]) == 2 and facts["ms_per_step"]["median"] > 0
    assert all(len(r["first_token_ms"]) == 2 and len(r["decode_ms"]) == 2 for r in facts["rows"])
    # measure's loop on the same rows, back to back: its own samples and the paired per-step ratio
    assert all(len(r["measure_decode_ms"]) == 2 and len(r["measure_over_og"]) == 2 for r in facts["rows"])
    assert facts["measure_steps"] == facts["steps"] and facts["measure_over_og"] > 0


@needs_og
def test_a_differing_measure_row_is_named(lm_fp32):
    ours = [list(lm_fp32.greedy_ids(lm_fp32.source_ids(t)).tokens) for t in ROWS[:3]]
    ours[1] = [*ours[1][:2], (ours[1][2] + 1) % 64, *ours[1][3:]]
    facts = run_genai_leg([lm_fp32], ROWS[:3], {lm_fp32.name: ours}, repeats=1)["tiers"][lm_fp32.name]
    assert facts["differing_rows"] == [1] and facts["rows"][1]["first_difference"] == 2


def test_generated_config_names_optimums_inputs_and_grows_the_cache(lm_fp32):
    config = genai_config_for(lm_fp32, 80)
    decoder = config["model"]["decoder"]
    assert decoder["inputs"]["position_ids"] == "position_ids" and decoder["num_hidden_layers"] == 4
    assert config["search"]["past_present_share_buffer"] is False and config["search"]["max_length"] == 80
    with genai_folder(lm_fp32, 80) as folder:
        assert folder != lm_fp32.path and (folder / "genai_config.json").is_file()
        assert (folder / "model.onnx").resolve() == (lm_fp32.path / "model.onnx").resolve()
    assert not folder.exists()


@needs_og
def test_a_tier_onnxruntime_genai_cannot_run_is_failed_with_the_message():
    split = load_tier(DEMO / "lm-small-fp32-split")
    facts = run_genai_leg([split], ROWS[:2], repeats=1)["tiers"][split.name]
    assert facts["status"] == "failed" and "causal-split" in facts["message"] and "\n" not in facts["message"]


@needs_og
def test_speculative_decoding_in_onnxruntime_genai_equals_greedy(lm_fp32):
    result = run_genai_speculative(lm_fp32, load_tier(DEMO / "lm-small-fp32"), ROWS[:6], draft_tokens=4)
    assert result["status"] == "ok", result
    assert result["equal_greedy_rows"] == 6 and result["differing_rows"] == []
    assert 0 <= result["acceptance"] <= 1
    assert all(r["draft_tokens_proposed"] >= r["draft_tokens_accepted"] for r in result["rows"])
    assert all(r["measure"]["equal_greedy"] for r in result["rows"]) and 0 <= result["measure_acceptance"] <= 1
    assert result["speedup"] > 0 and result["measure_speedup"] > 0


# --- without onnxruntime-genai -------------------------------------------------------------------------------------

_BLOCKED = """
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "onnxruntime_genai" or name.startswith("onnxruntime_genai."):
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
from measure.engine.load import load_tier
from measure.suites.legs.genai_driver import run_genai_leg, run_genai_speculative
tier = load_tier(sys.argv[1])
print(json.dumps([run_genai_leg([tier], ["слово"]), run_genai_speculative(tier, tier, ["слово"])]))
"""


def test_leg_is_skipped_with_its_reason_when_onnxruntime_genai_is_not_importable():
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED, str(DEMO / "genai-base-fp32")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    leg, speculative = json.loads(done.stdout)
    for result in (leg, speculative):
        assert result["status"] == "skipped"
        assert "onnxruntime_genai is not importable" in result["reason"] and "blocked for the test" in result["reason"]


# --- bad genai_config.json: one line naming the file and the field, exit 2 -----------------------------------------


def _break(config: dict, how: str) -> str | dict:
    decoder = config["model"]["decoder"]
    if how == "not json":
        return "{ not json"
    if how == "missing head_size":
        del decoder["head_size"]
    elif how == "missing file":
        decoder["filename"] = "absent.onnx"
    elif how == "wrong type":
        config["search"]["max_length"] = "long"
    elif how == "fewer layers":
        decoder["num_hidden_layers"] = 3
    elif how == "absurd max_length":  # allocated as the shared cache buffer: 114 PiB
        config["search"]["max_length"] = 10**15
    elif how == "max_length past the rotary cache":
        del config["model"]["context_length"]
        config["search"]["max_length"] = 1000
    elif how == "head_size off the graph":
        decoder["head_size"] = 32
    elif how == "key/value heads off the graph":
        decoder["num_key_value_heads"] = 4
    elif how == "attention heads off the graph":
        decoder["num_attention_heads"] = 4
    elif how == "zero layers":
        decoder["num_hidden_layers"] = 0
    return config


@pytest.mark.parametrize(
    ("how", "field"),
    [
        ("not json", "line 1"),
        ("missing head_size", "model.decoder.head_size"),
        ("missing file", "model.decoder.filename"),
        ("wrong type", "search.max_length"),
        ("fewer layers", "model.decoder.inputs"),
        ("absurd max_length", "search.max_length: 1000000000000000"),
        ("max_length past the rotary cache", "search.max_length: 1000 positions"),
        ("head_size off the graph", "model.decoder.head_size: 32, but model.onnx's GroupQueryAttention has 16"),
        ("key/value heads off the graph", "model.decoder.num_key_value_heads: 4, but"),
        ("attention heads off the graph", "model.decoder.num_attention_heads: 4, but"),
        ("zero layers", "model.decoder.num_hidden_layers"),
    ],
)
def test_bad_genai_config_is_one_line_naming_file_and_field_exit_2(tmp_path, how, field):
    folder = tmp_path / "genai"
    shutil.copytree(DEMO / "genai-base-fp32", folder)
    path = folder / "genai_config.json"
    broken = _break(json.loads(path.read_text(encoding="utf-8")), how)
    path.write_text(broken if isinstance(broken, str) else json.dumps(broken), encoding="utf-8")
    with pytest.raises(MeasureError) as exc:
        load_tier(folder)
    assert "\n" not in str(exc.value) and "genai_config.json" in str(exc.value) and field in str(exc.value)
    done = measure_cli("info", str(folder))
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr
    assert "genai_config.json" in done.stderr and field in done.stderr


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("max_position_embeddings", 10**15, "would need"),  # two cache sides of 10**15 positions
        ("num_key_value_heads", 4, "num_key_value_heads: 4, but model.onnx has 2"),
        ("head_dim", 32, "head_dim: 32, but model.onnx has 16"),
    ],
)
def test_config_json_number_the_graph_or_the_machine_refutes_is_one_line(tmp_path, key, value, said):
    """config.json numbers that size a buffer, or describe the graph, are checked before anything is made."""
    folder = tmp_path / "lm"
    shutil.copytree(DEMO / "lm-base-fp32", folder)
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config[key] = value
    path.write_text(json.dumps(config), encoding="utf-8")
    done = measure_cli("decode", str(folder), "объём")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0 and f"{path}: field {key}" in done.stderr and said in done.stderr


# --- measure info ----------------------------------------------------------------------------------------------------


def test_info_shows_layout_operator_precision_and_cache_mode():
    done = measure_cli("info", str(DEMO / "genai-base-int4"))
    assert done.returncode == 0, done.stderr
    assert "layout     genai (decoder-only)" in done.stdout
    assert "MatMulNBits 21 int4" in done.stdout
    assert "onnxruntime-genai: one shared buffer, max_length 128; measure: one shared buffer" in done.stdout
    optimum = measure_cli("info", str(DEMO / "lm-base-int8")).stdout
    assert "kv cache   two buffers of 128 positions taking turns" in optimum
    split = measure_cli("info", str(DEMO / "lm-small-fp32-split")).stdout
    assert "kv cache   grown from length 0 by each call" in split
    doc = json.loads(measure_cli("info", "--json", str(DEMO / "genai-base-fp32")).stdout)
    assert doc["layout"] == "genai" and doc["op_precision"]["model.onnx"] == {"MatMul": "fp32"}
    assert doc["kv_cache"]["onnxruntime_genai"] == {
        "past_present_share_buffer": True,
        "max_length": 128,
        "context_length": 128,
    }


# --- cache buffers bound once: as onnxruntime-genai holds the cache ----------------------------------------------


@pytest.mark.parametrize(("name", "kind"), [("genai-base-fp32", "SharedLane"), ("lm-base-fp32", "BoundLane")])
def test_bound_buffer_lanes_give_the_grown_lanes_tokens_and_logits(name, kind):
    from measure.engine.causal.lane import CausalLane
    from measure.engine.session import Trace

    genai_fp32 = load_tier(DEMO / name)  # fp32: the same kernels on the same positions, so equal by construction
    assert type(genai_fp32.begin()).__name__ == kind
    for text in ROWS[:8]:
        ids = genai_fp32.source_ids(text)
        grown = CausalLane(genai_fp32.graphs)
        token = int(grown.feed(ids, Trace())[-1].argmax())
        out, _ = grown.greedy(token, genai_fp32.special.eos, 64, Trace())
        assert list(genai_fp32.greedy_ids(ids, max_new_tokens=64).tokens) == out
        for block in (1, 3, len(out)):  # k tokens on top of a past in place: prefill in blocks, batched framing
            shared, _ = genai_fp32.feed_prefix(ids, out, block)
            lane = CausalLane(genai_fp32.graphs)
            rows = [lane.feed(ids, Trace())[-1:]]
            rows += [lane.feed(out[i : i + block], Trace()) for i in range(0, len(out), block)]
            assert np.abs(shared - np.concatenate(rows)).max() <= 1e-5
        prefill, _ = genai_fp32.prefill(ids, 2)
        assert np.abs(prefill - CausalLane(genai_fp32.graphs).feed(ids, Trace())).max() <= 1e-5


@pytest.mark.parametrize("name", ["genai-base-fp32", "lm-base-fp32"])
def test_bound_buffer_trim_rewrites_the_cut_positions(name):
    from measure.engine.session import Trace

    genai_fp32 = load_tier(DEMO / name)

    ids = genai_fp32.source_ids(ROWS[0])
    lane = genai_fp32.begin()
    first = lane.feed(ids, Trace())
    lane.feed([5, 6, 7], Trace())
    lane.trim(len(ids) - 2)
    again = lane.feed(ids[-2:], Trace())
    assert lane.length == len(ids) and np.abs(again - first[-2:]).max() <= 1e-5


@pytest.mark.parametrize("name", ["genai-base-fp32", "lm-base-fp32"])
def test_two_live_lanes_on_one_tier_hold_buffers_of_their_own(name):
    from measure.engine.session import Trace

    tier = load_tier(DEMO / name)
    a_ids, b_ids = tier.source_ids(ROWS[0]), tier.source_ids(ROWS[1])
    alone = [tier.begin().feed(ids, Trace()) for ids in (a_ids, b_ids)]
    a, b = tier.begin(), tier.begin()  # both live: the second gets a second buffer set
    assert a.cache is not b.cache
    a_rows, b_rows = a.feed(a_ids, Trace()), b.feed(b_ids, Trace())
    a_next, b_next = a.feed([5], Trace()), b.feed([5], Trace())
    assert np.abs(a_rows - alone[0]).max() <= 1e-5 and np.abs(b_rows - alone[1]).max() <= 1e-5
    del a, b
    assert len(tier.graphs.caches) == 2
    lone = tier.begin()
    assert lone.cache is tier.graphs.caches[0]  # a dropped lane's set is lent again
    lone.feed(a_ids, Trace())
    assert np.abs(lone.feed([5], Trace()) - a_next).max() <= 1e-5  # b's calls between never touched a's cache
    assert not np.array_equal(a_next, b_next)


def test_measures_speculative_pair_over_genai_folders_gives_the_verifiers_greedy(genai_fp32):
    from measure.engine.speculative import open_pair

    pair = open_pair(load_tier(DEMO / "genai-base-int4"), genai_fp32)
    for text in ROWS[:6]:
        ids = genai_fp32.source_ids(text)
        greedy = genai_fp32.greedy_ids(ids).tokens
        for k in (1, 3):  # drafter and verifier each in their own tier's shared buffers, trimmed after every round
            assert pair.decode_ids(ids, k).tokens == greedy
