"""The RESULTS site: real mkdocs builds from real run records; hostile text stays text; history corrects."""

from __future__ import annotations

import copy
import html as html_module
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from measure.config import load_config
from measure.record import write_atomic
from measure.runner import run
from measure.site.escape import md

ROOT = Path(__file__).resolve().parent.parent
HOSTILE_IN = "<script>alert(1)</script> | `x` **b**"
HOSTILE_OUT = "<img src=x onerror=alert(2)> | *y* [l](javascript:alert(3))"


def site_project(tmp: Path) -> Path:
    """A copy of the project's site sources, so a test build never touches the checkout."""
    for name in ("docs", "overrides"):
        shutil.copytree(ROOT / name, tmp / name)
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    (tmp / "mkdocs.yml").write_text(text.replace("site_dir: site", f"site_dir: {tmp / 'site'}"), encoding="utf-8")
    return tmp / "mkdocs.yml"


def build(project: Path, results: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEASURE_RESULTS=str(results), NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def html(project: Path, page: str) -> str:
    return (project.parent / "site" / page / "index.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def hostile_record(tmp_path_factory):
    """A real run whose golden rows include a hostile one (script tag, pipes, backticks, markup)."""
    from tests_support import write_config

    tmp = tmp_path_factory.mktemp("hostile")
    config = write_config(tmp, rows=6, repeats=2)
    rows = tmp / "rows.jsonl"
    rows.write_text(
        rows.read_text(encoding="utf-8") + json.dumps({"input": HOSTILE_IN, "output": HOSTILE_OUT}) + "\n",
        encoding="utf-8",
    )
    path = run(load_config(config), ["wallclock", "framing"], tmp / "results", argv=["test"])
    return json.loads(path.read_text(encoding="utf-8")), tmp / "results"


@pytest.fixture(scope="module")
def built(hostile_record, tmp_path_factory):
    project = site_project(tmp_path_factory.mktemp("site"))
    done = build(project, hostile_record[1])
    assert done.returncode == 0, done.stderr[-3000:]
    return project, hostile_record[0]


def test_every_page_is_built(built):
    project, doc = built
    for page in (
        "results",
        "results/wallclock",
        "results/framing",
        "results/history",
        "results/machines",
        "results/methods",
        "results/runs",
    ):
        assert (project.parent / "site" / page / "index.html").is_file(), page
    run_page = project.parent / "site" / "results" / "runs" / f"{doc['machine_id']}--{doc['run_id']}" / "index.html"
    assert run_page.is_file()
    assert doc["golden"]["sha256"] in run_page.read_text(encoding="utf-8")
    metrics = json.loads((project.parent / "site" / "metrics.json").read_text(encoding="utf-8"))
    assert doc["machine_id"] in metrics["machines"]
    assert (project.parent / "site" / "assets" / "javascripts" / "plotly.min.js").stat().st_size > 1_000_000


def test_verdicts_render_as_admonitions_with_stable_anchors(built):
    project, doc = built
    page = html(project, "results")
    date = doc["started_at"][:10]
    for topic in ("decode-linear", "harness-overhead", "framing-parity", "output-preservation", "self-acceptance"):
        assert f'id="{topic}-{date}"' in page, topic
    assert 'class="admonition success"' in page
    assert "Is decoding O(T)?" in html_module.unescape(page)


def test_chart_data_is_embedded_and_plotly_loaded_once(built):
    project, _ = built
    for page, charts in (("results/wallclock", 4), ("results/framing", 1)):
        text = html(project, page)
        assert text.count("data-measure-figure=") == charts
        assert text.count("plotly.min.js") == 1
        assert "cdn.plot.ly" not in text
        start = text.index('data-measure-figure="')
        body = text[text.index(">", start) + 1 : text.index("</script>", start)]
        assert json.loads(body)["data"]


def test_hostile_golden_row_renders_inert(built):
    import re

    project, _ = built
    text = html(project, "results/framing")
    assert "<script>alert" not in text and "<img src=x" not in text and 'href="javascript' not in text
    rows = [r for r in re.findall(r"<tr>.*?</tr>", text, flags=re.S) if "alert&#40;1" in r]
    assert rows, "the hostile row is listed among the misses"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", rows[0], flags=re.S)
    assert len(cells) == 5  # the pipes did not add table cells
    shown = [html_module.unescape(re.sub(r"</?mark>", "", c)) for c in cells]
    assert shown[2] == HOSTILE_IN and shown[3] == HOSTILE_OUT  # shown as the text it is
    assert "<strong>" not in rows[0] and "<code>" not in rows[0] and "<em>" not in rows[0]


def test_escape_covers_markdown_and_html():
    out = md("a|b`c`<i>*d*</i>\n[x](y)")
    for ch in "|`<>*[]()\n":
        assert ch not in out


def _newer(doc: dict, days: int, break_preservation: bool) -> dict:
    new = copy.deepcopy(doc)
    day = int(new["started_at"][8:10]) + days
    new["started_at"] = f"{new['started_at'][:8]}{day:02d}{new['started_at'][10:]}"
    new["run_id"] = new["started_at"][:10].replace("-", "") + "T235959Z-abcdef"
    if break_preservation:
        acc = next(a for a in new["framing"]["acceptance"] if not a["self"])
        acc["preserved"] -= 1
        acc["differing"].append({"line": 1, "input": "слово", "speculative": "slovo", "greedy": "slava"})
    return new


def test_a_new_record_regenerates_the_pages_and_the_correction_shows(built, tmp_path):
    project, doc = built
    results = tmp_path / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    assert build(project, results).returncode == 0
    assert "superseded on" not in html(project, "results/history")
    newer = _newer(doc, 1, break_preservation=True)
    write_atomic(results / newer["machine_id"] / f"{newer['run_id']}.json", newer)
    done = build(project, results)
    assert done.returncode == 0, done.stderr[-2000:]
    history = html(project, "results/history")
    assert f"superseded on {newer['started_at'][:10]}" in history
    overview = html(project, "results")
    assert newer["run_id"] in overview and 'class="admonition failure"' in overview
    framing = html(project, "results/framing")
    assert "<mark>" in framing  # the differing row is shown with its difference marked


def test_a_bad_record_fails_the_build_with_its_name(built, tmp_path):
    project, _ = built
    bad = tmp_path / "results" / "m" / "20260101T000000Z-000000.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"schema_version": 1}', encoding="utf-8")
    done = build(project, tmp_path / "results")
    assert done.returncode != 0
    assert "20260101T000000Z-000000.json" in done.stderr and "Traceback" not in done.stderr


def test_no_records_still_builds(tmp_path):
    project = site_project(tmp_path / "p")
    done = build(project, tmp_path / "empty")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "No run records yet" in html(project, "results")


def test_render_verb_writes_plain_markdown(built, tmp_path):
    from measure.cli import main

    _, doc = built
    results = tmp_path / "results"
    write_atomic(results / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    assert main(["render", "--results", str(results), "--out", str(tmp_path / "md")]) == 0
    text = (tmp_path / "md" / "framing.md").read_text(encoding="utf-8")
    assert "| tier | precision |" in text and "<script>alert" not in text
    assert (tmp_path / "md" / "metrics.json").is_file()
