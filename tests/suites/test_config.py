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
