"""``measure explore``'s search (``explore``) as typed read-only views, and the builders the search writes it with.

A run made by ``measure explore`` measures the recipes that survived a screening pass; the ones that did not stay
in the record with the stage that dropped them (``quantize``: the quantizer refused the recipe for this model;
``fidelity``: a few golden rows showed it cannot meet the policy) and why, so a reader sees what was tried, not
only what won. The search's baseline recipe (``baseline``) is timed even where the screening dropped it, as the
run's plain tier, so every recipe reads against it. Records of ``measure run`` have no such section.

A search split across machines (``measure explore --shard I/N``) writes one record per shard, each saying which
shard of how many and which grid (``shard``); ``measure merge --shards`` joins them into one record (``joined``)
whose ``anchors`` name, for each tier timed in a shard after the first, the copy of the baseline timed beside it:
its "x plain" pairs repeats with that copy, never with another machine's run of the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Part = dict[str, Any]


@dataclass(frozen=True)
class ScreenFigure:
    value: float
    lo: float
    hi: float


@dataclass(frozen=True)
class Screen:
    """The screening pass's figures for one candidate, with the policy's outcome on them."""

    rows: int
    outcome: str
    """``success``, ``failure`` (dropped) or ``inconclusive`` (too few rows to tell: kept)."""
    kld_mean: ScreenFigure
    same_top1: ScreenFigure
    ppl_ratio: ScreenFigure


@dataclass(frozen=True)
class Candidate:
    """One recipe applied to one reference."""

    reference: str
    recipe: dict[str, Any]
    """The whole recipe, as ``tier.json`` ``quantization.recipe`` records it."""
    tier: str
    dropped: str | None
    """None: measured (a tier of the run); ``quantize`` or ``fidelity``: the stage that dropped it."""
    reason: str | None
    screen: Screen | None
    baseline: bool = False
    """The search's baseline recipe: timed (a tier of the run) wherever the screening scored it, dropped or not."""

    @property
    def recipe_name(self) -> str:
        return str(self.recipe.get("name", self.tier))

    @property
    def measured(self) -> bool:
        """A tier of the run: a survivor, or the baseline the screening scored (it may have failed it)."""
        return self.dropped is None or (self.baseline and self.screen is not None)


@dataclass(frozen=True)
class Shard:
    """Which part of a split search a record measured: shard ``index`` of ``count`` (1-based) of the grid whose
    recipes hash to ``grid_sha256``."""

    index: int
    count: int
    grid_sha256: str


@dataclass(frozen=True)
class Joined:
    """A record joined from a split search's shard records (``measure merge --shards``)."""

    count: int
    grid_sha256: str
    runs: tuple[str, ...]
    """Each shard's run id, in shard order."""
    anchors: dict[str, str]
    """Tier -> the copy of the baseline timed in its shard (for tiers of shards after the first)."""


@dataclass(frozen=True)
class Explore:
    grid: str | None
    """The grid file; None: the default grid."""
    screen_rows: int
    role: str
    """Whose fidelity bounds a candidate had to be able to meet (``plain``: the strictest)."""
    budget_s: float | None
    candidates: tuple[Candidate, ...]
    shard: Shard | None = None
    joined: Joined | None = None

    def anchor_of(self, tier: str, plain: str | None) -> str | None:
        """The tier whose repeats ``tier``'s ratio pairs with: the baseline timed beside it (``plain`` unless the
        record was joined from shards and ``tier`` was timed in a later one); None for a later shard's copy of the
        baseline, which has no run beside it to pair with."""
        if self.joined is None:
            return plain
        if tier in self.joined.anchors.values():
            return None
        return self.joined.anchors.get(tier, plain)

    @property
    def measured(self) -> tuple[Candidate, ...]:
        """The candidates timed in the run, the baseline among them."""
        return tuple(c for c in self.candidates if c.measured)

    @property
    def dropped(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.dropped is not None)

    def baseline_of(self, reference: str) -> Candidate | None:
        """The baseline recipe's candidate on ``reference`` where it was timed; None where none was."""
        return next((c for c in self.candidates if c.reference == reference and c.baseline and c.measured), None)


def _figure(d: Part) -> ScreenFigure:
    return ScreenFigure(float(d["value"]), float(d["lo"]), float(d["hi"]))


def explore_of(d: Part | None) -> Explore | None:
    if not d:
        return None
    candidates = []
    for c in d["candidates"]:
        s = c.get("screen")
        screen = (
            None
            if s is None
            else Screen(
                int(s["rows"]), s["outcome"], _figure(s["kld_mean"]), _figure(s["same_top1"]), _figure(s["ppl_ratio"])
            )
        )
        candidates.append(
            Candidate(
                c["reference"],
                dict(c["recipe"]),
                c["tier"],
                c["dropped"],
                c["reason"],
                screen,
                bool(c.get("baseline", False)),
            )
        )
    budget = d.get("budget_s")
    sh, jo = d.get("shard"), d.get("joined")
    return Explore(
        d.get("grid"),
        int(d["screen_rows"]),
        d["role"],
        None if budget is None else float(budget),
        tuple(candidates),
        None if sh is None else Shard(int(sh["index"]), int(sh["count"]), sh["grid_sha256"]),
        None
        if jo is None
        else Joined(int(jo["count"]), jo["grid_sha256"], tuple(jo["runs"]), dict(jo.get("anchors") or {})),
    )


def explore_part(
    grid: str | None,
    screen_rows: int,
    role: str,
    budget_s: float | None,
    candidates: list[Part],
    shard: Part | None = None,
) -> Part:
    """``shard``: a shard record's :func:`shard_part`; written only where given, so an unsplit search writes what
    older records hold."""
    part = {"grid": grid, "screen_rows": screen_rows, "role": role, "budget_s": budget_s, "candidates": candidates}
    return part | ({"shard": shard} if shard is not None else {})


def shard_part(index: int, count: int, grid_sha256: str) -> Part:
    return {"index": index, "count": count, "grid_sha256": grid_sha256}


def joined_part(count: int, grid_sha256: str, runs: list[str], anchors: dict[str, str]) -> Part:
    return {"count": count, "grid_sha256": grid_sha256, "runs": runs, "anchors": anchors}


def candidate_part(
    reference: str,
    recipe: Part,
    tier: str,
    dropped: str | None,
    reason: str | None,
    screen: Part | None,
    baseline: bool = False,
) -> Part:
    """``baseline`` is written only where true, so a search without one writes what older records hold."""
    part = {"reference": reference, "recipe": recipe, "tier": tier, "dropped": dropped, "reason": reason}
    return part | {"screen": screen} | ({"baseline": True} if baseline else {})


def screen_part(rows: int, outcome: str, figures: dict[str, tuple[float, float, float]]) -> Part:
    """``figures``: ``kld_mean``, ``same_top1``, ``ppl_ratio``, each (value, lo, hi)."""
    return {"rows": rows, "outcome": outcome} | {k: {"value": v[0], "lo": v[1], "hi": v[2]} for k, v in figures.items()}
