"""Whether a leg, a leg's tier or a genai pair ran: ``measured``, or stopped (``skipped``, ``failed``) with a reason.

Shared by the framing sub-sections and the genai leg's, so neither imports the other for it.
"""

from __future__ import annotations

from typing import Any

MEASURED = "measured"
"""A leg's, a leg tier's or a pair's ``status`` when it ran; ``skipped`` or ``failed`` carry a ``reason``."""


def stopped(status: str, reason: str) -> dict[str, Any]:
    """What a leg, tier or pair that did not run (``skipped``) or broke (``failed``) adds: why."""
    return {"status": status, "reason": reason}


def written_reason(status: str, reason: str) -> dict[str, Any]:
    """The ``reason`` key as a record holds it: always where the part stopped (even empty), else only if said."""
    return {"reason": reason} if reason or status != MEASURED else {}
