"""The per-record summary cache: a hit renders what a miss renders; an edited record is re-analysed."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from dataclasses import fields
from pathlib import Path

import pytest
from tests_support import DATA_DIR

from measure.analysis.history import machine_history
from measure.analysis.summary import Summary, summarize_record
from measure.analysis.verdict import Verdict
from measure.record.io import load, load_record, write_atomic
from measure.results import cache as cache_module
from measure.results.cache import ANALYSIS_VERSION, SummaryCache
from measure.results.reader import load_results
from measure.site.render import render_results

DATA = DATA_DIR


def _tree(folder: Path, n: int = 4) -> Path:
    """``n`` records of one machine a day apart, the third one slower on every case."""
    base = load_record(DATA / "record-v2.json")
    for i in range(n):
        d = copy.deepcopy(base)
        d["started_at"] = f"2026-12-{10 + i:02d}T10:00:00Z"
        d["run_id"] = f"202612{10 + i:02d}T100000Z-00000{i}"
        if i == 2:
            for case in d["wallclock"]["cases"].values():
                case["wall_s"] = [[w * 1.5 for w in rep] for rep in case["wall_s"]]
        write_atomic(folder / d["machine_id"] / f"{d['run_id']}.json", d)
    return folder


def test_a_cache_hit_renders_byte_identical_pages_to_a_miss(tmp_path):
    results, cache = _tree(tmp_path / "results"), tmp_path / "cache"
    cold = render_results(results, cache=cache)
    assert (cache / f"v{ANALYSIS_VERSION}" / "summaries").is_dir()
    warm = render_results(results, cache=cache)
    memory = render_results(results, cache=None)
    assert cold == warm == memory
    store = SummaryCache(cache)
    load_results(results, store)
    assert (store.hits, store.misses) == (4, 0)


def test_a_record_edited_in_place_is_reanalysed(tmp_path):
    results, cache = _tree(tmp_path / "results"), tmp_path / "cache"
    before = render_results(results, cache=cache)
    path = sorted(results.glob("*/*.json"))[1]
    doc = json.loads(path.read_text(encoding="utf-8"))
    for case in doc["wallclock"]["cases"].values():
        case["wall_s"] = [[w * 3 for w in rep] for rep in case["wall_s"]]
    write_atomic(path, doc)
    store = SummaryCache(cache)
    loaded = load_results(results, store)
    assert (store.hits, store.misses) == (3, 1)
    edited = next(s for s in loaded.summaries if s.run_id == doc["run_id"])
    assert edited.samples["base-int8"].median == summarize_record(load(path), edited.sha256).samples["base-int8"].median
    after = render_results(results, cache=cache)
    machine = next(k for k in after[0] if k.startswith("results/history/"))
    assert after[0][machine] != before[0][machine]
    assert after == render_results(results, cache=None)


def test_a_broken_or_foreign_cache_entry_is_rebuilt_not_trusted(tmp_path):
    results, cache = _tree(tmp_path / "results", 2), tmp_path / "cache"
    expected = render_results(results, cache=cache)
    entries = sorted((cache / f"v{ANALYSIS_VERSION}" / "summaries").rglob("*.json"))
    assert len(entries) == 2
    entries[0].write_text("{not json", encoding="utf-8")
    other = json.loads(entries[1].read_text(encoding="utf-8"))
    other["sha256"] = "0" * 64  # an entry that names another file
    entries[1].write_text(json.dumps(other), encoding="utf-8")
    store = SummaryCache(cache)
    load_results(results, store)
    assert (store.hits, store.misses) == (0, 2)
    assert render_results(results, cache=cache) == expected


def test_the_same_record_under_two_names_is_one_record(tmp_path):
    results = _tree(tmp_path / "results", 2)
    first = sorted(results.glob("*/*.json"))[0]
    (first.parent / "20261230T000000Z-ffffff.json").write_bytes(first.read_bytes())
    assert len(load_results(results, SummaryCache(None)).summaries) == 2


def test_a_warm_build_takes_unchanged_files_hashes_from_the_index(tmp_path):
    results, cache = _tree(tmp_path / "results", 2), tmp_path / "cache"
    render_results(results, cache=cache)
    index = SummaryCache(cache).hashes()
    assert sorted(index) == sorted(str(p) for p in results.glob("*/*.json"))
    path = sorted(results.glob("*/*.json"))[0]
    size, mtime, sha = index[str(path)]
    assert (size, mtime) == (path.stat().st_size, path.stat().st_mtime_ns) and len(sha) == 64
    # an index entry that no longer matches the file's stamp is never trusted: the file is hashed again
    stale = {**index, str(path): [size, mtime - 1, "0" * 64]}
    SummaryCache(cache).put_hashes(stale)
    store = SummaryCache(cache)
    loaded = load_results(results, store)
    assert (store.hits, store.misses) == (2, 0) and "0" * 64 not in loaded.paths


def test_a_fresh_clone_with_the_committed_index_summarizes_nothing(tmp_path):
    """A fresh clone has new file stamps and no stamp index: each record is hashed once, its summary taken
    from the committed index, and none is analysed again."""
    results, cache = _tree(tmp_path / "results", 3), tmp_path / "cache"
    cold = render_results(results, cache=cache)
    clone = tmp_path / "clone"
    shutil.copytree(results, clone / "results")  # new stamps, as a checkout writes
    shutil.copytree(cache, clone / "cache", ignore=shutil.ignore_patterns("index"))  # the stamps stay behind
    store = SummaryCache(clone / "cache")
    assert len(load_results(clone / "results", store).summaries) == 3
    assert (store.hits, store.misses) == (3, 0)
    assert render_results(clone / "results", cache=clone / "cache")[0] == cold[0]


KEEP = (":(exclude)results/.measure-cache/*/index/*", ":(exclude)results/.measure-cache/*/runs/*")
"""What the publish workflow leaves out of the results branch (see .github/workflows/reusable.yml)."""


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_fresh_checkout_of_the_results_branch_reads_no_record_to_find_its_summary(tmp_path):
    """As the publish job: the records and the summary index committed, checked out afresh (every file stamp new);
    git names each record's bytes, the index their sha256 and summary, and no record is read for it."""
    repo = tmp_path / "repo"
    results, index = _tree(repo / "results", 3), repo / "results" / ".measure-cache"
    cold = render_results(results, cache=index)
    _git(repo, "init", "-q")
    assert any((index / f"v{ANALYSIS_VERSION}" / "runs").rglob("*.json"))  # the paged runs' facts, kept locally
    _git(repo, "add", "results", *KEEP)
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "history")
    committed = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True).stdout
    assert "/summaries/" in committed and "/index/" not in committed and "/runs/" not in committed
    _git(tmp_path, "clone", "-q", str(repo), "clone")  # hashed once more here: git learnt the blob ids at the add
    store = SummaryCache(tmp_path / "clone" / "results" / ".measure-cache")
    load_results(tmp_path / "clone" / "results", store)
    assert store.hashed == 3 and (store.hits, store.misses) == (3, 0)
    _git(tmp_path / "clone", "add", "results", *KEEP)
    _git(tmp_path / "clone", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "blob ids")
    _git(tmp_path, "clone", "-q", str(tmp_path / "clone"), "again")
    again = tmp_path / "again" / "results"
    store = SummaryCache(again / ".measure-cache")
    assert len(load_results(again, store).summaries) == 3
    assert store.hashed == 0 and (store.hits, store.misses) == (3, 0)
    assert render_results(again, cache=again / ".measure-cache")[0] == cold[0]
    # a record edited in the checkout is one git no longer vouches for: it is read and judged again
    edited = sorted(again.glob("*/*.json"))[0]
    doc = json.loads(edited.read_text(encoding="utf-8"))
    doc["wallclock"]["cases"] = {n: c for n, c in list(doc["wallclock"]["cases"].items())[:1]}
    write_atomic(edited, doc)
    store = SummaryCache(again / ".measure-cache")
    load_results(again, store)
    assert store.hashed == 1 and store.misses == 1


def _table_entry(tmp_path: Path) -> tuple[Path, Path, Path, dict]:
    results, cache = _tree(tmp_path / "results", 1), tmp_path / "cache"
    render_results(results, cache=cache)
    (entry,) = sorted((cache / f"v{ANALYSIS_VERSION}" / "summaries").rglob("*.json"))
    return results, cache, entry, json.loads(entry.read_text(encoding="utf-8"))


def test_verdicts_are_cached_as_rows_over_a_text_table_and_come_back_equal(tmp_path):
    results, _, _, found = _table_entry(tmp_path)
    table = found["verdicts"]
    assert set(table) == {"texts", "rows"} and len(table["texts"]) == len(set(table["texts"]))
    assert len(table["texts"]) < 8 * len(table["rows"])  # questions and rules repeat: each stored once
    direct = summarize_record(load(sorted(results.glob("*/*.json"))[0]), found["sha256"])
    assert Summary.from_dict(found) == direct
    # from_table names the text fields one by one: the dataclass's leading fields must stay these, in this order
    texts = tuple(f.name for f in fields(Verdict))[:8]
    assert texts == ("topic", "question", "subject", "key", "outcome", "answer", "rule", "measured")


@pytest.mark.parametrize(
    "spoil",
    [
        lambda t: t["rows"][0].__setitem__(0, -1),  # would read the table from its end
        lambda t: t["rows"][0].__setitem__(1, len(t["texts"])),  # past the table
        lambda t: t["rows"][0].__setitem__(4, "success"),  # a text where an index belongs
        lambda t: t["rows"][0].pop(),  # a field short
        lambda t: t["texts"].__setitem__(0, 7),  # a text that is not one
        lambda t: t.pop("texts"),
        lambda t: t.__setitem__("texts", "".join(t["texts"])),  # a string indexes too, one character at a time
    ],
)
def test_a_spoiled_verdict_table_is_rebuilt_from_the_record(tmp_path, spoil):
    results, cache, entry, found = _table_entry(tmp_path)
    expected = render_results(results, cache=None)
    spoil(found["verdicts"])
    entry.write_text(json.dumps(found), encoding="utf-8")
    store = SummaryCache(cache)
    load_results(results, store)
    assert (store.hits, store.misses) == (0, 1)
    assert render_results(results, cache=cache) == expected


def test_history_builds_only_changed_comparisons_but_a_spoiled_entry_is_judged_again(tmp_path):
    results, cache = _tree(tmp_path / "results"), tmp_path / "cache"
    expected = render_results(results, cache=cache)
    entries = sorted((cache / f"v{ANALYSIS_VERSION}" / "comparisons").rglob("*.json"))
    rows = [json.loads(e.read_text(encoding="utf-8")) for e in entries]
    outcomes = {r[2] for found in rows for r in found}
    assert "slower" in outcomes and outcomes - {"faster", "slower"}  # the third record is 1.5x slower
    for entry, found in zip(entries, rows, strict=True):
        spoilt = next(r for r in found if r[2] not in ("faster", "slower"))
        spoilt.pop()  # a row History would not even build: the entry is broken all the same
        entry.write_text(json.dumps(found), encoding="utf-8")
    store = SummaryCache(cache)
    summaries = sorted(load_results(results, store).summaries, key=lambda s: s.started_at)
    history = machine_history(summaries[0].machine_id, summaries, None, store)
    assert {c.comparison.outcome for c in history.changes} == {"slower", "faster"}  # 1.5x slower, then back
    assert all(len(r) == 10 for e in entries for r in json.loads(e.read_text(encoding="utf-8")))  # rewritten whole
    assert render_results(results, cache=cache) == expected


def test_comparisons_judged_in_worker_processes_render_what_one_process_renders(tmp_path, monkeypatch):
    results = _tree(tmp_path / "results", 6)
    one = render_results(results, cache=tmp_path / "one")
    monkeypatch.setattr(cache_module, "PARALLEL_PAIRS", 2)
    monkeypatch.setenv("MEASURE_WORKERS", "2")
    jobs = []
    real = cache_module.compare_many
    monkeypatch.setattr(cache_module, "compare_many", lambda j, *a, **k: jobs.append(len(j)) or real(j, *a, **k))
    assert render_results(results, cache=tmp_path / "two") == one
    assert sum(jobs) == 0  # every pair was judged in a worker (a forked worker's calls are not counted here)
    monkeypatch.setenv("MEASURE_WORKERS", "1")
    assert render_results(results, cache=tmp_path / "three") == one
    assert sum(jobs) == 5  # the spy does see the judging when it happens in this process
    found = {p.name: p.read_bytes() for p in (tmp_path / "one").rglob("comparisons/*/*.json")}
    assert found and found == {p.name: p.read_bytes() for p in (tmp_path / "two").rglob("comparisons/*/*.json")}


def test_a_build_leaves_the_collector_on_and_rebuilds_do_not_pile_up_frozen_objects(tmp_path):
    """As ``mkdocs serve`` rebuilds: what one build froze is given back and collected by the next."""
    import gc

    results = _tree(tmp_path / "results", 3)
    counts = []
    for _ in range(6):
        render_results(results, cache=tmp_path / "cache")
        assert gc.isenabled()
        counts.append(gc.get_freeze_count())
    assert counts[0] > 0 and counts[5] <= counts[2]  # kept frozen, each build would add its cycles (~100 here)
    gc.unfreeze()


def test_the_results_stage_gives_each_record_as_stored_rereads_it_and_reads_calibrations(tmp_path):
    """The site takes record files and calibration files only through :class:`Loaded` (tests/test_layers.py)."""
    from measure.analysis.calibration import calibrate
    from measure.record.archive import write_archive
    from measure.record.io import stored_bytes
    from measure.results.calibration_file import write

    results = _tree(tmp_path / "results", n=3)
    plain, zipped, member = sorted(results.glob("*/*.json"))
    doc = load_record(zipped)
    zipped.unlink()
    (zipped.parent / f"{zipped.name}.gz").write_bytes(stored_bytes(doc, zipped.parent / f"{zipped.name}.gz"))
    box = member.parent / "2026-12.archive.json.gz"
    write_archive(box, {member.name: member.read_bytes()})
    member.unlink()
    loaded = load_results(results, SummaryCache(None))
    by_name = {loaded.paths[s.sha256].name: s for s in loaded.summaries}
    assert sorted(by_name) == sorted([plain.name, f"{zipped.name}.gz", member.name])

    kept = {name: loaded.stored(s) for name, s in by_name.items()}
    assert [(k.suffix, k.text is None) for k in (kept[plain.name], kept[f"{zipped.name}.gz"])] == [
        (".json", True),
        (".json.gz", True),
    ]
    assert kept[member.name].suffix == ".json" and kept[member.name].path.parent == box
    assert json.loads(kept[member.name].text or "")["run_id"] == load_record(box / member.name)["run_id"]

    record, same = loaded.reread(by_name[plain.name], suites=False)
    assert same and record.run_id == load_record(plain)["run_id"]
    edited = load_record(plain)
    for case in edited["wallclock"]["cases"].values():  # edited after the build read it
        case["wall_s"] = [[w * 3 for w in rep] for rep in case["wall_s"]]
    write_atomic(plain, edited)
    assert loaded.reread(by_name[plain.name])[1] is False  # validated again; nothing may be cached for its hash

    machine = doc["machine_id"]
    assert loaded.calibrations([machine]) == {machine: None}
    cal = calibrate(loaded.summaries, machine)
    write(results, cal)
    assert loaded.calibrations([machine])[machine] == cal
