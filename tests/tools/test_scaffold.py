"""measure init: roles and pairs read from real tier folders, the files it writes, and that it never overwrites."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from measure import bundled
from measure.cli import main
from measure.suites.config import load_config
from measure.tools.scaffold import find_tier_folders, propose, read_tier


@pytest.fixture(scope="module")
def facts():
    return {t.name: t for t in (read_tier(p) for p in bundled.TIERS)}


def test_the_proposal_for_the_bundled_tiers_is_the_demo_config(facts):
    proposal = propose(list(facts.values()))
    roles = {t.name: t.role for t in proposal.tiers}
    demo = load_config(bundled.CONFIG)
    seq2seq = [t for t in demo.tiers if not t.name.startswith(("lm-", "genai-"))]  # decoder-only: the test below
    assert {t.name: roles[t.name] for t in seq2seq} == {t.name: t.role for t in seq2seq}
    assert {(p.drafter, p.verifier) for p in demo.pairs if p.drafter in roles} <= set(proposal.pairs)
    # the two other small fp32 layouts draft for the fp32 base, as small-fp32 does
    assert {("small-fp32-optimum", "base-fp32"), ("small-fp32-merged", "base-fp32")} <= set(proposal.pairs)
    assert len(proposal.pairs) == 5 and proposal.notes == ()
    assert facts["small-int4"].precision == "int4" and facts["small-fp32-optimum"].layout == "optimum"


LM = ("lm-base-fp32", "lm-base-int8", "lm-small-int4", "lm-small-fp32")


def test_decoder_only_tiers_get_roles_and_pairs_of_their_own_kind(facts):
    lm = [read_tier(bundled.DEMO_DIR / name) for name in LM]
    assert {t.kind for t in lm} == {"causal"} and facts["base-int8"].kind == "seq2seq"
    proposal = propose([facts["base-int8"], facts["small-int4"], *lm])
    roles = {t.name: t.role for t in proposal.tiers}
    assert roles == {
        "base-int8": "plain",
        "small-int4": "lite",
        "lm-base-fp32": "reference",
        "lm-base-int8": "verifier",
        "lm-small-int4": "lite",
        "lm-small-fp32": "drafter",
    }
    assert proposal.pairs == (
        ("small-int4", "base-int8"),
        ("lm-small-int4", "lm-base-int8"),
        ("lm-small-fp32", "lm-base-fp32"),
    )
    demo = load_config(bundled.CONFIG)
    assert {(p.drafter, p.verifier) for p in demo.pairs if p.drafter.startswith("lm-")} <= set(proposal.pairs)


def test_init_over_both_kinds_writes_a_config_that_run_accepts(tmp_path, monkeypatch, capsys):
    from measure.suites.runner import load_tiers, speculative_pairs

    for name in ("base-int8", "small-int4", "lm-base-int8", "lm-small-int4", "genai-base-fp32"):
        shutil.copytree(bundled.DEMO_DIR / name, tmp_path / "models" / name)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--site", "mkdocs"]) == 0
    capsys.readouterr()
    config = load_config(tmp_path / "measure.toml")
    assert [t.name for t in config.tiers] == ["base-int8", "lm-base-int8", "lm-small-int4", "small-int4"]
    pairs = speculative_pairs(config, load_tiers(config, {}))
    assert {name: type(p).__name__ for name, p in pairs.items()} == {
        "small-int4->base-int8": "Pair",
        "lm-small-int4->lm-base-int8": "Pair",
    }


def test_a_lone_fp32_tier_is_plain_and_says_so(facts):
    proposal = propose([facts["small-fp32-optimum"]])
    assert [(t.name, t.role) for t in proposal.tiers] == [("small-fp32-optimum", "plain")]
    assert proposal.pairs == ()
    assert proposal.notes == ("no int8 tier: small-fp32-optimum (fp32) is plain, the anchor of every ratio",)


def test_no_pair_across_vocabularies(facts, tier_copy):
    folder = tier_copy(bundled.LITE)
    path = folder / "tokenizer.json"
    tok = json.loads(path.read_text(encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    vocab["ä"] = vocab.pop("a")  # same size, one token spelled otherwise: not the verifier's vocabulary
    path.write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    other = read_tier(folder)
    assert other.vocabulary != facts["small-int4"].vocabulary
    proposal = propose([facts["base-int8"], other, facts["small-int8"]])
    assert proposal.pairs == (("small-int8", "base-int8"),)
    assert proposal.notes == ("small-int4 does not share base-int8's vocabulary: no speculative pair",)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_init_writes_a_config_that_loads_and_a_second_init_changes_nothing(tmp_path, monkeypatch, capsys):
    for src in (bundled.REFERENCE, bundled.PLAIN, bundled.LITE):
        shutil.copytree(src, tmp_path / "models" / src.name)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--site", "mkdocs"]) == 0  # finds the tier folders itself
    out = capsys.readouterr().out
    written = ["measure.toml", "golden.jsonl", "mkdocs.yml", "docs/index.md", ".github/workflows/measure.yml"]
    for name in written:
        assert f"wrote  {name}" in out, name
    assert "next   measure run --config measure.toml && measure check && mkdocs build --strict" in out
    config = load_config(tmp_path / "measure.toml")
    assert [(t.name, t.role) for t in config.tiers] == [
        ("base-fp32", "reference"),
        ("base-int8", "plain"),
        ("small-int4", "lite"),
    ]
    assert [(p.drafter, p.verifier) for p in config.pairs] == [("small-int4", "base-int8")]
    assert config.tier("base-int8").path == (tmp_path / "models" / "base-int8").resolve()
    assert config.golden == (tmp_path / "golden.jsonl").resolve()
    assert "  - measure:\n      results: results\n" in (tmp_path / "mkdocs.yml").read_text(encoding="utf-8")
    assert "      site: mkdocs\n" in (tmp_path / ".github" / "workflows" / "measure.yml").read_text(encoding="utf-8")

    (tmp_path / "measure.toml").write_text("# edited by hand\n", encoding="utf-8")  # never overwritten
    before = _snapshot(tmp_path)
    assert main(["init"]) == 0
    out = capsys.readouterr().out
    assert _snapshot(tmp_path) == before
    assert "nothing written: every file measure init writes is already there" in out
    assert "wrote" not in out and "kept   measure.toml" in out


def test_init_keeps_an_existing_site_and_names_the_plugin_block(tmp_path, monkeypatch, capsys):
    shutil.copytree(bundled.SMALL_OPTIMUM, tmp_path / "tier")
    (tmp_path / "rows.jsonl").write_text(bundled.GOLDEN.read_text(encoding="utf-8").splitlines()[0] + "\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: theirs\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "tier", "--golden", "rows.jsonl"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "mkdocs.yml").read_text(encoding="utf-8") == "site_name: theirs\n"
    assert "kept   mkdocs.yml" in out and "add measure to its plugins:\nplugins:\n  - search\n  - measure:" in out
    assert not (tmp_path / "golden.jsonl").exists() and not (tmp_path / "docs").exists()
    assert "next   measure run --config measure.toml && measure check && mkdocs build --strict" in out
    config = load_config(tmp_path / "measure.toml")
    assert config.golden == (tmp_path / "rows.jsonl").resolve()
    assert [(t.name, t.role) for t in config.tiers] == [("small-fp32-optimum", "plain")]


def test_init_with_nothing_to_measure_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("measure init: error: ") and "no tier folders found" in err and err.count("\n") == 1
    shutil.copytree(bundled.SMALL_OPTIMUM, tmp_path / "tier")
    (tmp_path / "bad.jsonl").write_text('{"input": "x"}\n', encoding="utf-8")
    assert main(["init", "tier", "--golden", "bad.jsonl"]) == 2
    assert "bad.jsonl:1: field 'output'" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl", "tier"]  # nothing written


def test_tier_folders_are_found_below_the_root_but_not_in_environments(tmp_path):
    shutil.copytree(bundled.SMALL_OPTIMUM, tmp_path / "a" / "b" / "tier")
    shutil.copytree(bundled.SMALL_MERGED, tmp_path / ".venv" / "tier")
    shutil.copytree(bundled.LITE, tmp_path / "node_modules" / "tier")
    assert find_tier_folders(tmp_path) == [tmp_path / "a" / "b" / "tier"]


def test_two_tiers_with_one_name_are_numbered_in_the_config(facts, tmp_path):
    shutil.copytree(bundled.LITE, tmp_path / "other" / "small-int4")
    again = read_tier(tmp_path / "other" / "small-int4")
    proposal = propose([facts["base-int8"], facts["small-int4"], again])
    assert [(t.name, t.role) for t in proposal.tiers] == [
        ("base-int8", "plain"),
        ("small-int4", "lite"),
        ("small-int4-2", "drafter"),
    ]
    assert proposal.pairs == (("small-int4", "base-int8"), ("small-int4-2", "base-int8"))


def test_without_int8_the_first_fp32_tier_is_plain_and_a_second_one_the_reference(facts):
    proposal = propose([facts["small-fp32"], facts["small-fp32-optimum"], facts["small-int4"]])
    assert [(t.name, t.role) for t in proposal.tiers] == [
        ("small-fp32", "plain"),
        ("small-fp32-optimum", "reference"),
        ("small-int4", "lite"),
    ]
    assert proposal.pairs == ()  # one model: nothing smaller to draft with


def test_init_writes_the_site_config_of_the_generator_it_finds(tmp_path, monkeypatch, capsys):
    """Zensical installed and no site config: zensical.toml, whose nav lists the pages measure render writes."""
    import tomllib
    from importlib.util import find_spec

    from measure.site.hosts import HOSTS, detect
    from measure.site.nav import PAGES

    assert find_spec("zensical") is not None  # the test extra installs it
    shutil.copytree(bundled.SMALL_OPTIMUM, tmp_path / "tier")
    monkeypatch.chdir(tmp_path)
    assert detect(tmp_path) is HOSTS["zensical"]
    assert main(["init", "tier"]) == 0
    out = capsys.readouterr().out
    assert "wrote  zensical.toml" in out and not (tmp_path / "mkdocs.yml").exists()
    next_line = "next   measure run --config measure.toml && measure check && measure render --out docs/results"
    assert f"{next_line} && zensical build --strict" in out
    assert "serve  measure render --out docs/results --watch & zensical serve" in out
    project = tomllib.loads((tmp_path / "zensical.toml").read_text(encoding="utf-8"))["project"]
    assert project["nav"][0] == {"Home": "index.md"}
    assert project["nav"][1]["Results"] == [{p.title: f"results/{p.path}"} for p in PAGES]
    assert project["theme"]["font"] is False  # no web fonts: the site works offline
    assert "      site: zensical\n" in (tmp_path / ".github" / "workflows" / "measure.yml").read_text(encoding="utf-8")
    assert detect(tmp_path) is HOSTS["zensical"]  # the config now there names it


@pytest.mark.parametrize(
    ("existing", "host"),
    [("zensical.toml", "zensical"), ("properdocs.yml", "properdocs"), ("mkdocs.yml", "mkdocs")],
)
def test_the_site_config_in_the_repository_names_its_generator(tmp_path, existing, host):
    from measure.site.hosts import detect

    (tmp_path / existing).write_text("site_name = 'x'\n", encoding="utf-8")
    assert detect(tmp_path).name == host


def test_init_for_zensical_beside_an_existing_mkdocs_yml_names_the_nav_to_add(tmp_path, monkeypatch, capsys):
    shutil.copytree(bundled.SMALL_OPTIMUM, tmp_path / "tier")
    (tmp_path / "mkdocs.yml").write_text("site_name: theirs\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "tier", "--site", "zensical"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "mkdocs.yml").read_text(encoding="utf-8") == "site_name: theirs\n"
    assert not (tmp_path / "zensical.toml").exists()  # Zensical reads the mkdocs.yml that is there
    assert "kept   mkdocs.yml" in out
    assert 'list measure\'s pages in its nav:\nnav:\n  - Home: index.md\n  - "Results":\n' in out
    assert '      - "Wall-clock": results/wallclock.md\n' in out


def test_init_for_properdocs_writes_properdocs_yml_with_the_plugin(tmp_path, monkeypatch, capsys):
    import yaml

    shutil.copytree(bundled.SMALL_OPTIMUM, tmp_path / "tier")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "tier", "--site", "properdocs"]) == 0
    out = capsys.readouterr().out
    doc = yaml.safe_load((tmp_path / "properdocs.yml").read_text(encoding="utf-8"))
    assert doc["plugins"] == ["search", {"measure": {"results": "results"}}]
    assert {"attr_list", "admonition", "tables", "toc"} <= set(doc["markdown_extensions"])
    assert "&& properdocs build --strict" in out and "serve  properdocs serve" in out


def _strip_source(folder: Path) -> None:
    """The tier as optimum and onnxruntime's quantizers leave it: nothing says what it was made from."""
    meta = json.loads((folder / "tier.json").read_text(encoding="utf-8"))
    meta.pop("quantization", None)
    (folder / "tier.json").write_text(json.dumps(meta), encoding="utf-8")


def test_init_names_each_quantized_tiers_reference_from_its_graphs_and_says_which_has_none(
    tmp_path, monkeypatch, capsys
):
    for name in ("lm-base-fp32", "lm-base-int8", "lm-small-int4"):
        shutil.copytree(bundled.DEMO_DIR / name, tmp_path / "models" / name)
        _strip_source(tmp_path / "models" / name)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--site", "mkdocs"]) == 0
    out = capsys.readouterr().out
    config = load_config(tmp_path / "measure.toml")
    assert {t.name: t.reference for t in config.tiers} == {
        "lm-base-fp32": None,
        "lm-base-int8": "lm-base-fp32",
        "lm-small-int4": None,  # its source (lm-small-fp32) is not among the tiers
    }
    assert "lm-base-int8 judged against lm-base-fp32" in out
    assert "note   lm-small-int4 has no reference (no full-precision tier of its kind holds its weights)" in out
    text = (tmp_path / "measure.toml").read_text(encoding="utf-8")
    assert "4 layers, 8 attention heads (2 key/value) x 16" in text  # config.json's heads, not the cache's
    assert "[run]" not in text  # tiers of a few MB: no budget proposed


def test_init_proposes_a_budget_for_tiers_over_the_stated_size_and_says_why(tmp_path, monkeypatch, capsys):
    from measure.tools import scaffold

    shutil.copytree(bundled.DEMO_DIR / "lm-base-fp32", tmp_path / "lm-base-fp32")
    monkeypatch.setattr(scaffold, "BUDGET_BYTES", 1)
    monkeypatch.chdir(tmp_path)
    assert main(["init", "lm-base-fp32"]) == 0
    out = capsys.readouterr().out
    assert load_config(tmp_path / "measure.toml").run.budget_s == 15 * 60
    assert "[run] budget = 15m (tiers over 0 MB)" in out
    assert "# the largest tier is" in (tmp_path / "measure.toml").read_text(encoding="utf-8")
    assert "site   " in out  # the generator it chose, and how to pick another


def test_init_with_prompts_writes_the_reference_tiers_own_continuations(tmp_path, monkeypatch, capsys):
    from measure.engine.load import load_tier
    from measure.suites.golden import load_golden

    for name in ("lm-base-fp32", "lm-base-int8"):
        shutil.copytree(bundled.DEMO_DIR / name, tmp_path / name)
    inputs = [r.input for r in load_golden(bundled.DEMO_DIR / "golden-v1.jsonl").rows[:3]]
    (tmp_path / "prompts.txt").write_text("\n".join(inputs) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "lm-base-fp32", "lm-base-int8", "--prompts", "prompts.txt", "--max-new-tokens", "6"]) == 0
    out = capsys.readouterr().out
    assert "lm-base-fp32's own greedy continuations of the 3 prompts of prompts.txt (6 new tokens each" in out
    reference = load_tier(tmp_path / "lm-base-fp32")
    rows = load_golden(tmp_path / "golden.jsonl").rows
    assert [r.input for r in rows] == inputs
    decoded = [reference.greedy(i, max_new_tokens=6) for i in inputs]
    assert [r.output for r in rows] == [d.text for d in decoded]
    assert [r.truncated for r in rows] == [d.stopped != "eos" for d in decoded]  # cut at 6: no eos scored after
    config = load_config(tmp_path / "measure.toml")
    assert config.wallclock.max_new_tokens == config.framing.max_new_tokens == 6


def test_a_chat_template_is_applied_only_when_asked_in_rows_and_run_alike(tmp_path, monkeypatch, capsys):
    from measure.engine.load import load_tier
    from measure.suites.golden import load_golden

    folder = tmp_path / "lm-base-fp32"
    shutil.copytree(bundled.DEMO_DIR / "lm-base-fp32", folder)
    meta = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    # the demo model was trained on "{input}=": a template that renders to it keeps its decodes meaningful
    meta["chat_template"] = (
        "{% for m in messages %}{{ m.content }}{% endfor %}{% if add_generation_prompt %}={% endif %}"
    )
    (folder / "tokenizer_config.json").write_text(json.dumps(meta), encoding="utf-8")
    (text,) = [r.input for r in load_golden(bundled.DEMO_DIR / "golden-v1.jsonl").rows[:1]]
    (tmp_path / "prompts.txt").write_text(text + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["init", "lm-base-fp32", "--prompts", "prompts.txt", "--chat-template"]) == 0
    capsys.readouterr()
    config = load_config(tmp_path / "measure.toml")
    assert config.tiers[0].prompt == "{input}="  # rendered from the template, written for the run
    (row,) = load_golden(tmp_path / "golden.jsonl").rows
    assert row.output == load_tier(folder, prompt="{input}=").greedy(text, max_new_tokens=32).text


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--chat-template"], "--chat-template: applies to --prompts"),
        (["--prompts", "empty.txt"], "empty.txt: no prompts"),
        (["--prompts", "prompts.txt", "--max-new-tokens", "0"], "--max-new-tokens 0: expected 1 to 4096"),
        (
            ["--prompts", "prompts.txt", "--chat-template"],
            "no chat template (tokenizer_config.json chat_template, or chat_template.jinja); leave out",
        ),
    ],
)
def test_bad_prompt_options_are_one_line_and_write_nothing(tmp_path, monkeypatch, capsys, args, says):
    shutil.copytree(bundled.DEMO_DIR / "lm-base-fp32", tmp_path / "lm-base-fp32")
    (tmp_path / "lm-base-fp32" / "tokenizer_config.json").unlink()
    (tmp_path / "empty.txt").write_text("\n\n", encoding="utf-8")
    (tmp_path / "prompts.txt").write_text("abc\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["init", "lm-base-fp32", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before
