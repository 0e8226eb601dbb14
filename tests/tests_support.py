"""Helpers shared by the tests: a small real suite config over the bundled demo tiers."""

from __future__ import annotations

from pathlib import Path

from measure import bundled

MINI_TOML = """
golden = "rows.jsonl"

[[tiers]]
name = "base-fp32"
path = "{demo}/base-fp32"
role = "reference"

[[tiers]]
name = "base-int8"
path = "{demo}/base-int8"
role = "plain"

[[tiers]]
name = "small-int4"
path = "{demo}/small-int4"
role = "lite"

[[pairs]]
drafter = "small-int4"
verifier = "base-int8"

[wallclock]
warmup = 1
repeats = {repeats}
k = [2, 4]
bootstrap = 400

[framing]
k = [2, 4]
"""


def write_config(folder: Path, rows: int = 12, repeats: int = 3, name: str = "suite.toml") -> Path:
    """A small real suite config over the bundled tiers and the first ``rows`` golden rows."""
    lines = bundled.GOLDEN.read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "rows.jsonl").write_text("".join(lines[:rows]), encoding="utf-8")
    path = folder / name
    path.write_text(MINI_TOML.format(demo=bundled.DEMO_DIR.as_posix(), repeats=repeats), encoding="utf-8")
    return path
