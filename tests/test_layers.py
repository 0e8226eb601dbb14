"""The package's stages import one way: engine -> suites -> record -> analysis -> results -> site.

Read from the source (every ``import``, at module level or inside a function), so a late import cannot hide
a step back up the flow.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tests_support import ROOT

PACKAGE = ROOT / "measure"
CORE = ("errors", "writing", "terminal", "bundled", "policy")
"""The small shared core every stage may import; it imports no stage."""
RECORD_READERS = (
    "measure.record.io",
    "measure.record.archive",
    "measure.record.blobs",
    "measure.record.tree.record_paths",
    "measure.record.tree.read_calibration",
    "measure.results.calibration_file",
)
"""What reads record files and calibration files: the site takes records only through the results stage
(:class:`measure.results.reader.Loaded`)."""
STAGES = ("engine", "suites", "record", "analysis", "results", "site", "tools", "commands")

NEVER: dict[str, tuple[str, ...]] = {
    "engine": (
        "measure.suites",
        "measure.record",
        "measure.analysis",
        "measure.results",
        "measure.site",
        "measure.tools",
        "measure.commands",
    ),
    # the two tier families meet only in the engine's shared modules (tier, load, speculative, folder)
    "engine/seq2seq": ("measure.engine.causal", "measure.engine.load", "measure.engine.speculative"),
    "engine/causal": ("measure.engine.seq2seq", "measure.engine.load", "measure.engine.speculative"),
    "suites": ("measure.analysis", "measure.results", "measure.site", "measure.tools", "measure.commands"),
    "record": (
        "measure.engine",
        "measure.suites",
        "measure.analysis",
        "measure.results",
        "measure.site",
        "measure.tools",
        "measure.commands",
    ),
    "analysis": (
        "measure.engine",
        "measure.suites",
        "measure.results",
        "measure.site",
        "measure.tools",
        "measure.commands",
        "onnxruntime",
        "onnx",
        "subprocess",
        "concurrent",
        "multiprocessing",
    ),
    "results": (
        "measure.engine",
        "measure.suites",
        "measure.site",
        "measure.tools",
        "measure.commands",
        "onnxruntime",
        "onnx",
    ),
    "site": (
        "measure.engine",
        "measure.suites",
        "measure.tools",
        "measure.commands",
        "onnxruntime",
        "onnx",
        *RECORD_READERS,
    ),
    **{core: tuple(f"measure.{s}" for s in STAGES) for core in CORE},
}


def imported(path: Path) -> set[str]:
    """Every module name ``path`` imports, with ``from measure import x`` read as ``measure.x``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def modules_of(owner: str) -> list[Path]:
    folder = PACKAGE / owner
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{owner}.py"]


def breaches(owner: str) -> list[str]:
    return [
        f"{path.relative_to(PACKAGE.parent)} imports {name}"
        for path in modules_of(owner)
        for name in sorted(imported(path))
        if any(name == bad or name.startswith(bad + ".") for bad in NEVER[owner])
    ]


@pytest.mark.parametrize("owner", sorted(NEVER))
def test_a_stage_imports_only_what_lies_upstream(owner):
    assert modules_of(owner), f"no modules for {owner}"
    assert breaches(owner) == []


def test_the_layering_check_catches_a_step_back_up(tmp_path, monkeypatch):
    """The rule can fail: an engine module that imports the site is reported."""
    fake = tmp_path / "measure" / "engine"
    fake.mkdir(parents=True)
    (fake / "decode.py").write_text("def f():\n    from measure.site import render\n", encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "measure")
    assert breaches("engine") == [
        "measure/engine/decode.py imports measure.site",
        "measure/engine/decode.py imports measure.site.render",
    ]


def test_no_module_sits_outside_a_stage_but_the_core():
    top = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__", "cli"}
    assert top == set(CORE)


CHANGE_POINTS = ("changepoints", "change_fit", "commit_series", "history_changes")
"""History's change-point search: numpy over cached summaries and recorded calibrations."""
NOT_ANALYSIS = ("os", "pathlib", "subprocess", "concurrent", "multiprocessing", "time", "measure.record.io")
"""What would make a change-point module loading rather than analysis: files, processes, the clock."""


@pytest.mark.parametrize("stem", CHANGE_POINTS)
def test_the_change_point_search_reads_no_files_and_starts_no_processes(stem):
    names = imported(PACKAGE / "analysis" / f"{stem}.py")
    assert [n for n in names if any(n == bad or n.startswith(bad + ".") for bad in NOT_ANALYSIS)] == []
    assert "numpy" in names or stem == "history_changes"


def leg_modules() -> set[str]:
    """The modules that are legs: the Python leg and every registered one (shared modules and drivers are not)."""
    from measure.suites.legs.registry import LEGS

    return {"measure.suites.legs.python", *(leg.__module__ for leg in LEGS)}


def leg_breaches(path: Path, legs: set[str]) -> list[str]:
    """Where the leg module at ``path`` imports another leg."""
    own = "measure." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    return [
        f"{own} imports {name}"
        for name in sorted(imported(path))
        if name != own and any(name == leg or name.startswith(leg + ".") for leg in legs - {own})
    ]


def test_a_leg_never_imports_another():
    """Adding a leg is one module: what two legs share lives in a module that is not a leg."""
    legs = leg_modules()
    assert len(legs) >= 5, legs  # python, node, web, webgpu, genai
    for name in sorted(legs):
        path = PACKAGE.parent / (name.replace(".", "/") + ".py")
        assert leg_breaches(path, legs) == []


def test_the_leg_check_catches_one_leg_importing_another(tmp_path, monkeypatch):
    fake = tmp_path / "measure" / "suites" / "legs"
    fake.mkdir(parents=True)
    (fake / "xnnpack.py").write_text("from measure.suites.legs.node import NodeLeg\n", encoding="utf-8")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path / "measure")
    legs = {"measure.suites.legs.xnnpack", "measure.suites.legs.node"}
    assert leg_breaches(fake / "xnnpack.py", legs) == [
        "measure.suites.legs.xnnpack imports measure.suites.legs.node",
        "measure.suites.legs.xnnpack imports measure.suites.legs.node.NodeLeg",
    ]
