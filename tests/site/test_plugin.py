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


def _config_with(tmp_path, option: str):
    project = site_project(tmp_path / "project")
    text = project.read_text(encoding="utf-8").replace("      results: results\n", f"      {option}\n")
    assert option in text
    project.write_text(text, encoding="utf-8")
    return project


def test_a_missing_results_folder_named_in_mkdocs_yml_names_the_file_and_the_option(tmp_path):
    project = _config_with(tmp_path, "results: typo-results")
    env = {k: v for k, v in os.environ.items() if k != "MEASURE_RESULTS"} | {"NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    want = f"{project}: plugins.measure.results = 'typo-results' ({project.parent / 'typo-results'}): no such folder"
    assert want in done.stderr


def test_a_templates_folder_without_templates_names_the_file_and_the_option(tmp_path):
    (tmp_path / "no-records").mkdir()
    project = _config_with(tmp_path, "templates: my-pages")
    (project.parent / "my-pages").mkdir()
    done = build(project, tmp_path / "no-records")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{project}: plugins.measure.templates = 'my-pages' ({project.parent / 'my-pages'}): no measure page" in (
        done.stderr
    )


def test_a_page_of_the_docs_folder_where_the_plugin_generates_one_fails_the_build_naming_it(tmp_path):
    """A folder `measure render` wrote (or a page of the user's) is never replaced by a generated page in silence."""
    project = site_project(tmp_path / "project")
    (tmp_path / "empty").mkdir()
    page = project.parent / "docs" / "results" / "wallclock.md"
    page.parent.mkdir()
    page.write_text("# My wall-clock notes\n", encoding="utf-8")
    done = build(project, tmp_path / "empty")
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{page}: the plugin generates this file itself" in done.stderr
