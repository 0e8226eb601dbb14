"""The wall-clock section's call costs (``wallclock.call_costs``) and layout comparisons (``wallclock.layouts``):
read here (``from_dict``) beside the builders :mod:`measure.suites.calls` fills."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from measure.record.model.convert import cube, ints, table
from measure.record.model.section import FILED

Part = dict[str, Any]


@dataclass(frozen=True)
class TierCalls:
    """One tier's single calls timed on their own: ``call_s`` is repeats x widths x rows, seconds of one call."""

    n: tuple[int, ...]
    """Tokens per call, one column of ``call_s`` each."""
    cache_tokens: tuple[int, ...]
    """Per golden row, the cached positions the calls ran on top of."""
    call_s: np.ndarray

    @cached_property
    def per_repeat_s(self) -> np.ndarray:
        """Repeats x widths: the median over rows of one call's seconds (a call preempted on a shared
        machine moves a median over rows far less than a mean)."""
        a = np.median(self.call_s, axis=2) if self.call_s.size else np.zeros((0, len(self.n)))
        a.flags.writeable = False
        return a

    def samples(self, n: int) -> np.ndarray | None:
        """The per-repeat seconds of one call of ``n`` tokens; None where that width was not timed."""
        return self.per_repeat_s[:, self.n.index(n)] if n in self.n and self.per_repeat_s.size else None

    @classmethod
    def from_dict(cls, t: Part, rows: int) -> TierCalls:
        return cls(ints(t["n"]), ints(t["cache_tokens"]), cube(t["call_s"], len(t["n"]), rows))


@dataclass(frozen=True)
class CallTimings:
    """The cost model's raw samples: per tier, calls of each width on top of a mid-row cache."""

    rows: int
    repeats: int
    tiers: dict[str, TierCalls]
    fresh_sessions: bool | None = None
    """Records before the field do not say."""

    @classmethod
    def from_dict(cls, c: Part | None) -> CallTimings | None:
        if not c:
            return None
        rows = int(c["rows"])
        return cls(
            rows=rows,
            repeats=int(c["repeats"]),
            tiers={name: TierCalls.from_dict(t, rows) for name, t in c["tiers"].items()},
            fresh_sessions=c.get("fresh_sessions"),
        )


@dataclass(frozen=True)
class LayoutVariant:
    """One layout's greedy decode of the golden rows; samples are repeats x rows."""

    path: str
    layout: str
    tokens: tuple[int, ...]
    calls: tuple[int, ...]
    wall_s: np.ndarray
    run_s: np.ndarray

    @property
    def per_repeat_ms_per_token(self) -> np.ndarray:
        return 1000 * self.wall_s.sum(axis=1) / max(1, sum(self.tokens))

    @property
    def run_s_per_call(self) -> float:
        """Seconds inside session.run per call, every repeat together."""
        calls = sum(self.calls) * self.wall_s.shape[0]
        return float(self.run_s.sum()) / calls if calls else float("nan")

    @classmethod
    def from_dict(cls, v: Part) -> LayoutVariant:
        width = len(v["tokens"])
        return cls(
            v["path"],
            v["layout"],
            ints(v["tokens"]),
            ints(v["calls"]),
            table(v["wall_s"], width),
            table(v["run_s"], width),
        )


@dataclass(frozen=True)
class LayoutPair:
    """One model's merged and split decoder layouts on the same weights, repeats interleaved."""

    name: str = field(metadata=FILED)
    same_outputs: bool
    merged: LayoutVariant
    split: LayoutVariant
    repeats: int = 0
    """Repeats both layouts have (each saved as one)."""

    @classmethod
    def from_dict(cls, name: str, x: Part) -> LayoutPair:
        merged, split = LayoutVariant.from_dict(x["merged"]), LayoutVariant.from_dict(x["split"])
        return cls(name, bool(x["same_outputs"]), merged, split, int(x.get("repeats", 0)))


def call_costs_part(rows: int, fresh_sessions: bool, tiers: dict[str, tuple[list[int], list[int]]]) -> Part:
    """The call costs as they start: per tier its widths ``n`` and per row the cached tokens, no repeat yet."""
    return {
        "rows": rows,
        "repeats": 0,
        "fresh_sessions": fresh_sessions,
        "tiers": {name: {"n": n, "cache_tokens": cache, "call_s": []} for name, (n, cache) in tiers.items()},
    }


def add_call_repeat(costs: Part, samples: dict[str, list[list[float]]], repeats: int) -> None:
    """One repeat's seconds per tier (per width, per row), and the repeats now done."""
    for name, found in samples.items():
        costs["tiers"][name]["call_s"].append(found)
    costs["repeats"] = repeats


def layout_variant(path: str, layout: str, tokens: list[int], calls: list[int]) -> Part:
    """One layout's side of a comparison as it starts: its per-row counts, no timed repeat yet."""
    return {"path": path, "layout": layout, "tokens": tokens, "calls": calls, "wall_s": [], "run_s": []}


def layout_pair(same_outputs: bool, merged: Part, split: Part) -> Part:
    return {"same_outputs": same_outputs, "repeats": 0, "merged": merged, "split": split}


def add_layout_repeat(pair: Part, samples: dict[str, tuple[list[float], list[float]]], repeats: int) -> None:
    """One repeat of both layouts at once, ``(wall_s, run_s)`` per side, so a stopped run keeps paired repeats."""
    for side, (wall_s, run_s) in samples.items():
        pair[side]["wall_s"].append(wall_s)
        pair[side]["run_s"].append(run_s)
    pair["repeats"] = repeats
