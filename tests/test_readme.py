"""The README's two set-up commands stay true: CI runs the test command word for word."""

from __future__ import annotations

import re

from tests_support import ROOT
from tests_support import readme_setup_commands as _commands


def test_readme_has_exactly_two_setup_commands():
    commands = _commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _commands()[1] in ci.splitlines()


def test_main_job_paths_exist():
    main = _commands()[0]
    for path in re.findall(r"(measure/demo/[\w-]+|benchmarks/[\w.]+)", main):
        assert (ROOT / path).exists(), path
