"""ms/token of greedy decoding per runtime: where a tier runs, as a figure. Pure functions of records.

Each leg after Python onnxruntime's times greedy passes over every golden row in its own
runtime (the Node process, the browser page); Python's figure is the wall-clock suite's.
The figure is a fact about the runtime on this machine, never a verdict on the model.
onnxruntime-genai's leg also pairs measure's loop with its compiled one per decode step
(:func:`compiled_loops`): the overhead of measure's loop over a loop with no Python in it.
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


GENAI = "onnxruntime-genai"


@dataclass(frozen=True)
class CompiledLoop:
    """measure's loop against onnxruntime-genai's compiled one on one decoder-only tier: ms per decode step."""

    tier: str
    precision: str
    ratio: float
    """The median over repeats of measure's ms per decode step over og's (each repeat pairs both loops on every row)."""
    lo: float
    hi: float
    repeats: int
    og_ms_per_step: float | None
    measure_ms_per_step: float | None
    config: str
    """"folder": the genai folder's own config; "generated": one written for an optimum export."""


def compiled_loops(record: Record) -> tuple[CompiledLoop, ...]:
    """Every tier the onnxruntime-genai leg measured with a ratio; empty for records without the leg."""
    out = []
    for leg in record.legs[1:]:
        if leg.runtime != GENAI or not leg.measured:
            continue
        for t in leg.tiers:
            g = t.genai
            if not t.measured or g is None:
                continue
            s = g.measure_over_og
            if s.median is None:
                continue
            out.append(
                CompiledLoop(
                    t.tier,
                    t.precision,
                    s.median,
                    s.lo if s.lo is not None else s.median,
                    s.hi if s.hi is not None else s.median,
                    len(s.samples),
                    g.ms_per_step.median,
                    g.measure_ms_per_step.median,
                    g.config,
                )
            )
    return tuple(out)
