"""Compiled templates kept between builds: the same pages, and a cache that cannot be kept costs nothing but time."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests_support import DATA_DIR

from measure.site import render as render_module
from measure.site.render import bytecode_cache, render_results

DATA = DATA_DIR


def _results(tmp_path: Path) -> Path:
    record = DATA / "record-v2.json"
    doc = json.loads(record.read_text(encoding="utf-8"))
    place = tmp_path / "results" / doc["machine_id"] / f"{doc['run_id']}.json"
    place.parent.mkdir(parents=True)
    place.write_bytes(record.read_bytes())
    return tmp_path / "results"


def test_pages_from_compiled_templates_are_the_pages_compiled_afresh(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    results = _results(tmp_path)
    first = render_results(results)  # compiles, and keeps what it compiled
    kept = list((tmp_path / "tmp").rglob("__jinja2_*.cache"))
    assert kept, "no compiled template was kept"
    assert render_results(results) == first  # loads them
    monkeypatch.setattr(render_module, "bytecode_cache", lambda: None)
    assert render_results(results) == first  # compiles afresh


def test_no_safe_folder_or_a_failed_write_still_builds(tmp_path, monkeypatch):
    results = _results(tmp_path)
    expected = render_results(results)
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "a-file"))  # no folder can be made under a file
    assert bytecode_cache() is None
    assert render_results(results) == expected
    monkeypatch.undo()
    gone = render_module._Compiled(str(tmp_path / "removed"))  # its folder is not there: every write fails
    monkeypatch.setattr(render_module, "bytecode_cache", lambda: gone)
    assert render_results(results) == expected
