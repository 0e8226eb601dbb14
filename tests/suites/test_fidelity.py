"""The fidelity pass on real demo tiers: against itself a tier is perfect, against a graph whose logits are a known
transform of its own the figures are the closed form, and a bad reference or row is one line before anything runs.

No test here asserts what a quantized tier's divergence happens to be on this machine: the conditions are built
(a tier against itself, an fp32 graph with a bias or a temperature on its logits).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from graph_edits import edit_logits

from measure import bundled
from measure.analysis.fidelity import tier_figures
from measure.analysis.timings import Bootstrap
from measure.cli import main
from measure.engine.load import load_tier
from measure.record.model.fidelity import Fidelity
from measure.suites.divergence import compare_logits, log_softmax
from measure.suites.fidelity import judge
from measure.suites.golden import GoldenRows, load_golden

DEMO = bundled.DEMO_DIR
B = Bootstrap(400, 7)


def _rows(n: int) -> GoldenRows:
    g = load_golden(bundled.GOLDEN)
    return GoldenRows(g.path, g.sha256, g.rows[:n])


@pytest.mark.parametrize("name", ["base-fp32", "lm-base-fp32", "genai-base-int4"])
def test_a_tier_against_itself_is_perfect(name):
    tier = load_tier(DEMO / name)
    part = judge(tier, [load_tier(DEMO / name, label="again")], _rows(12))
    (f,) = tier_figures(Fidelity.from_dict(part), B)
    g = f.greedy
    assert g.kld_mean.value == g.kld_mean.lo == g.kld_mean.hi == 0.0
    assert g.kld_quantiles[1.0] == 0.0 and g.zeros == g.positions and g.hist == ()
    assert g.same_top1.value == 1.0 and g.top5 == 1.0 and g.rms_dp == 0.0
    assert f.ppl_ratio.value == 1.0 and f.ppl_tier == f.ppl_ref
    assert g.positions == sum(part["references"][0]["greedy_positions"])


@pytest.mark.parametrize("source", ["lm-base-fp32", "small-fp32"])
def test_a_bias_on_one_token_gives_the_closed_form_divergence(tmp_path, source):
    """q_v = p_v e^(b [v = j]) / Z with Z = 1 - p_j + p_j e^b, so KL(P || Q) = log Z - b p_j at every position."""
    reference = load_tier(DEMO / source)
    token, bias = 7, 1.5
    biased = load_tier(edit_logits(DEMO / source, tmp_path / "biased", bias={token: bias}))
    rows = _rows(10)
    part = judge(reference, [biased], rows)
    expected = []
    for row in rows.rows:
        ids = reference.source_ids(row.input)
        greedy = list(reference.greedy_ids(ids).tokens)
        p_j = np.exp(log_softmax(reference.teacher_forced(ids, greedy)))[:, token]
        z = 1 - p_j + p_j * math.exp(bias)
        expected.append(float((np.log(z) - bias * p_j).sum()))
    np.testing.assert_allclose(part["tiers"][0]["greedy"]["kld"], expected, rtol=1e-5, atol=1e-9)


def test_a_temperature_gives_the_divergence_computed_from_the_reference_alone(tmp_path):
    reference = load_tier(DEMO / "lm-small-fp32")
    hot = load_tier(edit_logits(DEMO / "lm-small-fp32", tmp_path / "hot", scale=0.5))  # T = 2
    rows = _rows(8)
    (f,) = tier_figures(Fidelity.from_dict(judge(reference, [hot], rows)), B)
    klds, same = [], 0
    for row in rows.rows:
        ids = reference.source_ids(row.input)
        z = reference.teacher_forced(ids, list(reference.greedy_ids(ids).tokens)).astype(np.float64)
        lp, lq = log_softmax(z), log_softmax(z / 2)
        klds.append((np.exp(lp) * (lp - lq)).sum(axis=-1))
        same += int((lp.argmax(-1) == lq.argmax(-1)).sum())  # a temperature keeps every argmax
    k = np.concatenate(klds)
    assert f.greedy.kld_mean.value == pytest.approx(k.mean(), rel=1e-5)
    assert f.greedy.kld_quantiles[1.0] == pytest.approx(k.max(), rel=1e-5)
    assert f.greedy.kld_quantiles[0.5] == pytest.approx(float(np.median(k)), rel=1e-5)
    assert f.greedy.same_top1.value == same / k.size == 1.0


def test_compare_logits_reads_each_position_alike():
    ref = np.array([[2.0, 0.0, 0.0, -1.0], [0.0, 3.0, 0.0, 0.0]])
    tier = np.array([[0.0, 2.0, 0.0, -1.0], [0.0, 3.0, 0.0, 0.0]])
    facts = compare_logits(ref, tier, [0, 1])
    assert facts.same_top1.tolist() == [False, True] and facts.kld[1] == 0.0 and facts.kld[0] > 0
    assert facts.dp[0] == pytest.approx(np.exp(log_softmax(tier))[0, 0] - np.exp(log_softmax(ref))[0, 0])
    assert facts.nll_ref[1] == pytest.approx(-log_softmax(ref)[1, 1])
    with pytest.raises(ValueError, match="do not score"):
        compare_logits(ref, tier, [0])


# --- bad input: one line, exit 2, nothing measured or written ------------------------------------------------------


def _config(tmp: Path, tiers: list[tuple[str, Path, str, str | None]], rows: Path | None = None) -> Path:
    golden = rows or bundled.GOLDEN
    text = f'golden = "{golden}"\n'
    for name, path, role, reference in tiers:
        text += f'[[tiers]]\nname = "{name}"\npath = "{path}"\nrole = "{role}"\n'
        text += f'reference = "{reference}"\n' if reference else ""
    path = tmp / "suite.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(capsys, config: Path, tmp: Path, *names: str) -> str:
    results = tmp / "results"
    assert main(["run", "--config", str(config), "--suite", "framing", "--results", str(results)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    for name in names:
        assert name in line, line
    assert not results.exists()  # refused before anything was measured: no record at all
    return line


def test_a_reference_of_another_kind_is_refused(tmp_path, capsys):
    config = _config(tmp_path, [("lm", DEMO / "lm-base-int8", "plain", str(DEMO / "base-fp32"))])
    _refused(capsys, config, tmp_path, "lm-base-int8", "base-fp32", "two tiers of one model kind")


def test_a_reference_with_another_vocabulary_is_refused(tmp_path, capsys):
    other = tmp_path / "other-fp32"
    shutil.copytree(DEMO / "small-fp32", other)
    doc = json.loads((other / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = doc["model"]["vocab"]
    a, b = sorted(vocab)[5:7]
    vocab[a], vocab[b] = vocab[b], vocab[a]  # two tokens trade ids: same size, another vocabulary
    (other / "tokenizer.json").write_text(json.dumps(doc), encoding="utf-8")
    config = _config(tmp_path, [("int4", DEMO / "small-int4", "plain", str(other))])
    _refused(capsys, config, tmp_path, "small-int4", "other-fp32", "vocabulary")
    assert main(["fidelity", str(other), str(DEMO / "small-int4"), "--rows", "2"]) == 2
    assert "vocabulary" in capsys.readouterr().err


def test_a_quantization_from_naming_a_missing_tier_names_the_field(tmp_path, capsys):
    alone = tmp_path / "models" / "base-int8"
    shutil.copytree(DEMO / "base-int8", alone)  # without base-fp32 beside it
    config = _config(tmp_path, [("base-int8", alone, "plain", None)])
    line = _refused(capsys, config, tmp_path, "tier.json: field quantization.from", "'base-fp32'")
    assert str(alone) in line


def test_golden_rows_without_an_output_are_refused_for_the_teacher_forced_pass(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    lines = bundled.GOLDEN.read_text(encoding="utf-8").splitlines()[:3]
    lines.append(json.dumps({"input": "да", "output": ""}))
    rows.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = _config(tmp_path, [("base-int8", DEMO / "base-int8", "plain", None)], rows)
    _refused(capsys, config, tmp_path, "rows.jsonl:4", "field 'output'", "fidelity = false")


def test_the_verb_refuses_a_mix_of_kinds_in_one_line(capsys):
    assert main(["fidelity", str(DEMO / "lm-base-fp32"), str(DEMO / "base-int8"), "--rows", "2"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "base-int8" in line and "lm-base-fp32" in line and "one model kind" in line


def test_the_verb_prints_one_object_per_tier(capsys):
    args = ["fidelity", str(DEMO / "base-fp32"), str(DEMO / "base-fp32"), str(DEMO / "small-fp32"), "--rows", "3"]
    assert main([*args, "--json"]) == 0
    found = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [f["tier"] for f in found] == ["base-fp32", "small-fp32"]
    assert found[0]["kld_mean"]["value"] == 0.0 and found[0]["ppl_ratio"]["value"] == 1.0
    assert found[1]["kld_mean"]["value"] > 0.0
    assert main([*args[:-1], "0"]) == 2
    assert "--rows 0" in capsys.readouterr().err


def test_a_truncated_golden_output_scores_no_end_of_sequence_after_it():
    """A continuation cut at a token limit did not end: its golden stream is scored on its tokens alone, one
    position fewer, and the reference's NLL is the whole stream's less exactly the end-of-sequence term."""
    import dataclasses

    reference, tier = load_tier(DEMO / "lm-base-fp32"), load_tier(DEMO / "lm-base-int8")
    whole = _rows(3)
    cut = GoldenRows(whole.path, whole.sha256, tuple(dataclasses.replace(r, truncated=True) for r in whole.rows))
    ref_whole = judge(reference, [tier], whole)["references"][0]
    ref_cut = judge(reference, [tier], cut)["references"][0]
    assert ref_cut["golden_positions"] == [p - 1 for p in ref_whole["golden_positions"]]
    assert ref_cut["greedy_positions"] == ref_whole["greedy_positions"]  # the greedy path is the reference's own
    for row, nll_whole, nll_cut in zip(whole.rows, ref_whole["golden_nll"], ref_cut["golden_nll"], strict=True):
        logits = reference.teacher_forced(reference.source_ids(row.input), reference.target_ids(row.output))
        eos_term = -float(log_softmax(logits)[-1, reference.special.eos])
        assert nll_cut == pytest.approx(nll_whole - eos_term, rel=1e-6, abs=1e-6)


def test_golden_rows_state_truncated_as_a_boolean(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"input": "a", "output": "b", "truncated": true}\n{"input": "c", "output": "d"}\n')
    assert [r.truncated for r in load_golden(path).rows] == [True, False]
    path.write_text('{"input": "a", "output": "b", "truncated": "yes"}\n')
    with pytest.raises(Exception, match=r"rows.jsonl:1: field 'truncated': expected true or false, got 'yes'"):
        load_golden(path)
