"""A verdict: one question about a record, answered yes / no / inconclusive with its value, rule and evidence.

The rules that make verdicts live in :mod:`measure.analysis.verdicts`; this is what they make, what the summary
cache stores and what the pages link to their evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from measure.analysis.stats import Estimate

OUTCOMES = ("success", "failure", "warning", "inconclusive", "info")


@dataclass(frozen=True)
class Verdict:
    topic: str
    """Stable slug of the question, e.g. ``decode-linear``."""
    question: str
    """Phrased so that "yes" is the good outcome."""
    subject: str
    key: str
    """The record entity the verdict rests on: a tier, a wall-clock case, a pair (drafter->verifier) or a runtime."""
    outcome: str
    answer: str
    """Short answer: yes / no / inconclusive, with the deciding count where there is one."""
    rule: str
    measured: str
    """The value with its unit and interval, as pages print it."""
    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    gate: bool = False
    """A failure here fails ``measure check``."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))  # every field a scalar: asdict's deep copy cost a cold build seconds

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """A cached verdict; a missing or unknown key raises (the cache entry is then rebuilt)."""
        if d.keys() != _FIELDS:
            raise KeyError("verdict fields")
        verdict = object.__new__(cls)  # a frozen dataclass's __init__ sets each field through object.__setattr__:
        verdict.__dict__.update(d)  # for a million cached verdicts, filling the dict at once is 5x quicker
        return verdict


_FIELDS = frozenset(f.name for f in fields(Verdict))
"""A year of summaries holds a million verdicts: their field names are looked up once, not per verdict."""


def against(e: Estimate, threshold: float, want_above: bool) -> tuple[str, str]:
    """An interval against a threshold: wholly on the wanted side, wholly on the other, or straddling it."""
    good, bad = (e.lo > threshold, e.hi < threshold) if want_above else (e.hi <= threshold, e.lo > threshold)
    if good:
        return "success", "yes"
    if bad:
        return "failure", "no"
    return "inconclusive", "inconclusive"


def ci(e: Estimate, digits: int = 2, unit: str = "") -> str:
    return f"{e.value:.{digits}f}{unit} [{e.lo:.{digits}f}, {e.hi:.{digits}f}]"
