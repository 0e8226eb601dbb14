"""ms/token of greedy decoding per runtime: where a tier runs, as a figure. Pure functions of records.

Each leg after Python onnxruntime's times greedy passes over every golden row in its own
runtime (the Node process, the browser page); Python's figure is the wall-clock suite's.
The figure is a fact about the runtime on this machine, never a verdict on the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from measure.record.model import Leg, Record


@dataclass(frozen=True)
class Speed:
    """ms/token of one tier under one runtime: the median over its timed passes, and their range."""

    ms_per_token: float
    lo: float
    hi: float
    passes: int
    vs_python: float | None
    """This runtime's ms/token over Python onnxruntime's (the wall-clock suite's median); None without it."""


@dataclass(frozen=True)
class TierSpeeds:
    tier: str
    precision: str
    python: float | None
    """Python onnxruntime's median ms/token from the wall-clock suite, None where it did not run."""
    legs: tuple[Speed | None, ...]
    """One per leg after Python's, in the record's order; None where the leg did not time the tier."""


@dataclass(frozen=True)
class RuntimeSpeeds:
    legs: tuple[Leg, ...]
    tiers: tuple[TierSpeeds, ...]


def runtime_speeds(record: Record) -> RuntimeSpeeds | None:
    """None when no leg after Python's timed any tier (older records, legs that were skipped)."""
    others = record.legs[1:]
    if not any(t.timing for leg in others for t in leg.tiers):
        return None
    cases = record.wallclock.cases if record.wallclock else {}
    rows = []
    for ref in record.python_tiers:
        case = cases.get(ref.tier)
        python = case.median_ms_per_token if case is not None and case.measured else None
        speeds: list[Speed | None] = []
        for leg in others:
            t = leg.tier(ref.tier)
            timing = t.timing if t is not None and t.measured else None
            if timing is None:
                speeds.append(None)
                continue
            ms = timing.ms_per_token
            value = median(ms)
            speeds.append(Speed(value, min(ms), max(ms), len(ms), value / python if python else None))
        rows.append(TierSpeeds(ref.tier, ref.precision, python, tuple(speeds)))
    return RuntimeSpeeds(tuple(others), tuple(rows))
