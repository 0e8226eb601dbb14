"""The CLI as a user runs it: a real subprocess on the bundled demo."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests_support import DATA_DIR, ROOT

from measure import bundled


def measure(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "measure", *args], input=stdin, capture_output=True, text=True, timeout=300
    )


def test_decode_prints_one_output_per_line(golden):
    rows = golden.rows[:5]
    done = measure("decode", str(bundled.REFERENCE), *[r.input for r in rows])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [r.output for r in rows]


def test_decode_reads_stdin_and_reports_stats(golden):
    rows = golden.rows[:4]
    done = measure(
        "decode",
        str(bundled.PLAIN),
        "--draft",
        str(bundled.LITE),
        "--k",
        "4",
        "--stats",
        stdin="".join(r.input + "\n" for r in rows),
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 4
    assert "acceptance" in done.stderr and "calls" in done.stderr and "k 4" in done.stderr


def test_info_json_is_the_fingerprint():
    done = measure("info", str(bundled.LITE), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["precision"] == "int4"
    assert doc["graphs"][0]["nbits"]["block_size"] == 32
    assert doc["special_ids"]["eos"] == 1


def test_quantize_verb(tmp_path):
    done = measure("quantize", str(bundled.SMALL_FP32), str(tmp_path / "q"), "--to", "int4")
    assert done.returncode == 0, done.stderr
    assert "int4" in done.stdout
    assert (tmp_path / "q" / "decoder-kv.onnx").is_file()


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    done = measure("decode", str(tmp_path / "missing"), "слово")
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "missing" in done.stderr and "Traceback" not in done.stderr
    empty = measure("decode", str(bundled.REFERENCE), " ")
    assert empty.returncode == 2 and "empty source text" in empty.stderr


def test_run_writes_a_record_and_prints_its_path(mini_config, tmp_path):
    config = mini_config(rows=6, repeats=2)
    done = measure("run", "--config", str(config), "--suite", "framing", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    path = done.stdout.strip().splitlines()[-1]
    assert path.endswith(".json") and "results" in path
    assert "[1/" in done.stderr  # plain progress lines when not on a terminal
    assert measure("validate", path).returncode == 0
    shown = measure("show", path)
    assert shown.returncode == 0 and "framing parity" in shown.stdout and "verdicts" in shown.stdout
    checked = measure("check", "--results", str(tmp_path / "results"))
    assert checked.returncode == 0, checked.stdout
    compared = measure("compare", path, path)
    assert compared.returncode == 2 and "no wall-clock case in common" in compared.stderr


def test_compare_fail_on_slower_is_a_gate(tmp_path):

    data = DATA_DIR / "record-v1.json"
    doc = json.loads(data.read_text(encoding="utf-8"))
    case = doc["wallclock"]["cases"]["base-int8"]
    case["wall_s"] = [[w * 1.5 for w in rep] for rep in case["wall_s"]]
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(doc), encoding="utf-8")
    same = measure("compare", str(data), str(data), "--fail-on", "slower")
    assert same.returncode == 0, same.stdout
    summary = tmp_path / "summary.md"
    gated = measure("compare", str(data), str(slow), "--fail-on", "slower", "--markdown", str(summary))
    assert gated.returncode == 1
    assert "base-int8" in gated.stdout and "slower" in gated.stdout
    table = summary.read_text(encoding="utf-8")
    assert "| `base-int8` |" in table and "**slower**" in table and "Gate failed: slower in 1 case(s)." in table


def test_check_fails_on_an_fp32_preservation_bug(tmp_path):

    data = DATA_DIR / "record-v1.json"
    doc = json.loads(data.read_text(encoding="utf-8"))
    doc["tiers"]["base-int8"]["fingerprint"]["precision"] = "fp32"
    acc = doc["framing"]["acceptance"][0]
    acc["preserved"] -= 1
    path = tmp_path / "bug.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    done = measure("check", str(path))
    assert done.returncode == 1
    assert "FAIL" in done.stdout and "identical to plain greedy" in done.stdout


def test_bad_config_and_bad_record_are_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('golden = "x.jsonl"\n', encoding="utf-8")
    done = measure("run", "--config", str(bad), "--results", str(tmp_path / "r"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "x.jsonl" in done.stderr
    rec = tmp_path / "rec.json"
    rec.write_text('{"schema_version": 99}', encoding="utf-8")
    done = measure("validate", str(rec))
    assert done.returncode == 2 and "newer measure" in done.stderr and "Traceback" not in done.stderr


def test_golden_row_that_is_not_json_names_its_line(mini_config, tmp_path):
    config = mini_config(rows=3)
    rows = tmp_path / "rows.jsonl"
    rows.write_text(rows.read_text(encoding="utf-8") + "{not json}\n", encoding="utf-8")
    done = measure("run", "--config", str(config), "--results", str(tmp_path / "r"))
    assert done.returncode == 2
    assert "rows.jsonl:4: not valid JSON" in done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.rstrip().endswith(
        "(how to fix: docs/guide/your-tiers.md#golden-rows)"
    )


def test_an_unknown_config_key_points_at_the_config_reference(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('golden = "x.jsonl"\nrepeats = 3\n', encoding="utf-8")
    done = measure("run", "--config", str(bad), "--results", str(tmp_path / "r"))
    assert done.returncode == 2 and "unknown key 'repeats'" in done.stderr
    assert "(how to fix: docs/reference/config.md)" in done.stderr


def test_every_docs_hint_names_a_page_and_heading_that_exist():
    """Each ``docs="page#anchor"`` an error carries is a docs page, and the anchor one of its headings."""
    import re

    hints = {
        m
        for path in (ROOT / "measure").rglob("*.py")
        for m in re.findall(r'docs="([^"]+)"', path.read_text(encoding="utf-8"))
    }
    hints |= set(re.findall(r'_DOCS = "([^"]+)"', (ROOT / "measure/suites/golden.py").read_text(encoding="utf-8")))
    assert len(hints) >= 4
    for hint in hints:
        page, _, anchor = hint.partition("#")
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        if anchor:
            headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
            slugs = {re.sub(r"[^\w\- ]", "", h.split(" {:")[0]).strip().lower().replace(" ", "-") for h in headings}
            slugs |= set(re.findall(r"\{: #([\w-]+) \}", text))
            assert anchor in slugs, (hint, sorted(slugs))


def test_env_verb():
    done = measure("env", "--json")
    assert done.returncode == 0
    env = json.loads(done.stdout)
    assert env["machine_id"] and env["onnxruntime"] and env["machine"]["cores"] >= 1


IMPORT_FLOW = [
    # measurement never imports rendering (nor torch); rendering never imports the runtime
    (
        "measure.cli, measure.engine.tier, measure.engine.speculative, measure.tools.quantize, "
        "measure.suites.runner, measure.analysis.calibration",
        ("torch", "jinja2", "plotly", "mkdocs", "markupsafe"),
    ),
    (
        "measure.site.render, measure.site.plugin, measure.analysis.rules, measure.analysis.calibration",
        ("onnxruntime", "onnx", "torch"),
    ),
    # the site source and its writer serve Zensical too: no mkdocs (nor plotly's Python package) needed
    (
        "measure.site.source, measure.site.output, measure.site.hosts, measure.commands.render",
        ("onnxruntime", "onnx", "torch", "mkdocs", "plotly"),
    ),
]


@pytest.mark.parametrize("modules,forbidden", IMPORT_FLOW)
def test_imports_flow_one_way(modules, forbidden):
    code = (
        f"import sys, {modules};"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {forbidden!r}];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_compare_takes_its_baseline_from_a_results_tree_by_commit(tmp_path):

    data = DATA_DIR / "record-v1.json"
    doc = json.loads(data.read_text(encoding="utf-8"))
    commit = doc["environment"]["git"]["commit"] or "0" * 40
    doc["environment"]["git"]["commit"] = commit
    tree = tmp_path / "history"
    (tree / doc["machine_id"]).mkdir(parents=True)
    (tree / doc["machine_id"] / f"{doc['run_id']}.json").write_text(json.dumps(doc), encoding="utf-8")
    found = measure("compare", str(tree), str(data), "--base-commit", commit[:12])
    assert found.returncode == 0, found.stderr
    assert "Holm-corrected over" in found.stdout
    summary = tmp_path / "summary.md"
    missing = measure("compare", str(tree), str(data), "--base-commit", "f" * 12)
    assert missing.returncode == 2 and "no complete record of machine" in missing.stderr
    ok = measure(
        "compare", str(tree), str(data), "--base-commit", "f" * 12, "--missing-base-ok", "--markdown", str(summary)
    )
    assert ok.returncode == 0 and "No baseline" in summary.read_text(encoding="utf-8")


def test_quantize_int8_static_without_calibration_is_a_clear_error(tmp_path):
    done = measure("quantize", str(bundled.SMALL_FP32), str(tmp_path / "q"), "--to", "int8-static")
    assert done.returncode == 2
    assert "int8-static needs a calibration rows file" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "q").exists()
