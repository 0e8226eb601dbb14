"""Decoder-only tiers through the suites and every verb: a tiny real run of the bundled lm demo tiers.

Facts asserted of the fp32 tiers only hold by construction (one engine, two call framings of the
same fp32 graph); nothing here asserts what a quantized tier decodes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from tests_support import DATA_DIR

from measure import bundled
from measure.analysis.prefill import causal_timings
from measure.cli import main
from measure.engine.load import load_tier
from measure.record.io import SCHEMA_VERSION, load, load_record
from measure.record.model import from_document

DEMO = bundled.CONFIG.parent
ROWS = 6


def _config(folder: Path, tiers: list[tuple[str, str, str]], pairs: list[tuple[str, str]], extra: str = "") -> Path:
    """A suite config over the first ROWS golden rows: (name, path or folder, role) tiers and (drafter, verifier)."""
    golden = folder / "golden.jsonl"
    golden.write_text("".join((DEMO / "golden-v1.jsonl").read_text(encoding="utf-8").splitlines(True)[:ROWS]))
    text = ['golden = "golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for name, path, role in tiers:
        where = path if Path(path).is_absolute() else str(DEMO / path)
        text += ["[[tiers]]", f'name = "{name}"', f"path = {json.dumps(where)}", f'role = "{role}"']
    for drafter, verifier in pairs:
        text += ["[[pairs]]", f'drafter = "{drafter}"', f'verifier = "{verifier}"']
    text += [
        "[wallclock]",
        "warmup = 1",
        "warmup_s = 0.0",
        "repeats = 2",
        "k = [2]",
        "bootstrap = 200",
        "profile = false",
        "call_cost_rows = 2",
        "[framing]",
        "k = [2]",
        "probe_k = 2",
        "node_leg = true",
        "web_leg = false",
    ]
    path = folder / "suite.toml"
    path.write_text("\n".join(text) + "\n" + extra, encoding="utf-8")
    return path


FP32 = [("lm-base-fp32", "lm-base-fp32", "plain"), ("lm-small-fp32", "lm-small-fp32", "drafter")]
FP32_PAIR = [("lm-small-fp32", "lm-base-fp32")]


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory):
    """One run of both suites over two fp32 decoder-only tiers and their pair: (results folder, record path)."""
    folder = tmp_path_factory.mktemp("lm")
    config = _config(folder, FP32, FP32_PAIR)
    assert main(["run", "--config", str(config), "--results", str(folder / "results")]) == 0
    (path,) = sorted((folder / "results").glob("*/*.json"))
    return folder / "results", path


def _python_tier(doc: dict, name: str) -> dict:
    return next(t for t in doc["framing"]["legs"][0]["tiers"] if t["tier"] == name)


def test_the_record_states_kind_prompt_and_per_row_prompt_tokens(lm_run):
    _, path = lm_run
    doc = load_record(path)
    tier = load_tier(DEMO / "lm-base-fp32")
    rows = [json.loads(line)["input"] for line in (DEMO / "golden-v1.jsonl").read_text().splitlines()[:ROWS]]
    assert doc["tiers"]["lm-base-fp32"]["kind"] == "causal"
    assert doc["tiers"]["lm-base-fp32"]["prompt"] == "{input}="
    for case in doc["wallclock"]["cases"].values():
        assert case["source_tokens"] == [len(tier.source_ids(r)) for r in rows]
        first, wall = np.array(case["first_token_s"]), np.array(case["wall_s"])
        assert first.shape == wall.shape and (first > 0).all() and (first <= wall).all()
    assert set(doc["wallclock"]["call_costs"]["tiers"]) == {"lm-base-fp32", "lm-small-fp32"}


def test_prefill_and_decode_blocks_of_an_fp32_tier_agree_with_single_step(lm_run):
    doc = load_record(lm_run[1])
    for name in ("lm-base-fp32", "lm-small-fp32"):
        t = _python_tier(doc, name)
        assert [b["block"] for b in t["prefill"]] == [2, "whole"] == [b["block"] for b in t["blocks"]]
        for b in [*t["prefill"], *t["blocks"]]:
            assert b["logits_max_abs_diff"] <= 1e-4 and b["present_max_abs_diff"] <= 1e-4
            assert b["argmax_agree"] == b["argmax_total"] > 0
            assert b["first_divergent_step"] == [None] * ROWS
        assert t["prefill"][0]["argmax_total"] == sum(doc["wallclock"]["cases"][name]["source_tokens"])


def test_self_acceptance_is_one_and_the_fp32_pair_preserves_every_row(lm_run):
    doc = load_record(lm_run[1])
    found = {(a["drafter"], a["verifier"], a["self"]): a for a in doc["framing"]["acceptance"]}
    assert set(found) == {
        ("lm-small-fp32", "lm-base-fp32", False),
        ("lm-small-fp32", "lm-small-fp32", True),
        ("lm-base-fp32", "lm-base-fp32", True),
    }
    for a in found.values():
        assert a["preserved"] == a["rows"] == ROWS and a["differing"] == []
        if a["self"]:
            assert a["probe"]["accepted"] == a["probe"]["proposed"] > 0
            assert a["runtime"]["accepted"] == a["runtime"]["proposed"] > 0


def test_the_javascript_legs_decode_decoder_only_tiers_as_python_does(lm_run):
    doc = load_record(lm_run[1])
    python = doc["framing"]["legs"][0]
    for leg in doc["framing"]["legs"][1:]:
        if leg["runtime"] not in ("onnxruntime-node", "onnxruntime-web") or leg["status"] != "measured":
            continue  # a host without node or Chromium skips the whole leg instead
        assert [t["tier"] for t in leg["tiers"]] == [n for n, _, _ in FP32]
        for p, t in zip(python["tiers"], leg["tiers"], strict=True):
            assert t["status"] == "measured", t.get("reason")
            assert t["output_ids"] == p["output_ids"] and t["divergence"] == []  # fp32: row for row
            assert [b["block"] for b in t["prefill"]] == [b["block"] for b in p["prefill"]]
            assert t["prefill"][0]["argmax_total"] == p["prefill"][0]["argmax_total"]
            assert t["blocks"][0]["argmax_total"] == p["blocks"][0]["argmax_total"]


def test_prefill_first_token_and_decode_timings_are_read_from_the_samples(lm_run):
    record = from_document(load_record(lm_run[1]), "lm")
    found = {c.tier: c for c in causal_timings(record)}
    assert set(found) == {"lm-base-fp32", "lm-small-fp32"}
    case = record.wallclock.cases["lm-base-fp32"]
    per_repeat = 1000 * case.first_token_s.sum(axis=1) / sum(case.source_tokens)
    t = found["lm-base-fp32"]
    assert t.prompt_tokens == sum(case.source_tokens)
    assert t.prefill_ms_per_prompt_token.value == pytest.approx(float(np.median(per_repeat)))
    decode = 1000 * (case.wall_s - case.first_token_s).sum(axis=1) / sum(c - 1 for c in case.calls)
    assert t.decode_ms_per_token.value == pytest.approx(float(np.median(decode)))
    assert t.first_token_ms.value == pytest.approx(float(np.median(1000 * case.first_token_s.mean(axis=1))))


def test_every_verb_takes_a_decoder_only_record(lm_run, tmp_path, capsys):
    results, path = lm_run
    assert main(["validate", str(path)]) == 0
    assert f"schema v{SCHEMA_VERSION}, complete" in capsys.readouterr().out
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "decoder-only tiers" in out and "prefill" in out and "lm-small-fp32->lm-base-fp32@k2" in out
    # a gate may fail on a two-repeat run on a busy host (an exponent's wide interval): 1, never an error
    code, out = main(["check", str(path)]), capsys.readouterr().out
    assert (code, "no gate failed" in out) in ((0, True), (1, False)) and str(path) in out
    assert main(["compare", str(path), str(path)]) == 0
    assert "lm-base-fp32" in capsys.readouterr().out
    assert main(["merge", str(results), "--into", str(tmp_path / "merged")]) == 0
    assert len(list((tmp_path / "merged").glob("*/*.json"))) == 1
    capsys.readouterr()
    assert main(["calibrate", str(tmp_path / "merged")]) == 0
    assert load(path).tiers["lm-base-fp32"].decoder_only


def test_the_committed_lm_fixture_is_a_valid_decoder_only_record(capsys):
    path = DATA_DIR / "record-v3-lm.json"
    assert main(["validate", str(path)]) == 0
    record = load(path)
    kinds = {name: t.kind for name, t in record.tiers.items()}
    assert "causal" in kinds.values() and "seq2seq" in kinds.values()
    assert {c.tier for c in causal_timings(record)} == {n for n, k in kinds.items() if k == "causal"}
    assert all(t.prefill for t in record.python_tiers if kinds[t.tier] == "causal")


def test_source_tokens_of_another_length_than_the_rows_is_refused():
    from measure.errors import MeasureError
    from measure.record.io import validate

    doc = load_record(DATA_DIR / "record-v3-lm.json")
    doc["wallclock"]["cases"]["lm-base-int8"]["source_tokens"].pop()
    where = "lm.json: field wallclock/cases/lm-base-int8/source_tokens: expected 8 counts"
    with pytest.raises(MeasureError, match=re.escape(where)):
        validate(doc, "lm.json")


def _fails(config: Path, capsys) -> str:
    assert main(["run", "--config", str(config), "--results", str(config.parent / "r"), "--suite", "wallclock"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err


def test_a_causal_drafter_with_a_seq2seq_verifier_is_refused_naming_the_pair(tmp_path, capsys):
    tiers = [("base-fp32", "base-fp32", "plain"), ("lm-small-fp32", "lm-small-fp32", "drafter")]
    err = _fails(_config(tmp_path, tiers, [("lm-small-fp32", "base-fp32")]), capsys)
    assert "suite.toml: pairs[0]" in err and "one model kind" in err


def test_a_drafter_with_another_vocabulary_is_refused_naming_the_pair(tmp_path, tier_copy, capsys):
    drafter = tier_copy(DEMO / "lm-small-fp32")
    tok = json.loads((drafter / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    a, b = [k for k in vocab if len(k) == 1 and k.isalpha()][:2]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (drafter / "tokenizer.json").write_text(json.dumps(tok), encoding="utf-8")
    tiers = [("lm-base-fp32", "lm-base-fp32", "plain"), ("swapped", str(drafter), "drafter")]
    err = _fails(_config(tmp_path, tiers, [("swapped", "lm-base-fp32")]), capsys)
    assert "suite.toml: pairs[0] (swapped->lm-base-fp32)" in err and "vocabulary" in err


def test_a_prompt_without_input_is_refused_naming_the_tier(tmp_path, capsys):
    config = _config(tmp_path, FP32, [])
    text = config.read_text().replace('role = "drafter"', 'role = "drafter"\nprompt = "translate:"')
    config.write_text(text)
    err = _fails(config, capsys)
    assert "suite.toml: tiers[1].prompt" in err and "{input}" in err


def test_a_prompt_given_to_a_seq2seq_tier_is_refused(tmp_path, capsys):
    config = _config(tmp_path, [("base-fp32", "base-fp32", "plain")], [])
    config.write_text(config.read_text().replace('role = "plain"', 'role = "plain"\nprompt = "{input}="'))
    assert "suite.toml: tiers[0].prompt" in _fails(config, capsys)


def test_a_prompt_longer_than_the_context_is_one_line(tmp_path, capsys):
    config = _config(tmp_path, FP32, [])
    long = "{input}" + " =" * 200
    config.write_text(config.read_text().replace('role = "drafter"', f'role = "drafter"\nprompt = "{long}"'))
    err = _fails(config, capsys)
    assert "golden.jsonl:1: tier lm-small-fp32" in err and "at most" in err


def test_the_config_stores_a_prompt_override_and_the_tier_uses_it(tmp_path, capsys):
    config = _config(tmp_path, FP32, [])
    config.write_text(config.read_text().replace('role = "drafter"', 'role = "drafter"\nprompt = "{input} ="'))
    from measure.suites.config import load_config
    from measure.suites.runner import load_tiers

    loaded = load_config(config)
    assert loaded.to_dict()["tiers"][1]["prompt"] == "{input} ="
    tiers = load_tiers(loaded, {})
    assert tiers["lm-small-fp32"].prompt == "{input} =" and tiers["lm-base-fp32"].prompt == "{input}="
