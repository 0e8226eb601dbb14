"""The CLI as a user runs it: a real subprocess on the bundled demo."""

from __future__ import annotations

import json
import subprocess
import sys

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


def test_measurement_never_imports_torch_or_rendering():
    code = (
        "import sys, measure.cli, measure.decode, measure.speculative, measure.quantize, measure.commands.decode;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'jinja2', 'plotly', 'mkdocs')];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
