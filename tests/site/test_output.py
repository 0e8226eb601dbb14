"""measure render into a docs folder: a second render writes nothing, stale pages go, a user's file never does."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from measure.cli import main
from measure.record.io import write_atomic
from measure.site.output import MANIFEST
from measure.site.source import NAV_PAGES


def _slug(doc: dict) -> str:
    return f"{doc['machine_id']}--{doc['run_id']}"


def _later(doc: dict, seconds: int) -> dict:
    """The same record as if measured ``seconds`` later (a run id of its own)."""
    new = copy.deepcopy(doc)
    when = datetime.strptime(doc["run_id"][:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC) + timedelta(seconds=seconds)
    new["run_id"] = f"{when:%Y%m%dT%H%M%SZ}-{doc['run_id'][-6:]}"
    new["started_at"] = f"{when:%Y-%m-%dT%H:%M:%SZ}"
    return new


@pytest.fixture
def tree(both_suites, tmp_path):
    """A results tree of two real records of one machine, the second a minute after the first."""
    doc, _ = both_suites
    results = tmp_path / "results"
    docs = [copy.deepcopy(doc), _later(doc, 60)]
    for d in docs:
        write_atomic(results / d["machine_id"] / f"{d['run_id']}.json", d)
    return results, docs


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _render(results: Path, out: Path, *extra: str) -> int:
    return main(["render", "--results", str(results), "--out", str(out), *extra])


def test_a_second_render_writes_nothing_and_nothing_lands_outside_out(tree, tmp_path, monkeypatch, capsys):
    results, docs = tree
    monkeypatch.chdir(tmp_path)  # where a cache folder would land (.cache/measure) if render wrote one
    monkeypatch.delenv("MEASURE_CACHE", raising=False)
    out = tmp_path / "site-src" / "docs" / "results"
    outside = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    assert _render(results, out) == 0
    said = capsys.readouterr().out
    first = _files(out)
    assert {f"{p}" for p in NAV_PAGES} <= set(first) and MANIFEST in first
    assert {"metrics.json", "summary.csv", "assets/measure.js", "assets/measure.css", "assets/plotly.min.js"} <= set(
        first
    )
    for d in docs:
        assert f"runs/{_slug(d)}.md" in first and f"runs/{_slug(d)}.json" in first
    assert f"{len(first) - 1} written, 0 removed" in said
    manifest = json.loads(first[MANIFEST][0])
    assert set(manifest["files"]) == set(first) - {MANIFEST}
    # nothing but the folder itself (and the folders above it, made for it) appeared or changed elsewhere
    made = {out, out.parent, out.parent.parent}
    after = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if p not in made and out not in p.parents}
    assert after == outside

    assert _render(results, out) == 0
    assert capsys.readouterr().out.strip().endswith("; unchanged")
    assert _files(out) == first  # same bytes, same modification times: not one file rewritten


def test_a_run_that_left_the_tree_loses_its_pages_and_a_users_file_stays(tree, tmp_path, capsys):
    results, docs = tree
    out = tmp_path / "docs" / "results"
    assert _render(results, out) == 0
    mine = out / "notes.md"  # a file of the user's beside measure's: never measure's to remove
    mine.write_text("# my notes\n", encoding="utf-8")
    (out / "runs" / "mine.txt").write_text("kept\n", encoding="utf-8")
    gone = docs[0]
    (results / gone["machine_id"] / f"{gone['run_id']}.json").unlink()
    capsys.readouterr()
    assert _render(results, out) == 0
    said = capsys.readouterr().out
    assert not (out / "runs" / f"{_slug(gone)}.md").exists() and not (out / "runs" / f"{_slug(gone)}.json").exists()
    assert (out / "runs" / f"{_slug(docs[1])}.md").is_file()
    assert "2 removed" in said
    assert mine.read_text(encoding="utf-8") == "# my notes\n" and (out / "runs" / "mine.txt").is_file()
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
    assert f"runs/{_slug(gone)}.md" not in manifest and "notes.md" not in manifest


def test_a_stale_page_changed_by_hand_is_kept_and_named(tree, tmp_path, capsys):
    results, docs = tree
    out = tmp_path / "out"
    assert _render(results, out) == 0
    page = out / "runs" / f"{_slug(docs[0])}.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nA note of mine.\n", encoding="utf-8")
    (results / docs[0]["machine_id"] / f"{docs[0]['run_id']}.json").unlink()
    capsys.readouterr()
    assert _render(results, out) == 0
    said = capsys.readouterr().out
    assert page.read_text(encoding="utf-8").endswith("A note of mine.\n")
    assert f"kept 1 changed by hand since measure wrote them: runs/{_slug(docs[0])}.md" in said
    assert f"runs/{_slug(docs[0])}.md" not in json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]


def test_a_file_in_the_way_that_measure_did_not_write_stops_the_render_before_any_write(tree, tmp_path, capsys):
    results, _ = tree
    out = tmp_path / "docs"
    out.mkdir()
    (out / "index.md").write_text("# My home page\n", encoding="utf-8")  # rendering into docs/ itself
    before = _files(out)
    assert _render(results, out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{out / 'index.md'}: exists and measure did not write it" in err and MANIFEST in err
    assert _files(out) == before


def test_a_bad_manifest_is_one_line_naming_it_and_its_field(tree, tmp_path, capsys):
    results, _ = tree
    out = tmp_path / "out"
    out.mkdir()
    for text, field in (
        ("{not json", "cannot read measure's manifest (not UTF-8 JSON)"),
        ('{"manifest_version": 9, "files": {}}', "field 'manifest_version': expected 1"),
        ('{"manifest_version": 1, "files": {"../../etc/passwd": "' + "0" * 64 + '"}}', "field 'files'"),
        ('{"manifest_version": 1, "files": {"a.md": "x"}}', "'a.md' has no sha256"),
    ):
        (out / MANIFEST).write_text(text, encoding="utf-8")
        assert _render(results, out) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{out / MANIFEST}: " in err and field in err, err
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST]


def test_a_symlink_in_the_folder_is_never_written_through(tree, tmp_path, capsys):
    results, _ = tree
    out = tmp_path / "out"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "runs").symlink_to(elsewhere, target_is_directory=True)
    assert _render(results, out) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("outside" in err or "symbolic link" in err), err
    assert list(elsewhere.iterdir()) == []


def test_render_with_the_default_results_missing_says_no_run_and_a_named_one_is_an_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEASURE_RESULTS", raising=False)
    assert main(["render", "--out", "docs/results"]) == 0  # a fresh checkout, before its first run
    assert "No run records yet" in (tmp_path / "docs" / "results" / "index.md").read_text(encoding="utf-8")
    monkeypatch.setenv("MEASURE_RESULTS", str(tmp_path / "typo"))
    assert main(["render", "--out", "docs/results"]) == 2
    assert "typo: no such folder" in capsys.readouterr().err


def test_render_watch_renders_again_when_a_record_arrives(both_suites, tmp_path):
    doc, _ = both_suites
    results = tmp_path / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    out = tmp_path / "docs" / "results"
    env = {k: v for k, v in os.environ.items() if k not in ("MEASURE_RESULTS", "MEASURE_CACHE")}
    log = (tmp_path / "watch.log").open("w")
    argv = [sys.executable, "-m", "measure", "render", "--results", str(results), "--out", str(out)]
    proc = subprocess.Popen([*argv, "--watch", "--interval", "0.2"], stdout=log, stderr=subprocess.STDOUT, env=env)

    def said() -> str:
        return (tmp_path / "watch.log").read_text(encoding="utf-8")

    def until(done, seconds: float = 120) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if done():
                return True
            time.sleep(0.2)
        return False

    try:
        assert until(lambda: (out / "runs" / f"{_slug(doc)}.md").is_file()), said()
        newer = _later(doc, 3600)
        write_atomic(results / newer["machine_id"] / f"{newer['run_id']}.json", newer)
        assert until(lambda: (out / "runs" / f"{_slug(newer)}.md").is_file()), said()
        # the page is written before the render reports it: wait for the report, not only the file
        assert until(lambda: said().count("written") == 2), said()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
    text = said()
    assert f"watching {results}" in text and text.count("written") == 2 and "Traceback" not in text
