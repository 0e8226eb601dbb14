"""Month archives: past months of a machine in one file, every record back byte for byte, the same to every verb."""

from __future__ import annotations

import copy
import gzip
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests_support import run_cli

from measure.errors import MeasureError
from measure.record import archive
from measure.record.io import read_bytes, write_record
from measure.record.months import archive_months, due
from measure.results.cache import SummaryCache
from measure.results.reader import load_results
from measure.site.render import render_results

MONTHS = ("2026-01", "2026-01", "2026-02", "2026-02", "2026-03", "2026-03")


def _tree(both_suites, results: Path, months: tuple[str, ...] = MONTHS) -> list[Path]:
    """Copies of one real run, a record per entry of ``months`` (gzipped and plain in turn), oldest first."""
    doc, _ = both_suites
    paths = []
    for i, month in enumerate(months):
        d: dict[str, Any] = copy.deepcopy(doc)
        d["started_at"] = f"{month}-{10 + i:02d}T08:00:00Z"
        d["run_id"] = f"{month.replace('-', '')}{10 + i:02d}T080000Z-{i:06x}"
        name = f"{d['run_id']}.json{'.gz' if i % 2 else ''}"
        paths.append(write_record(results / d["machine_id"] / name, d))
    return paths


def test_past_months_fold_into_archives_and_every_record_reads_back_the_same(both_suites, tmp_path, capsys):
    results = tmp_path / "results"
    files = _tree(both_suites, results)
    stored = {p.name.removesuffix(".gz"): read_bytes(p) for p in files}
    before = render_results(results)
    shas = sorted(s.sha256 for s in load_results(results, SummaryCache(None)).summaries)

    code, out, _ = run_cli(capsys, "archive", str(results), "--keep", "1")
    assert code == 0 and out.count("archived 2 record(s)") == 2, out
    machine = files[0].parent
    made = sorted(p.name for p in machine.iterdir())
    assert made == ["2026-01" + archive.SUFFIX, "2026-02" + archive.SUFFIX, files[4].name, files[5].name]
    for month in ("2026-01", "2026-02"):
        members = archive.read_archive(machine / f"{month}{archive.SUFFIX}")
        assert members and all(members[n] == stored[n] for n in members)  # byte for byte
    assert sorted(s.sha256 for s in load_results(results, SummaryCache(None)).summaries) == shas
    after = render_results(results)
    assert after.metrics == before.metrics
    pages = sorted(n for n in before.pages if n.endswith(".md"))
    assert pages == sorted(n for n in after.pages if n.endswith(".md"))
    for name in pages:  # every page to the last digit; a run page names its record file as the tree now holds it
        assert (
            after.pages[name] == before.pages[name].replace(".json.gz", ".json")
            or after.pages[name] == before.pages[name]
        )
    offered = {
        **{n: p.read_bytes() for n, p in after.downloads.items()},
        **{n: t.encode() for n, t in after.pages.items() if n.endswith(".json")},
    }
    for f in files:  # each paged run's record: as its own file, or the JSON its archive gives back
        name = f"results/runs/{f.parent.name}--{f.name}"
        got = offered.get(name) or offered[name.removesuffix(".gz")]
        assert (gzip.decompress(got) if name in offered and name.endswith(".gz") else got) == stored[
            f.name.removesuffix(".gz")
        ]
    assert run_cli(capsys, "archive", str(results), "--keep", "1")[1].endswith(
        "nothing to archive (no past month with runs beyond each machine's newest)\n"
    )


def _archived(both_suites, tmp_path: Path) -> tuple[Path, list[Path], Path]:
    """The records of :func:`_tree`, a copy of them as files in ``loose``, then the months past archived."""
    results, loose = tmp_path / "results", tmp_path / "loose"
    files = _tree(both_suites, results)
    shutil.copytree(results, loose)
    archive_months(results, keep=1)
    return results, files, loose


def test_every_verb_reads_an_archived_record_as_it_read_the_file(both_suites, tmp_path, capsys):
    _, files, loose = _archived(both_suites, tmp_path)
    first = files[1]
    member = first.parent / f"2026-01{archive.SUFFIX}" / first.name.removesuffix(".gz")
    twin = loose / first.parent.name / first.name
    newest = files[5]
    for argv in (["show"], ["validate"], ["compare", str(newest)]):
        got = [run_cli(capsys, *argv, str(p)) for p in (twin, member)]
        assert got[0][0] == got[1][0] == 0, got
        assert got[0][1].replace(str(twin), "FILE") == got[1][1].replace(str(member), "FILE")


def test_an_archive_named_whole_a_missing_member_or_a_truncated_archive_is_one_line(both_suites, tmp_path, capsys):
    results = tmp_path / "results"
    files = _tree(both_suites, results)
    archive_months(results, keep=1)
    box = files[0].parent / f"2026-01{archive.SUFFIX}"
    code, _, err = run_cli(capsys, "show", str(box))
    assert code == 2 and "a month archive of 2 record(s), not one record; name one of them" in err
    code, _, err = run_cli(capsys, "show", str(box / "20260101T080000Z-00ffff.json"))
    assert code == 2 and f"no record 20260101T080000Z-00ffff.json in month archive {box}" in err
    box.write_bytes(box.read_bytes()[: box.stat().st_size // 2])
    member = box / files[0].name.removesuffix(".gz")
    for argv in (["render", "--results", str(results), "--out", str(tmp_path / "out")], ["show", str(member)]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and f"{box}: not a readable month archive" in err and err.count("\n") == 1, err


def _record(both_suites, folder: Path, run_id: str, finished: str | None = None) -> Path:
    d: dict[str, Any] = copy.deepcopy(both_suites[0])
    d["run_id"], d["started_at"] = run_id, f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T09:00:00Z"
    if finished is not None:
        d["finished_at"] = finished
    return write_record(folder / d["machine_id"] / f"{run_id}.json", d)


def test_a_late_record_folds_into_its_months_archive_and_a_conflict_removes_nothing(both_suites, tmp_path):
    results = tmp_path / "results"
    files = _tree(both_suites, results)
    archive_months(results, keep=1)
    box = files[0].parent / f"2026-01{archive.SUFFIX}"
    late = _record(both_suites, results, "20260120T090000Z-0000aa")
    data = late.read_bytes()
    assert due(results, keep=1) == {box: [late]}
    (done,) = archive_months(results, keep=1)
    assert (done.path, done.records, done.added) == (box, 3, 1) and not late.exists()
    assert archive.read_archive(box)[late.name] == data
    # the same run id with other content beside its archive: refused, and nothing removed or rewritten
    clash = _record(both_suites, results, "20260120T090000Z-0000aa", finished="2026-01-20T09:59:00Z")
    kept = box.read_bytes()
    with pytest.raises(MeasureError, match=r"already in .* with other content"):
        archive_months(results, keep=1)
    assert clash.exists() and box.read_bytes() == kept


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_fresh_checkout_reads_no_archived_record_to_find_its_summary(both_suites, tmp_path):
    repo = tmp_path / "repo"
    results = repo / "results"
    _tree(both_suites, results)
    archive_months(results, keep=1)
    index = results / ".measure-cache"
    render_results(results, cache=index)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "results"], ["commit", "-qm", "history"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "clone", "-q", str(repo), "clone"], cwd=tmp_path, check=True, capture_output=True)
    clone = tmp_path / "clone" / "results"
    store = SummaryCache(clone / ".measure-cache")
    load_results(clone, store)  # this checkout's git index is new: blob ids named, hashed once more here
    for args in (["add", "results"], ["commit", "-qm", "blob ids"]):
        subprocess.run([*git, *args], cwd=tmp_path / "clone", check=True, capture_output=True)
    subprocess.run(
        ["git", "clone", "-q", str(tmp_path / "clone"), "again"], cwd=tmp_path, check=True, capture_output=True
    )
    again = tmp_path / "again" / "results"
    store = SummaryCache(again / ".measure-cache")
    assert len(load_results(again, store).summaries) == 6
    assert store.hashed == 0 and (store.hits, store.misses) == (6, 0)


def test_a_cold_build_in_workers_reads_each_archive_as_one_process_would(both_suites, tmp_path, monkeypatch):
    results = tmp_path / "results"
    _tree(both_suites, results, tuple(f"2026-{1 + i // 6:02d}" for i in range(18)))
    archive_months(results, keep=2)
    monkeypatch.setenv("MEASURE_WORKERS", "1")
    one = render_results(results)
    monkeypatch.setenv("MEASURE_WORKERS", "2")
    assert render_results(results) == one


def test_merge_knows_archived_records_and_merges_an_archive_record_by_record(both_suites, tmp_path, capsys):
    results, files, again = _archived(both_suites, tmp_path)
    code, out, _ = run_cli(capsys, "merge", str(again), "--into", str(results))
    assert code == 0 and "0 added, 6 duplicate(s), 0 conflict(s)" in out  # the archived four are known
    code, out, _ = run_cli(capsys, "merge", str(results), "--into", str(tmp_path / "fresh"))
    assert code == 0 and "6 added" in out
    for f in files:
        copied = tmp_path / "fresh" / f.parent.name / f.name.removesuffix(".gz")
        assert copied.read_bytes() == read_bytes(again / f.parent.name / f.name)
