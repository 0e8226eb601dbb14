"""The package type-checks: mypy, run with the project's own configuration (``[tool.mypy]`` in pyproject.toml),
finds nothing, and that configuration is strict where it says it is (the engine) and only there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"

pytest.importorskip("mypy", reason="mypy is not installed (the test extra brings it: pip install -e '.[test]')")


def _mypy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(CONFIG), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_package_type_checks() -> None:
    done = _mypy(cwd=ROOT)
    assert done.returncode == 0, f"mypy found errors (python -m mypy, from {ROOT}):\n{done.stdout}{done.stderr}"


def test_engine_alone_is_strict(tmp_path: Path) -> None:
    """The same untyped function is an error in an engine module and passes elsewhere: the strict flags reach
    the engine and nothing else (mypy 2.4 would spread a per-module ``strict = true`` to every module)."""
    untyped = "def scale(x, by):\n    return x * by\n"
    for path in ("measure/__init__.py", "measure/engine/__init__.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    (tmp_path / "measure/engine/planted.py").write_text(untyped)
    (tmp_path / "measure/planted.py").write_text(untyped)
    done = _mypy(
        "--cache-dir", str(tmp_path / "cache"), "measure/engine/planted.py", "measure/planted.py", cwd=tmp_path
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert done.returncode == 1, done.stdout + done.stderr
    assert errors and all(line.startswith("measure/engine/planted.py:1:") for line in errors), done.stdout
    assert any("[no-untyped-def]" in line for line in errors), done.stdout
