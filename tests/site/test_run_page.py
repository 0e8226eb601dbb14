"""A paged run's page: its files as ``sha256sum`` lists them, its facts cached as text, its record as stored."""

from __future__ import annotations

import hashlib
import html
import re
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from measure.record.io import read_bytes
from measure.results.cache import ANALYSIS_VERSION
from measure.site.build import FACTS
from measure.site.pages.runs import RUN_FACTS_VERSION, _sum_line, facts_from_entry
from measure.site.render import render_results


def _tree(both_suites, folder: Path) -> tuple[Path, str]:
    doc, path = both_suites
    place = folder / doc["machine_id"] / path.name
    place.parent.mkdir(parents=True)
    shutil.copy(path, place)
    return folder, f"runs/{doc['machine_id']}--{doc['run_id']}.md"


def _listing(page: str) -> list[str]:
    found = re.search(r"sha256sum -c`.*?<pre><code>(.*?)</code></pre>", page, re.S)
    assert found, "no sha256sum listing on the run page"
    return html.unescape(found.group(1)).split("\n")


def test_the_files_listing_checks_the_measured_tiers_as_sha256sum_does(both_suites, tmp_path):
    """Every file of every tier, one line each, whose sha256 is the file's on disk under the tier's own folder."""
    doc, _ = both_suites
    results, page = _tree(both_suites, tmp_path / "results")
    lines = _listing(render_results(results).pages[f"results/{page}"])
    expected = sum(len(t["fingerprint"]["files"]) for t in doc["tiers"].values())
    assert len(lines) == expected
    for tier in doc["tiers"].values():
        folder = Path(tier["path"])
        for f in tier["fingerprint"]["files"]:
            line = f"{f['sha256']}  {folder.name}/{f['name']}"
            assert line in lines
            assert hashlib.sha256((folder / f["name"]).read_bytes()).hexdigest() == f["sha256"]


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="GNU coreutils' sha256sum is not on this machine")
def test_a_name_with_a_backslash_or_a_line_break_is_listed_as_sha256sum_escapes_it(tmp_path):
    names = ["plain.onnx", "back\\slash.json", "line\nbreak.txt"]
    tier = tmp_path / "tier"
    tier.mkdir()
    lines = []
    for i, name in enumerate(names):
        (tier / name).write_bytes(bytes([i]) * 10)
        lines.append(_sum_line(hashlib.sha256(bytes([i]) * 10).hexdigest(), f"tier/{name}"))
    assert [line.count("\n") for line in lines] == [0, 0, 0]
    assert lines[1].startswith("\\") and lines[2].startswith("\\") and not lines[0].startswith("\\")
    (tmp_path / "SUMS").write_text("\n".join(lines) + "\n", encoding="utf-8")
    done = subprocess.run(["sha256sum", "-c", "SUMS"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    (tier / names[2]).write_bytes(b"changed")
    assert subprocess.run(["sha256sum", "-c", "SUMS"], cwd=tmp_path, capture_output=True).returncode == 1


def test_a_run_page_is_made_from_its_cached_facts_escaped_and_a_bad_entry_is_made_again(both_suites, tmp_path):
    results, page = _tree(both_suites, tmp_path / "results")
    cache = tmp_path / "cache"
    first = render_results(results, cache=cache).pages[f"results/{page}"]
    (entry,) = (cache / f"v{ANALYSIS_VERSION}" / FACTS).rglob("*.json")
    stored = orjson.loads(entry.read_bytes())
    assert stored["version"] == RUN_FACTS_VERSION and stored["sha256"] == entry.stem
    assert render_results(results, cache=cache).pages[f"results/{page}"] == first  # a hit renders what a miss did

    # an entry is text: whatever it holds is escaped on the page (it cannot carry markup in)
    stored["facts"][0][0][1] = "<script>alert(1)</script>"
    entry.write_bytes(orjson.dumps(stored))
    tampered = render_results(results, cache=cache).pages[f"results/{page}"]
    assert "<script>alert" not in tampered and "&#60;script&#62;alert&#40;1&#41;" in tampered

    for bad in (
        b"{not json",
        orjson.dumps({**stored, "version": RUN_FACTS_VERSION + 1}),
        orjson.dumps({**stored, "sha256": "0" * 64}),
        orjson.dumps({**stored, "facts": stored["facts"][:-1]}),
        orjson.dumps({**stored, "facts": [[["cpu", 1]], *stored["facts"][1:]]}),
    ):
        entry.write_bytes(bad)
        assert render_results(results, cache=cache).pages[f"results/{page}"] == first, bad[:40]
        assert facts_from_entry(orjson.loads(entry.read_bytes()), entry.stem) is not None  # made again, and kept


def test_a_run_page_offers_its_record_file_as_the_tree_stores_it(both_suites, tmp_path):
    doc, path = both_suites
    results, page = _tree(both_suites, tmp_path / "results")
    rendered = render_results(results)
    slug = page.removeprefix("runs/").removesuffix(".md")
    assert rendered.downloads == {f"results/runs/{slug}.json": results / doc["machine_id"] / path.name}
    assert f"[{doc['run_id']}.json]({slug}.json)" in rendered.pages[f"results/{page}"]
    assert read_bytes(rendered.downloads[f"results/runs/{slug}.json"]) == read_bytes(path)
