"""The README is a landing page and the guide in docs/ is true: every page in the nav, every link resolving, every
command a reader would paste run here (or, for the verbs that measure for minutes, parsed by the real parser),
every YAML snippet accepted by what it configures, every verdict topic explained."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from tests_support import DATA_DIR, ROOT, readme_setup_commands

from measure import bundled
from measure.cli import build_parser
from measure.record.io import load_record, write_record

DOCS = ROOT / "docs"
README = ROOT / "README.md"
GENERATED = ("reference/cli.md", "reference/config.md", "reference/schema.md")
SLOW = ("run", "ab", "instructions", "explore")
"""Verbs that measure for minutes: their lines are parsed by the real parser, not run (CI runs ``measure run`` in
the README's main job)."""
FENCE = re.compile(r"^( *)```(\w*)[^\n]*\n(.*?)^\1```", re.S | re.M)


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def _blocks(path: Path) -> list[tuple[str, str]]:
    """(language, body) of every fenced block, its indentation removed."""
    out = []
    for indent, lang, body in FENCE.findall(path.read_text(encoding="utf-8")):
        out.append((lang, "\n".join(line.removeprefix(indent) for line in body.splitlines())))
    return out


def _nav_files(nav: list) -> list[str]:
    found = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        found += _nav_files(value) if isinstance(value, list) else [value]
    return found


def _mkdocs() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!ENV", lambda loader, node: None)
    return yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)


def test_the_readme_is_a_landing_page_whose_links_resolve():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert len(readme_setup_commands()) == 2
    links = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", text)
    assert links and all((ROOT / link).exists() for link in links), [x for x in links if not (ROOT / x).exists()]


def test_every_guide_page_is_in_the_nav_and_every_nav_entry_exists():
    listed = _nav_files(_mkdocs()["nav"])
    pages = {p.relative_to(DOCS).as_posix() for p in _pages()} - {p for p in map(str, DOCS.glob("results/**"))}
    assert all((DOCS / page).is_file() for page in listed), listed
    assert pages - set(listed) == set(), "pages missing from mkdocs.yml's nav"


def test_the_guide_gives_the_readme_set_up_commands_word_for_word():
    bodies = [body.strip() for _, body in _blocks(DOCS / "guide" / "getting-started.md")]
    for command in readme_setup_commands():
        assert command in bodies


def test_every_verdict_topic_is_explained():
    from measure.analysis.record_analysis import analyse
    from measure.record.io import load
    from measure.site.evidence import ROWS

    page = (DOCS / "explanation" / "verdicts.md").read_text(encoding="utf-8")
    explained = set(re.findall(r"^\| `([a-z-]+)` \|", page, flags=re.M))
    assert explained == set(ROWS)
    for name in ("record-v4.json", "record-v3-lm.json"):
        assert {v.topic for v in analyse(load(DATA_DIR / name)).verdicts} <= explained


def _sandbox(tmp: Path, writes: bool = False) -> dict[str, str]:
    """A folder where the docs' commands run as a reader's would: the demo at measure/demo (a copy where the command
    ``writes`` beside its input: onnxruntime's quantizer leaves temporary files in the model's folder, which other
    tests list), a record in results/, tier folders under models/, golden rows under eval/; the placeholders a
    command holds, filled."""
    (tmp / "measure").mkdir()
    if writes:
        shutil.copytree(bundled.DEMO_DIR, tmp / "measure" / "demo")
    else:
        (tmp / "measure" / "demo").symlink_to(bundled.DEMO_DIR, target_is_directory=True)
    (tmp / "models").mkdir()
    for tier in ("base-fp32", "base-int8", "small-int4"):
        shutil.copytree(bundled.DEMO_DIR / tier, tmp / "models" / tier)
    (tmp / "eval").mkdir()
    shutil.copy(bundled.DEMO_DIR / "golden-v1.jsonl", tmp / "eval" / "golden.jsonl")
    doc = load_record(DATA_DIR / "record-v4.json")
    write_record(tmp / "results" / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    (tmp / "words.txt").write_text("объём\nслово\n", encoding="utf-8")
    return {"<machine-id>": doc["machine_id"], "<run-id>": doc["run_id"]}


def _commands() -> list[tuple[str, str]]:
    """(page, line) of every ``measure`` command in a bash block of the README and the guide."""
    found = []
    for path in [README, *(p for p in _pages() if p.relative_to(DOCS).as_posix() not in GENERATED)]:
        for lang, body in _blocks(path):
            if lang not in ("bash", "sh", "console"):
                continue
            for line in body.replace("\\\n", " ").splitlines():
                line = line.split("  #", 1)[0].strip()
                if re.match(r"(\.venv/bin/)?measure ", line):
                    found.append((path.name, line))
    return found


def test_the_guide_has_commands_to_run():
    assert len(_commands()) >= 5


@pytest.mark.parametrize("page, line", _commands(), ids=[f"{p}:{c[:60]}" for p, c in _commands()])
def test_every_measure_command_in_the_docs_runs(page, line, tmp_path):
    filled = _sandbox(tmp_path, writes=" quantize " in f" {line} ")
    for key, value in filled.items():
        line = line.replace(key, value)
    parts = [shlex.split(part) for part in line.split("&&")]
    measure = [p for p in parts if p and p[0].endswith("measure")]
    if any(p[1] in SLOW for p in measure if len(p) > 1):
        for p in measure:  # parsed by the real parser: a wrong verb or flag fails here
            args = build_parser().parse_args(p[1:])
            assert args.verb == p[1]
        return
    for p in parts:
        if not p or not p[0].endswith("measure"):
            continue
        stdin = None
        if "<" in p:
            at = p.index("<")
            stdin, p = (tmp_path / p[at + 1]).read_bytes(), p[:at]
        done = subprocess.run(
            [str(Path(sys.executable).parent / "measure"), *p[1:]],
            cwd=tmp_path,
            input=stdin,
            capture_output=True,
            timeout=600,
        )
        assert done.returncode == 0, (page, line, done.stderr.decode()[-2000:])


def test_the_workflow_in_the_guide_calls_the_reusable_workflow_with_inputs_it_declares():
    block = next(body for lang, body in _blocks(DOCS / "guide" / "ci.md") if lang == "yaml")
    caller = yaml.safe_load(block)
    reusable = yaml.safe_load((ROOT / ".github" / "workflows" / "reusable.yml").read_text(encoding="utf-8"))
    declared = set(reusable[True]["workflow_call"]["inputs"])  # yaml reads the key `on` as True
    for job in caller["jobs"].values():
        assert job["uses"].split("@")[0].endswith(".github/workflows/reusable.yml")
        assert set(job.get("with", {})) <= declared, set(job["with"]) - declared


def test_the_plugin_options_in_the_guide_are_the_plugins():
    from measure.site.plugin import MeasurePlugin

    block = next(body for lang, body in _blocks(DOCS / "guide" / "site.md") if lang == "yaml")
    options = next(p["measure"] for p in yaml.safe_load(block)["plugins"] if isinstance(p, dict) and "measure" in p)
    known = {name for name, _ in MeasurePlugin.config_scheme}
    assert set(options) <= known, set(options) - known


def test_the_scripts_and_benchmarks_the_guide_names_exist():
    named = set()
    for path in _pages():
        named |= set(re.findall(r"\b((?:scripts|benchmarks)/[\w./-]+\.py)\b", path.read_text(encoding="utf-8")))
    assert named and all((ROOT / n).is_file() for n in named), [n for n in named if not (ROOT / n).is_file()]
