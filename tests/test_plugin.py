"""The mkdocs plugin's results folder: a missing one fails the build unless it is a fresh checkout's default."""

from __future__ import annotations

import os
import subprocess
import sys

from tests_support import build, site_project


def test_a_missing_measure_results_fails_the_build_naming_it(tmp_path):
    project = site_project(tmp_path / "project")
    done = build(project, tmp_path / "typo-results")
    assert done.returncode != 0
    assert "typo-results: no such folder" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "site" / "results" / "index.html").exists()


def test_a_fresh_checkout_without_results_builds_a_site_that_says_no_run(tmp_path):
    project = site_project(tmp_path / "project")
    env = {k: v for k, v in os.environ.items() if k != "MEASURE_RESULTS"} | {"NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (project.parent / "site" / "results" / "index.html").is_file()
