"""Adopting measure as a model repository would: the wheel in a fresh venv, then init, run and the site.

The wheel is built from this checkout and installed (not editable) into a new
venv whose only link to the test's venv is a .pth line that appends that venv's
site-packages, for the dependencies. The commands run in a temporary repository
holding one tier folder and a golden JSONL; an audit hook in the new venv lists
every file of the checkout that any of them opens, and there must be none.
"""

from __future__ import annotations

import html as html_module
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from tests_support import ROOT

from measure import bundled
from measure.site.asset_block import PLOTLY, SCRIPT, STYLE
from measure.site.hosts import HOSTS, yaml_config
from measure.site.nav import PAGES

AUDIT = """\
import os, sys

_root, _log, _skip = (os.environ.get(k, "") for k in ("AUDIT_ROOT", "AUDIT_LOG", "AUDIT_SKIP"))


def _hook(event, args):
    if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if path.startswith(_root + os.sep) and not path.startswith(_skip + os.sep):
            with open(_log, "a", encoding="utf-8") as f:
                f.write(f"{event} {path}\\n")


if _root and _log:
    sys.addaudithook(_hook)
"""
"""Imported by a .pth line at every start of the new venv's Python: logs what it opens inside the checkout."""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = out.glob("measure-*.whl")
    return path


def test_the_wheel_carries_the_templates_and_the_chart_assets_as_they_are_in_the_checkout(wheel):
    with zipfile.ZipFile(wheel) as z:
        packaged = {n.rsplit("/", 1)[1]: z.read(n) for n in z.namelist() if n.startswith("measure/site/templates/")}
        assets = {n.rsplit("/", 1)[1] for n in z.namelist() if n.startswith("measure/site/assets/")}
    source = {p.name: p.read_bytes() for p in (ROOT / "templates").iterdir() if p.is_file()}
    assert packaged == source  # no template missing, added or drifted
    assert {p.template for p in PAGES} <= set(packaged)
    assert assets == {Path(uri).name for uri in (SCRIPT, STYLE)}  # plotly.min.js comes from the plotly package


CLEAN_ENV = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
"""No PYTHONPATH or PYTHONHOME: nothing but the new venv decides what its Python imports."""


def _fresh_venv(folder: Path, wheel: Path) -> Path:
    """A venv with only the wheel installed; the test venv's site-packages come after its own, for the deps."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=CLEAN_ENV,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
            env=CLEAN_ENV,
        ).stdout.strip()
    )
    (purelib / "measure_audit.py").write_text(AUDIT, encoding="utf-8")
    # a .pth line that is a path is appended to sys.path; that folder's own .pth files (the editable
    # install's finder among them) are not run, so the checkout stays off the path
    (purelib / "zz_deps.pth").write_text(f"import measure_audit\n{sysconfig.get_path('purelib')}\n", encoding="utf-8")
    return folder / "bin"


def test_a_model_repository_adopts_measure_from_the_wheel(wheel, tmp_path):
    bin_ = _fresh_venv(tmp_path / "venv", wheel)
    repo = tmp_path / "repo"
    shutil.copytree(bundled.SMALL_OPTIMUM, repo / "models" / "small-fp32-optimum")
    rows = bundled.GOLDEN.read_text(encoding="utf-8").splitlines(keepends=True)[:3]
    (repo / "golden").mkdir()
    (repo / "golden" / "rows.jsonl").write_text("".join(rows), encoding="utf-8")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)  # as a model repository is
    log = tmp_path / "opened-in-checkout.log"
    env = CLEAN_ENV | {
        "AUDIT_ROOT": str(ROOT),
        "AUDIT_LOG": str(log),
        "AUDIT_SKIP": sys.prefix,  # the test venv's dependencies may live inside the checkout (.venv)
        "NO_MKDOCS_2_WARNING": "1",
        "CI": "1",
    }

    def sh(*argv: str) -> str:
        done = subprocess.run([str(bin_ / argv[0]), *argv[1:]], cwd=repo, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
        return done.stdout

    sh("python", "-c", f"open({str(ROOT / 'README.md')!r}).close()")  # the audit is live: it sees this one
    assert log.read_text(encoding="utf-8") == f"open {ROOT / 'README.md'}\n"
    log.unlink()
    where = json.loads(sh("python", "-c", "import json, sys, measure; print(json.dumps([measure.__file__, sys.path]))"))
    assert where[0].startswith(str(tmp_path / "venv"))
    assert not [p for p in where[1] if p == str(ROOT) or p.startswith(str(ROOT / "measure"))]

    # Zensical installed (the test venv's, as a user's would be) and no site config: init writes zensical.toml
    out = sh("measure", "init", "models/small-fp32-optimum", "--golden", "golden/rows.jsonl")
    assert (
        "wrote  measure.toml" in out and "wrote  .github/workflows/measure.yml" in out and "wrote  zensical.toml" in out
    )
    build = "measure render --out docs/results && zensical build --strict"
    assert f"next   measure run --config measure.toml && measure check && {build}" in out
    assert "site: zensical" in (repo / ".github" / "workflows" / "measure.yml").read_text(encoding="utf-8")
    config = repo / "measure.toml"
    text = config.read_text(encoding="utf-8")
    assert 'golden = "golden/rows.jsonl"' in text and 'role = "plain"' in text
    quick = text.replace("repeats = 7", "repeats = 2").replace("warmup_s = 2.0", "warmup_s = 0.0")
    config.write_text(quick.replace("k = [2, 4, 8]", "k = [2]"), encoding="utf-8")
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    again = sh("measure", "init", "models/small-fp32-optimum", "--golden", "golden/rows.jsonl")
    assert "nothing written" in again and "wrote" not in again
    assert {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts} == before

    record = Path(sh("measure", "run", "--config", "measure.toml").strip().splitlines()[-1])
    assert (repo / record).is_file() and record.parts[0] == "results"
    # the gates judge timings of three rows on a shared machine: what matters here is that the verb works
    check = subprocess.run([str(bin_ / "measure"), "check"], cwd=repo, env=env, capture_output=True, text=True)
    assert check.returncode in (0, 1) and str(record) in check.stdout, check.stderr[-2000:]

    # the same records under mkdocs and the plugin the wheel registers, before render fills docs/results
    (repo / "mkdocs.yml").write_text(yaml_config(HOSTS["mkdocs"], "repo RESULTS"), encoding="utf-8")
    env["MEASURE_SITE_URL"] = "https://models.example/repo"  # what the publish job sets; mkdocs.yml has no site_url
    sh("python", "-m", "mkdocs", "build", "--strict", "-d", "site-mkdocs")
    wallclock = (repo / "site-mkdocs" / "results" / "wallclock" / "index.html").read_text(encoding="utf-8")
    assert '<link rel="canonical" href="https://models.example/repo/results/wallclock/">' in wallclock
    mkdocs_home = (repo / "site-mkdocs" / "index.html").read_text(encoding="utf-8")

    # the user's generator: Zensical over the folder measure render writes
    said = sh("measure", "render", "--out", "docs/results")
    assert said.startswith("docs/results: ") and "written" in said
    done = sh("python", "-m", "zensical", "build", "--strict")
    assert "Traceback" not in done
    for built in (repo / "site", repo / "site-mkdocs"):
        for page in PAGES:
            html = built / "results" / page.path.removesuffix("index.md").removesuffix(".md") / "index.html"
            assert html.is_file(), (built, page.path)
        wallclock = (built / "results" / "wallclock" / "index.html").read_text(encoding="utf-8")
        figures = re.findall(r'data-figure="([^"]*)"', wallclock)
        assert figures and all(json.loads(html_module.unescape(f))["data"] for f in figures)
        for uri in (SCRIPT, STYLE, PLOTLY):  # the assets beside the pages, linked from the page itself
            assert (built / "results" / uri).is_file() and f'href="../{uri}"' in wallclock, (built, uri)
    home = (repo / "site" / "index.html").read_text(encoding="utf-8")
    for text in (home, mkdocs_home):  # the nav lists every page: Zensical's from zensical.toml, mkdocs' from the plugin
        linked = set(re.findall(r'href="(?:\./)?(results/[^"#]*)"', text))
        assert {
            f"results/{p.path.removesuffix('index.md').removesuffix('.md')}/".replace("//", "/") for p in PAGES
        } <= linked
    assert not log.exists(), log.read_text(encoding="utf-8")[:2000]
