"""Golden rows: the bundled file and the errors for malformed ones."""

from __future__ import annotations

import hashlib

import pytest

from measure import bundled
from measure.errors import MeasureError
from measure.suites.golden import char_error_rate, edit_distance, load_golden


def test_bundled_golden_rows(golden):
    assert 60 <= len(golden) <= 70
    assert golden.sha256 == hashlib.sha256(bundled.GOLDEN.read_bytes()).hexdigest()
    assert any(" " in r.input for r in golden.rows), "the harder block has two-word joins"
    assert all(r.output for r in golden.rows)


def test_bad_json_line_is_named(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"input": "а", "output": "a"}\n{"input": "б", "output": \n', encoding="utf-8")
    with pytest.raises(MeasureError, match=r"rows\.jsonl:2: not valid JSON"):
        load_golden(path)


def test_missing_field_is_named(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"input": "а", "output": "a"}\n\n{"input": "б"}\n', encoding="utf-8")
    with pytest.raises(MeasureError, match=r"rows\.jsonl:3: field 'output': expected a string"):
        load_golden(path)


def test_missing_file(tmp_path):
    with pytest.raises(MeasureError, match="cannot read golden rows"):
        load_golden(tmp_path / "absent.jsonl")


def test_character_error_rate():
    assert char_error_rate("kitten", "sitting") == pytest.approx(3 / 7)
    assert char_error_rate("abc", "abc") == 0.0


def test_edit_distance_counts_each_kind_of_edit_once():
    assert edit_distance("", "abc") == 3
    assert edit_distance("abc", "") == 3
    assert edit_distance("abc", "abd") == 1
    assert edit_distance("abc", "ac") == 1
    assert edit_distance("ac", "abc") == 1
    assert edit_distance("flaw", "lawn") == 2
    assert edit_distance([1, 2, 3], [1, 2, 3]) == 0
    assert char_error_rate("", "") == 0.0
    assert char_error_rate("ab", "") == 2.0
    assert char_error_rate("abcd", "abce") == 0.25
