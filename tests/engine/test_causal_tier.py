"""The decoder-only engine on the real bundled causal LMs: cached == uncached, framings agree, layouts agree,
speculative == the verifier's greedy, and bad folders, prompts and pairs are one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from measure import bundled
from measure.engine.causal.tier import CausalTier
from measure.engine.kind import detect_causal_layout
from measure.engine.session import Trace
from measure.engine.speculative import Pair
from measure.errors import MeasureError

DEMO = bundled.GOLDEN.parent
ROWS = 16


def lm(name: str, label: str | None = None) -> CausalTier:
    return CausalTier(DEMO / name, label=label)


@pytest.fixture(scope="module")
def small() -> CausalTier:
    return lm("lm-small-fp32", label="drafter")


@pytest.fixture(scope="module")
def base() -> CausalTier:
    return lm("lm-base-fp32")


@pytest.fixture(scope="module")
def rows(golden) -> list:
    return golden.rows[:ROWS]


@pytest.fixture
def lm_copy(tmp_path: Path):
    """A writable copy of a bundled decoder-only tier, for tests that break one file of it."""

    def copy(name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(DEMO / name, dst)
        return dst

    return copy


def edit_json(path: Path, **fields) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(json.dumps(data), encoding="utf-8")


# --- layouts -----------------------------------------------------------------------------------------------------


def test_layouts_are_discovered_from_the_files_and_graphs():
    assert detect_causal_layout(DEMO / "lm-small-fp32") == "causal"
    assert detect_causal_layout(DEMO / "lm-small-fp32-split") == "causal-split"
    assert detect_causal_layout(DEMO / "lm-small-fp32-merged") == "causal-merged"
    for seq2seq in ("base-fp32", "small-fp32-optimum", "small-fp32-merged"):
        assert detect_causal_layout(DEMO / seq2seq) is None
    shapes = {n: lm(n).shape for n in ("lm-small-fp32", "lm-small-fp32-split", "lm-small-fp32-merged")}
    assert {(s.layers, s.heads, s.head_dim, s.vocab_size) for s in shapes.values()} == {(2, 2, 16, 64)}


def test_base_shape_and_fingerprint_are_read_from_the_graph(base):
    assert (base.shape.layers, base.shape.heads, base.shape.head_dim, base.shape.vocab_size) == (4, 2, 16, 64)
    assert base.graphs.positions and not base.graphs.branch
    fp = base.fingerprint()
    assert (fp.layout, fp.precision, fp.layers, fp.heads) == ("causal", "fp32", 4, 2)
    assert lm("lm-base-int4").fingerprint().precision == "int4"


def test_prompt_is_the_template_after_bos(small):
    ids = small.source_ids("туфлях")
    assert ids[0] == small.special.bos == 3
    assert small.tokenizer.decode(ids) == "туфлях="
    assert (small.special.pad, small.special.eos) == (0, 1)


# --- greedy ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lm-small-fp32", "lm-base-fp32"])
def test_cached_greedy_equals_uncached_reference(name, rows):
    tier = lm(name)
    for row in rows:
        cached = tier.greedy(row.input)
        reference = tier.greedy_uncached(row.input)
        assert cached.tokens == reference.tokens, f"line {row.line}: {row.input!r}"
        assert cached.text == reference.text
        assert cached.stopped == reference.stopped


def test_greedy_makes_one_call_per_token_after_one_prefill(base, rows):
    for row in rows:
        trace = Trace()
        result = base.greedy(row.input, trace=trace)
        assert result.calls == trace.calls(base.label + ".model") == len(result.tokens) + (result.stopped == "eos")
        assert 0 < result.first_token_s < result.wall_s
        assert result.run_s < result.wall_s


def test_max_new_tokens_caps_a_decode(base, rows):
    full = base.greedy(rows[0].input)
    assert len(full.tokens) > 3
    capped = base.greedy(rows[0].input, max_new_tokens=3)
    assert capped.tokens == full.tokens[:3]
    assert (capped.stopped, capped.calls) == ("max_new_tokens", 3)
    none = base.greedy_ids(base.source_ids(rows[0].input), max_new_tokens=0)
    assert (none.tokens, none.calls) == ((), 0)


def test_fp32_base_is_genuinely_trained(base, golden):
    hits = sum(base.greedy(r.input).text == r.output for r in golden.rows)
    print(f"lm-base-fp32 golden exact match: {hits}/{len(golden.rows)}")
    assert hits >= 60


@pytest.mark.parametrize("name", ["lm-base-int8", "lm-base-int4", "lm-small-int4"])
def test_quantized_tiers_load_and_decode(name, rows):
    tier = lm(name)
    result = tier.greedy(rows[0].input)
    assert result.stopped in ("eos", "max_new_tokens")
    assert result.calls >= 1 and all(0 <= t < tier.shape.vocab_size for t in result.tokens)


# --- layouts agree on the same weights ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lm-small-fp32-split", "lm-small-fp32-merged"])
def test_older_layouts_decode_as_the_single_graph(name, small, rows):
    other = lm(name)
    worst = 0.0
    for row in rows:
        ours, theirs = small.greedy(row.input), other.greedy(row.input)
        assert theirs.tokens == ours.tokens, f"line {row.line}: {row.input!r}"
        ids = small.source_ids(row.input)
        for block in (1, 4):
            a = small.feed_prefix(ids, list(ours.tokens), block)[0]
            b = other.feed_prefix(ids, list(ours.tokens), block)[0]
            worst = max(worst, float(np.abs(a - b).max()))
    assert worst < 1e-4


# --- framings ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lm-small-fp32", "lm-base-fp32"])
def test_block_framing_matches_single_step_in_fp32(name, rows):
    tier = lm(name)
    worst = 0.0
    for row in rows:
        ids, tokens = tier.source_ids(row.input), list(tier.greedy(row.input).tokens)
        single = tier.feed_prefix(ids, tokens, 1)[0]
        block = tier.feed_prefix(ids, tokens, 4)[0]
        assert single.shape == block.shape == (len(tokens) + 1, tier.shape.vocab_size)
        assert [int(r.argmax()) for r in single[:-1]] == tokens  # row i decides tokens[i]
        worst = max(worst, float(np.abs(single - block).max()))
    assert worst < 1e-4


@pytest.mark.parametrize("name", ["lm-small-fp32", "lm-base-fp32"])
def test_prefill_whole_matches_token_by_token_in_fp32(name, rows):
    tier = lm(name)
    worst = 0.0
    for row in rows:
        ids = tier.source_ids(row.input)
        whole, lane = tier.prefill(ids)
        stepped, stepped_lane = tier.prefill(ids, 1)
        assert whole.shape == stepped.shape == (len(ids), tier.shape.vocab_size)
        assert lane.length == stepped_lane.length == len(ids)
        worst = max(worst, float(np.abs(whole - stepped).max()))
    assert worst < 1e-4


def test_trim_drops_positions_as_if_never_fed(base, rows):
    ids = base.source_ids(rows[0].input)
    tokens = list(base.greedy(rows[0].input).tokens)
    lane = base.begin()
    lane.feed(ids, Trace())
    kept = lane.length
    expected = lane.feed(tokens[:1], Trace())
    lane.feed([5, 6, 7], Trace())  # wrong tokens, then cut away
    lane.trim(kept)
    assert lane.length == kept
    np.testing.assert_allclose(lane.feed(tokens[:1], Trace()), expected, atol=1e-6)
    lane.trim(0)
    np.testing.assert_allclose(lane.feed(ids, Trace())[-1], base.prefill(ids)[0][-1], atol=1e-6)
    with pytest.raises(ValueError):
        lane.trim(lane.length + 1)


# --- speculative -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 4])
def test_speculative_equals_the_verifiers_greedy(k, small, base, golden):
    """Every golden row: the few rejections this well-trained drafter makes are what exercise the trims."""
    pair = Pair(small, base)
    proposed = accepted = 0
    for row in golden.rows:
        greedy = base.greedy(row.input)
        single = pair.decode(row.input, k, verify="single")
        spec = pair.decode(row.input, k)
        for result in (spec, single):
            assert result.tokens == greedy.tokens, f"line {row.line}: {row.input!r}"
            assert result.text == greedy.text and result.stopped == greedy.stopped
            assert result.drafter_calls + result.verifier_calls == result.calls
        assert all(r.proposed <= k and r.accepted <= r.proposed for r in spec.rounds)
        assert spec.verifier_calls == 1 + len(spec.rounds)  # the prefill, then one batched check per round
        assert single.verifier_calls == 1 + len(spec.rounds) + spec.proposed
        proposed, accepted = proposed + spec.proposed, accepted + spec.accepted
    assert 0 < accepted < proposed


def test_speculative_respects_max_new_tokens(small, base, rows):
    pair = Pair(small, base)
    for row in rows[:4]:
        greedy = base.greedy(row.input)
        for cap in (1, 2, 5):
            spec = pair.decode(row.input, 4, max_new_tokens=cap)
            assert spec.tokens == greedy.tokens[:cap]


def test_self_speculation_accepts_every_draft(base, rows):
    pair = Pair(lm("lm-base-fp32", label="self"), base)
    for row in rows:
        spec = pair.decode(row.input, 4)
        assert spec.tokens == base.greedy(row.input).tokens
        assert spec.proposed > 0 and spec.acceptance == 1.0


# --- refusals ----------------------------------------------------------------------------------------------------


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_template_without_input_is_refused(lm_copy):
    folder = lm_copy("lm-small-fp32")
    edit_json(folder / "tier.json", prompt="translate:")
    with pytest.raises(MeasureError) as exc:
        CausalTier(folder)
    assert "tier.json: field prompt" in one_line(exc) and "{input}" in str(exc.value)


def test_too_long_prompt_is_refused(small):
    with pytest.raises(MeasureError) as exc:
        small.source_ids("ж" * 60)
    assert "tier.json: field max_source_tokens" in one_line(exc)


def test_prompt_beyond_the_context_is_refused(lm_copy):
    folder = lm_copy("lm-small-fp32")
    data = json.loads((folder / "tier.json").read_text(encoding="utf-8"))
    del data["max_source_tokens"]
    (folder / "tier.json").write_text(json.dumps(data), encoding="utf-8")
    edit_json(folder / "config.json", max_position_embeddings=8)
    tier = CausalTier(folder)
    tier.source_ids("слово")  # 7 tokens with <s> and '='
    with pytest.raises(MeasureError) as exc:
        tier.source_ids("словосочетание")
    assert "config.json: field max_position_embeddings" in one_line(exc)


def test_seq2seq_folder_is_refused_by_the_causal_loader():
    with pytest.raises(MeasureError) as exc:
        CausalTier(DEMO / "base-fp32")
    assert "base-fp32" in one_line(exc) and "seq2seq" in str(exc.value)


@pytest.mark.parametrize("name", ["genai-base-fp32", "genai-base-int4"])
def test_genai_folder_is_its_own_layout(name):
    assert detect_causal_layout(DEMO / name) == "genai"
    assert CausalTier(DEMO / name).graphs.describe()["genai"]["past_present_share_buffer"] is True


def test_folder_of_neither_kind_is_refused(tmp_path):
    (tmp_path / "weights.onnx").write_bytes(b"")
    with pytest.raises(MeasureError) as exc:
        CausalTier(tmp_path)
    assert str(tmp_path) in one_line(exc) and "model.onnx" in str(exc.value) and "weights.onnx" in str(exc.value)


def test_vocabulary_mismatch_refuses_the_pair(lm_copy, base):
    folder = lm_copy("lm-small-fp32")
    data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    vocab["a"], vocab["b"] = vocab["b"], vocab["a"]
    (folder / "tokenizer.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MeasureError) as exc:
        Pair(CausalTier(folder, label="drafter"), base)
    assert "do not share one vocabulary" in one_line(exc) and "'a'" in str(exc.value)


def test_seq2seq_drafter_with_causal_verifier_is_refused(small_fp32, base):
    with pytest.raises(MeasureError) as exc:
        Pair(small_fp32, base)
    assert "seq2seq" in one_line(exc) and "decoder-only" in str(exc.value)


# --- graphs that say less: symbolic cache dims, int32 ids ---------------------------------------------------------


def rewrite_graph(folder: Path, edit) -> None:
    import onnx

    path = folder / "model.onnx"
    model = onnx.load(str(path))
    edit(model.graph)
    onnx.save(model, str(path))


def symbolic_cache_dims(graph) -> None:
    """Heads and head size of every past and present become named dims: the graph no longer states them."""
    for value in [*graph.input, *graph.output]:
        if value.name.startswith(("past_key_values.", "present.")):
            dims = value.type.tensor_type.shape.dim
            dims[1].dim_param, dims[3].dim_param = "kv_heads", "head_size"


def int32_inputs(graph) -> None:
    """input_ids, attention_mask and position_ids taken as int32 and cast to int64 inside the graph."""
    import onnx

    casts = []
    for value in graph.input:
        if value.name in ("input_ids", "attention_mask", "position_ids"):
            value.type.tensor_type.elem_type = onnx.TensorProto.INT32
            casts.append(onnx.helper.make_node("Cast", [value.name], [value.name + "_64"], to=onnx.TensorProto.INT64))
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in ("input_ids", "attention_mask", "position_ids"):
                node.input[i] = name + "_64"
    for cast in reversed(casts):
        graph.node.insert(0, cast)


def test_symbolic_cache_dims_are_read_from_config(lm_copy, small, rows):
    folder = lm_copy("lm-small-fp32")
    rewrite_graph(folder, symbolic_cache_dims)
    tier = CausalTier(folder)
    assert (tier.shape.heads, tier.shape.head_dim) == (2, 16)  # config.json: num_key_value_heads, head_dim
    for row in rows[:4]:
        assert tier.greedy(row.input).tokens == small.greedy(row.input).tokens
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    for key in ("num_key_value_heads", "num_attention_heads", "head_dim", "hidden_size"):
        del config[key]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(MeasureError) as exc:
        CausalTier(folder)
    assert "model.onnx: past_key_values.0.key has symbolic heads/head size" in one_line(exc)


def test_int32_ids_mask_and_positions_are_fed_as_the_graph_asks(lm_copy, small, rows):
    folder = lm_copy("lm-small-fp32")
    rewrite_graph(folder, int32_inputs)
    tier = CausalTier(folder)
    assert tier.graphs.describe()["ids_dtype"] == tier.graphs.describe()["mask_dtype"] == "int32"
    for row in rows[:4]:
        ids = small.source_ids(row.input)
        assert tier.greedy(row.input).tokens == small.greedy(row.input).tokens
        np.testing.assert_allclose(tier.prefill(ids)[0], small.prefill(ids)[0], atol=1e-5)


def test_after_run_hooks_every_call(rows):
    seen: list[float] = []
    tier = CausalTier(DEMO / "lm-small-fp32-split", after_run=seen.append)
    result = tier.greedy(rows[0].input)
    assert len(seen) == result.calls > 1 and all(s >= 0 for s in seen)


# --- one entry point for both model kinds ----------------------------------------------------------------------------


def test_load_tier_tells_the_kinds_apart_by_their_graphs():
    from measure.engine.load import load_tier
    from measure.engine.seq2seq.tier import Seq2SeqTier
    from measure.engine.tier import Lane, Tier

    lm, seq2seq, genai = (load_tier(p) for p in (DEMO / "lm-small-fp32", bundled.SMALL_FP32, DEMO / "genai-base-fp32"))
    assert isinstance(lm, CausalTier) and lm.kind == "causal" and isinstance(genai, CausalTier)
    assert isinstance(seq2seq, Seq2SeqTier) and seq2seq.kind == "seq2seq"
    for tier in (lm, seq2seq, genai):  # every member of the one interface suites use, on both families
        assert isinstance(tier, Tier), tier
        assert isinstance(tier.begin(tier.source_ids("да"), Trace()), Lane)


def test_greedy_dispatches_to_the_prefill_loop_and_decodes_the_same_tokens(small, rows):

    for row in rows[:4]:
        direct = small.greedy(row.input)
        assert small.greedy(row.input).tokens == direct.tokens == small.greedy_uncached(row.input).tokens


def test_open_pair_builds_the_pair_of_the_tiers_kind(small, base, small_fp32, base_fp32):
    from measure.engine.speculative import Pair, open_pair

    assert isinstance(open_pair(small, base), Pair)
    assert isinstance(open_pair(small_fp32, base_fp32), Pair)
    for drafter, verifier in ((small_fp32, base), (small, base_fp32)):
        with pytest.raises(MeasureError) as exc:
            open_pair(drafter, verifier)
        assert "a pair needs two tiers of one model kind" in one_line(exc)


def test_decode_and_info_verbs_take_a_decoder_only_tier(tmp_path):
    import subprocess
    import sys

    def measure(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "measure", *args], capture_output=True, text=True)

    lm_dir, drafter = str(DEMO / "lm-base-fp32"), str(DEMO / "lm-small-fp32")
    greedy_out = measure("decode", lm_dir, "объём", "привет")
    spec_out = measure("decode", lm_dir, "объём", "привет", "--draft", drafter, "--k", "3", "--stats")
    assert greedy_out.returncode == spec_out.returncode == 0, greedy_out.stderr + spec_out.stderr
    assert spec_out.stdout == greedy_out.stdout and len(greedy_out.stdout.splitlines()) == 2
    assert "acceptance" in spec_out.stderr
    info = json.loads(measure("info", lm_dir, "--json").stdout)
    assert info["kind"] == "causal" and info["layout"] == "causal" and info["prompt"] == "{input}="
    assert info["special_ids"] == {"pad": 0, "eos": 1, "bos": 3}
    mixed = measure("decode", lm_dir, "объём", "--draft", str(bundled.SMALL_FP32))
    assert mixed.returncode == 2 and mixed.stderr.count("\n") == 1 and "one model kind" in mixed.stderr


def test_the_decode_length_comes_from_generation_config_then_a_constant_never_the_prompt(tmp_path):
    """generation_config.json's max_new_tokens (64 in the demo), else 128; bounded by max_target_tokens and the
    context left; a prompt's length never multiplies it."""
    from measure.engine.causal.tier import DEFAULT_MAX_NEW_TOKENS

    tier = lm("lm-small-fp32")
    assert tier.decode_limit() == (64, "generation_config.json")
    assert tier.default_max_new_tokens(3) == tier.default_max_new_tokens(40) == 64
    folder = tmp_path / "t"
    shutil.copytree(DEMO / "lm-small-fp32", folder)
    (folder / "generation_config.json").unlink()
    meta = json.loads((folder / "tier.json").read_text())
    del meta["max_target_tokens"]
    (folder / "tier.json").write_text(json.dumps(meta))
    bare = CausalTier(folder)
    assert bare.decode_limit() == (DEFAULT_MAX_NEW_TOKENS, "default") == (128, "default")
    assert bare.default_max_new_tokens(10) == 128 - 10  # the context (128 positions) bounds it, not 4 x prompt + 8
    assert bare.default_max_new_tokens(100) == 28


def test_a_configured_decode_length_wins_and_every_decode_takes_it(golden):
    from measure.engine.load import load_tier

    tier = load_tier(DEMO / "lm-small-fp32", max_new_tokens=3)
    assert tier.decode_limit() == (3, "config")
    decoded = tier.greedy(golden.rows[0].input)
    assert len(decoded.tokens) <= 3
    assert all(len(tier.greedy(r.input).tokens) <= 3 for r in golden.rows[:8])
    with pytest.raises(MeasureError, match=r"max_new_tokens: expected an integer >= 1, got 0"):
        load_tier(DEMO / "lm-small-fp32", max_new_tokens=0)


def test_seq2seq_keeps_its_default_and_takes_a_configured_one():
    from measure.engine.load import load_tier

    tier = load_tier(bundled.SMALL_FP32)
    assert tier.decode_limit() == (None, "4 x source + 8")
    assert tier.default_max_new_tokens(5) == min(28, tier.max_target_tokens - 1)
    assert load_tier(bundled.SMALL_FP32, max_new_tokens=6).default_max_new_tokens(5) == 6


def test_a_closed_tier_keeps_the_facts_a_reference_is_checked_against(golden):
    """The run lets go of a tier's sessions before it loads the tier's fidelity reference and checks the two
    against each other: the closed tier still tokenizes and states its teacher-forced room, but cannot decode."""
    tier = lm("lm-base-int8")
    ids = tier.source_ids(golden.rows[0].input)
    room, target = tier.target_room(len(ids)), tier.target_ids(golden.rows[0].output)
    tier.close()
    assert "graphs" not in tier.__dict__
    assert tier.source_ids(golden.rows[0].input) == ids and tier.target_ids(golden.rows[0].output) == target
    assert tier.target_room(len(ids)) == room and tier.shape.vocab_size > 0
    with pytest.raises(AttributeError):
        tier.teacher_forced(ids, target)
