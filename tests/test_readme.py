"""The README's two set-up commands stay true: CI runs the test command word for word."""

from __future__ import annotations

import re

from tests_support import ROOT
from tests_support import readme_setup_commands as _commands

from measure import bundled
from measure.cli import VERBS


def test_readme_has_exactly_two_setup_commands():
    commands = _commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert _commands()[1] in ci.splitlines()


def test_main_job_runs_verbs_and_reads_files_that_exist():
    main = _commands()[0]
    verbs = re.findall(r"\.venv/bin/measure (\w+)", main)
    assert verbs and set(verbs) <= set(VERBS), verbs
    assert "run" in verbs and bundled.CONFIG.is_file()  # measure run without --config reads the demo's
    assert ".venv/bin/mkdocs build" in main and (ROOT / "mkdocs.yml").is_file()
