"""The instruction-count stage of ``measure run``: callgrind Ir per greedy tier, after the timed suites.

Each tier is counted ``runs`` times, each run a fresh child process under
valgrind (:func:`measure.instructions.count`), so the spread between runs is
the spread between two separate measurements, the one compare must allow
for. The record is saved after every run: a crash loses at most one count.
"""

from __future__ import annotations

from typing import Any

from measure.config import SuiteConfig
from measure.errors import MeasureError
from measure.golden import GoldenRows
from measure.instructions import count, hooks, valgrind_binary, valgrind_version
from measure.suites import Progress, Save, no_progress


def check_instructions(config: SuiteConfig) -> str:
    """Before anything is timed: the valgrind binary (and its version), or a one-line error naming what is missing."""
    try:
        binary = valgrind_binary(config.instructions.valgrind)
    except MeasureError as exc:
        raise MeasureError(f"{config.path}: instructions.valgrind = {config.instructions.valgrind!r}: {exc}") from exc
    hooks()
    return binary


def run_instructions(
    config: SuiteConfig,
    golden: GoldenRows,
    binary: str,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
) -> None:
    cfg = config.instructions
    rows = min(cfg.rows, len(golden))
    out.update({"tool": "callgrind", "valgrind": valgrind_version(binary), "rows": rows, "runs": cfg.runs, "tiers": {}})
    session = config.session.to_dict()
    total, done = cfg.runs * len(config.tiers), 0
    for spec in config.tiers:
        entry: dict[str, Any] = {}
        for _ in range(cfg.runs):
            found = count(spec.path, golden.path, rows, binary, session)
            if entry and found.tokens != entry["tokens"]:
                raise MeasureError(
                    f"{spec.path}: under callgrind the greedy decodes gave {found.tokens} tokens, "
                    f"{entry['tokens']} before: the decode is not deterministic, so its counts are not comparable"
                )
            entry.setdefault("tokens", found.tokens)
            entry.setdefault("instructions", []).append(found.instructions)
            out["tiers"][spec.name] = entry
            save()
            done += 1
            progress(f"instructions {spec.name}", done, total)
