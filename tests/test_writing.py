"""Every write: inside its tree, never through a symlink, atomic, never NaN."""

from __future__ import annotations

import json
import math

import pytest

from measure.errors import MeasureError
from measure.writing import finite, write_bytes, write_json, write_text


def test_a_write_lands_whole_and_readable(tmp_path):
    path = write_json(tmp_path / "tree" / "m" / "r.json", {"a": 1}, root=tmp_path / "tree")
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": 1}
    assert path.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in path.parent.iterdir()] == ["r.json"]  # no temporary file left behind


def test_dot_dot_cannot_leave_the_tree(tmp_path):
    with pytest.raises(MeasureError, match=r"outside .*tree; refusing"):
        write_text(tmp_path / "tree" / ".." / "escaped.txt", "x", root=tmp_path / "tree")
    assert not (tmp_path / "escaped.txt").exists()


def test_a_symlinked_folder_cannot_carry_a_write_outside(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "m").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(MeasureError, match="outside"):
        write_text(tmp_path / "tree" / "m" / "f.txt", "x", root=tmp_path / "tree")
    assert not list((tmp_path / "outside").iterdir())


def test_a_writer_that_checks_each_folder_once_still_refuses_a_symlinked_one(tmp_path):
    """As the summary cache writes: each entry folder resolved once; a committed index with a symlinked folder
    carries no write outside, however many entries go there, and a symlinked entry is replaced, not followed."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "kept.json").write_text("kept", encoding="utf-8")
    (tmp_path / "tree" / "ok").mkdir(parents=True)
    (tmp_path / "tree" / "ab").symlink_to(tmp_path / "outside", target_is_directory=True)
    checked: set = set()
    for name in ("a.json", "b.json"):
        with pytest.raises(MeasureError, match="outside"):
            write_bytes(tmp_path / "tree" / "ab" / name, b"x", root=tmp_path / "tree", checked=checked)
        write_bytes(tmp_path / "tree" / "ok" / name, b"x", root=tmp_path / "tree", checked=checked)
    assert checked == {tmp_path / "tree" / "ok"}
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["kept.json"]
    (tmp_path / "tree" / "ok" / "c.json").symlink_to(tmp_path / "outside" / "kept.json")
    write_bytes(tmp_path / "tree" / "ok" / "c.json", b"new", root=tmp_path / "tree", checked=checked)
    assert (tmp_path / "outside" / "kept.json").read_text(encoding="utf-8") == "kept"
    assert not (tmp_path / "tree" / "ok" / "c.json").is_symlink()


def test_a_dangling_symlink_target_is_refused(tmp_path):
    (tmp_path / "link.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(MeasureError, match="symbolic link"):
        write_json(tmp_path / "link.json", {})
    assert not (tmp_path / "elsewhere.json").exists()


def test_a_file_in_the_way_of_a_folder_is_one_message(tmp_path):
    (tmp_path / "m").write_text("x", encoding="utf-8")
    with pytest.raises(MeasureError, match=r"m: cannot create this folder \(a file is in the way\)"):
        write_text(tmp_path / "m" / "r.json", "{}")


def test_nan_is_refused_naming_the_file_and_nothing_is_written(tmp_path):
    with pytest.raises(MeasureError, match=r"r\.json: refusing to write a non-finite number"):
        write_json(tmp_path / "r.json", {"x": math.nan})
    assert not list(tmp_path.iterdir())


def test_finite_makes_derived_non_finite_numbers_null():
    assert finite({"a": [1.0, math.inf, {"b": math.nan}], "c": "nan", "d": 2}) == {
        "a": [1.0, None, {"b": None}],
        "c": "nan",
        "d": 2,
    }
