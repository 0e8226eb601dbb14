"""Suite config: the bundled demo's loads; every mistake is a one-line error naming the key or path."""

from __future__ import annotations

import pytest

from measure.errors import MeasureError
from measure.suites.config import load_config


def test_bundled_config_resolves():
    config = load_config()
    assert config.plain.name == "base-int8"
    assert {p.name for p in config.pairs} >= {"small-int4->base-int8"}
    assert config.golden.is_file()
    assert all(t.path.is_dir() for t in config.tiers)
    assert config.to_dict()["wallclock"]["k"] == [2, 4, 8]


def _write(mini_config, replace: tuple[str, str] | None = None, append: str = ""):
    path = mini_config()
    text = path.read_text(encoding="utf-8")
    if replace:
        text = text.replace(*replace)
    path.write_text(text + append, encoding="utf-8")
    return path


def test_unknown_key_is_named(mini_config):
    path = _write(mini_config, append="\n[policy]\nspeedup_mni = 1.0\n")
    with pytest.raises(MeasureError, match=r"unknown key policy\.speedup_mni; expected one of exponent_max"):
        load_config(path)


def test_unknown_top_level_key(mini_config):
    path = _write(mini_config, replace=('golden = "rows.jsonl"', 'threads = 2\ngolden = "rows.jsonl"'))
    with pytest.raises(MeasureError, match="unknown key 'threads'"):
        load_config(path)


def test_missing_tier_folder_is_named(mini_config):
    path = _write(mini_config, replace=('/base-int8"', '/base-int9"'))
    with pytest.raises(MeasureError, match=r"tiers\[1\]\.path = .*base-int9.*folder not found"):
        load_config(path)


def test_missing_golden_file(mini_config):
    path = _write(mini_config, replace=('golden = "rows.jsonl"', 'golden = "nope.jsonl"'))
    with pytest.raises(MeasureError, match=r"golden = 'nope\.jsonl': file not found"):
        load_config(path)


def test_pair_must_name_known_tiers(mini_config):
    path = _write(mini_config, replace=('drafter = "small-int4"', 'drafter = "tiny"'))
    with pytest.raises(MeasureError, match=r"pairs\[0\]\.drafter = 'tiny': expected one of base-fp32"):
        load_config(path)


def test_wrong_type_is_named(mini_config):
    path = _write(mini_config, replace=("repeats = 3", 'repeats = "three"'))
    with pytest.raises(MeasureError, match=r"wallclock\.repeats: expected int"):
        load_config(path)


def test_malformed_toml(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[[tiers]\nname =", encoding="utf-8")
    with pytest.raises(MeasureError, match="not valid TOML"):
        load_config(path)


@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("wallclock.max_new_tokens", "\n[wallclock]\nmax_new_tokens = 0\n"),
        ("framing.max_new_tokens", "\n[framing]\nmax_new_tokens = -3\n"),
        ("tiers[1].max_new_tokens", None),
    ],
)
def test_max_new_tokens_below_one_is_one_line_naming_the_key(mini_config, where, text):
    if text is None:
        path = _write(mini_config, replace=('role = "plain"', 'role = "plain"\nmax_new_tokens = 0'))
    else:  # the mini config has its own [wallclock] and [framing]: the key goes into them
        section = text.split("]")[0].strip() + "]"
        path = _write(mini_config, replace=(section, section + text.split("]", 1)[1].rstrip()))
    with pytest.raises(MeasureError) as err:
        load_config(path)
    message = str(err.value)
    assert "\n" not in message and f"{where}: expected an integer >= 1" in message and str(path) in message


def test_max_new_tokens_per_suite_and_per_tier(mini_config):
    path = _write(
        mini_config,
        replace=("[wallclock]", "[wallclock]\nmax_new_tokens = 24"),
        append="",
    )
    text = path.read_text(encoding="utf-8").replace('role = "plain"', 'role = "plain"\nmax_new_tokens = 5')
    path.write_text(text.replace("[framing]", "[framing]\nmax_new_tokens = 12"), encoding="utf-8")
    config = load_config(path)
    assert config.new_tokens("wallclock", "base-fp32") == 24 and config.new_tokens("framing", "base-fp32") == 12
    assert config.new_tokens("wallclock", "base-int8") == 5 == config.new_tokens("framing", "base-int8")
    stored = config.to_dict()
    assert stored["wallclock"]["max_new_tokens"] == 24 and stored["tiers"][1]["max_new_tokens"] == 5
    assert "max_new_tokens" not in load_config(mini_config(name="plain.toml")).to_dict()["wallclock"]


def test_a_budget_in_the_config_reads_as_seconds_and_a_bad_one_names_the_key(mini_config):
    config = load_config(_write(mini_config, append='\n[run]\nbudget = "15m"\n'))
    assert config.run.budget_s == 900 and config.to_dict()["run"] == {"budget_s": 900}
    with pytest.raises(MeasureError, match=r"suite.toml: run.budget: expected a duration"):
        load_config(_write(mini_config, append='\n[run]\nbudget = "soon"\n'))
    assert "run" not in load_config(mini_config(name="none.toml")).to_dict()


def test_a_tier_names_its_model_and_a_bad_name_is_one_line(mini_config):
    path = mini_config(name="model.toml")
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('role = "plain"', 'role = "plain"\nmodel = "base"', 1), encoding="utf-8")
    config = load_config(path)
    assert config.tier("base-int8").model == "base" and config.tier("base-fp32").model is None
    assert config.to_dict()["tiers"][1]["model"] == "base" and "model" not in config.to_dict()["tiers"][0]
    path.write_text(text.replace('role = "plain"', 'role = "plain"\nmodel = ""', 1), encoding="utf-8")
    with pytest.raises(MeasureError, match=r"model.toml: tiers\[1\]\.model: expected the name of the model"):
        load_config(path)
