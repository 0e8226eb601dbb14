"""The measurement suites. Each takes loaded tiers and golden rows and returns JSON-ready facts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # importing the package must not load onnxruntime
    from measure.engine.speculative import Pair
    from measure.engine.tier import Tier

Progress = Callable[[str, int, int], None]
"""``progress(what, done, total)``: the CLI draws a bar on a terminal and plain lines in CI."""

Say = Callable[[str], None]
"""A line for the person running measure (a budget's plan): the CLI prints it, tests collect it."""

Save = Callable[[], None]
"""Called after each case so the record on disk is rewritten with what is measured so far."""


Loader = Callable[[], "tuple[dict[str, Tier], dict[str, Pair]]"]
"""Loads the suite's tiers and speculative pairs: fresh sessions on every call after the first."""


RESOLUTION_S = 1e-6
"""What every wall-clock sample is recorded to (``wallclock.resolution_s``): a microsecond. A row's decode jitters by
tens of microseconds from repeat to repeat, so finer digits are noise; they nearly doubled the samples' gzipped size."""


def us(seconds: float) -> float:
    """Seconds to the microsecond (:data:`RESOLUTION_S`), the resolution the record states; a positive duration
    under half of one is recorded as one, since a sample is above zero."""
    return max(round(seconds, 6), RESOLUTION_S) if seconds > 0 else round(seconds, 6)


def no_progress(what: str, done: int, total: int) -> None:
    return None


def no_say(line: str) -> None:
    return None
