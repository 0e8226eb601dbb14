"""The measurement suites. Each takes loaded tiers and golden rows and returns JSON-ready facts."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]
"""``progress(what, done, total)``: the CLI draws a bar on a terminal and plain lines in CI."""

Save = Callable[[], None]
"""Called after each case so the record on disk is rewritten with what is measured so far."""


def no_progress(what: str, done: int, total: int) -> None:
    return None
