"""Where a recipe's error enters: each group of weight MatMuls quantized alone, ranked by the divergence it causes.

A tier that fails the fidelity policy says only "mean KLD 0.2"; what a team can act on is which MatMuls cause it
(the MLP, the LM head, layer 29) and whether keeping those in full precision is enough. So the recipe is applied
to one unit at a time (every other weight MatMul left as it is), each such tier judged against the reference on
the same few golden rows, and each unit's mean KLD stated as a share of all units' on its axis: by group
(attention projections, MLP, LM head) and by layer index. The errors of the units need not add up to the whole
recipe's (they interact through the layers after them), so the sum is stated beside the whole's. Then the recipe
that keeps the worst group, and the one that keeps the worst layer, in full precision are built and judged the
same way: what the ranking predicts, measured.

The reference's logits are computed once per row and kept (rows x positions x vocabulary, float32), so each unit
costs one quantization and one teacher-forced call per row; each unit's tier is deleted once judged.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.load import load_tier
from measure.engine.tier import Tier
from measure.errors import MeasureError
from measure.suites.divergence import compare_logits
from measure.suites.finite import require_finite
from measure.suites.golden import GoldenRows
from measure.tools.matmul_groups import WeightMatMul, graph_matmuls
from measure.tools.quantize import folder_graphs, quantize_recipe, require_full_precision
from measure.tools.recipes import Recipe

AXES = ("group", "layer")


@dataclass(frozen=True)
class Unit:
    """Weight MatMuls quantized together while every other one stays in full precision."""

    axis: str
    """``group`` (attention, mlp, lm_head, other) or ``layer`` (a block index, the LM head, outside the layers)."""
    name: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Divergence:
    """A tier against the reference on the reference's greedy path of the rows (as the fidelity pass's first
    stream): mean KLD per position, and the share of positions whose top token both pick."""

    kld_mean: float
    same_top1: float
    positions: int
    ms_per_token: float | None = None
    """Best of three greedy passes over the rows, where timing was asked for (the whole recipe and the ones
    tried; each unit alone is judged only)."""

    def as_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kld_mean": self.kld_mean, "same_top1": self.same_top1, "positions": self.positions}
        if self.ms_per_token is not None:
            d["ms_per_token"] = self.ms_per_token
        return d


@dataclass(frozen=True)
class UnitError:
    unit: Unit
    divergence: Divergence
    share: float
    """This unit's mean KLD over the sum of its axis's units' (0 when they are all 0)."""


@dataclass(frozen=True)
class Tried:
    """A recipe the ranking suggests (the worst unit kept in full precision), built and judged."""

    keeps: Unit
    recipe: Recipe
    divergence: Divergence


@dataclass(frozen=True)
class Location:
    reference: str
    recipe: Recipe
    rows: int
    whole: Divergence
    ranking: dict[str, tuple[UnitError, ...]]
    """Each axis's units, the largest error first."""
    tried: tuple[Tried, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "recipe": self.recipe.to_dict(),
            "rows": self.rows,
            "whole": self.whole.as_json(),
            "ranking": {
                axis: [
                    {"unit": e.unit.name, "matmuls": len(e.unit.nodes), "share": e.share} | e.divergence.as_json()
                    for e in errors
                ]
                for axis, errors in self.ranking.items()
            },
            "tried": [
                {"keeps": t.keeps.name, "axis": t.keeps.axis, "recipe": t.recipe.to_dict()} | t.divergence.as_json()
                for t in self.tried
            ],
        }


def units(matmuls: tuple[WeightMatMul, ...], axes: tuple[str, ...] = AXES) -> tuple[Unit, ...]:
    """Each axis partitions every weight MatMul: by group, and by layer (the LM head and MatMuls outside any block
    as units of their own). Node names shared by two graphs (an encoder's and a decoder's) fall in one unit."""
    out: list[Unit] = []

    def add(axis: str, name: str, chosen: Iterator[WeightMatMul]) -> None:
        nodes = tuple(dict.fromkeys(m.node for m in chosen))
        if nodes:
            out.append(Unit(axis, name, nodes))

    if "group" in axes:
        for group in dict.fromkeys(m.group for m in matmuls):
            add("group", group, (m for m in matmuls if m.group == group))
    if "layer" in axes:
        layers = sorted({m.layer for m in matmuls if m.layer is not None and m.group != "lm_head"})
        for layer in layers:
            add("layer", f"layer {layer}", (m for m in matmuls if m.layer == layer and m.group != "lm_head"))
        add("layer", "lm_head", (m for m in matmuls if m.group == "lm_head"))
        add("layer", "outside the layers", (m for m in matmuls if m.layer is None and m.group != "lm_head"))
    return tuple(out)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")


def alone(recipe: Recipe, unit: Unit, every: tuple[str, ...]) -> Recipe:
    """``recipe`` applied to ``unit`` only: every other weight MatMul kept, as well as what the recipe keeps."""
    others = tuple(n for n in every if n not in set(unit.nodes))
    keep = replace(recipe.keep, nodes=tuple(dict.fromkeys((*recipe.keep.nodes, *others))))
    return replace(recipe, name=f"{recipe.name}-only-{_slug(unit.name)}"[:64], keep=keep)


def keeping(recipe: Recipe, unit: Unit) -> Recipe:
    """``recipe`` with ``unit`` kept in full precision (by group or layer when the unit is one, else by node)."""
    k = recipe.keep
    if unit.axis == "group" and unit.name in ("attention", "mlp", "lm_head"):
        k = replace(k, groups=tuple(dict.fromkeys((*k.groups, unit.name))))
    elif unit.axis == "layer" and unit.name.startswith("layer "):
        k = replace(k, layers=tuple(dict.fromkeys((*k.layers, int(unit.name.split()[1])))))
    else:
        k = replace(k, nodes=tuple(dict.fromkeys((*k.nodes, *unit.nodes))))
    return replace(recipe, name=f"{recipe.name}-keep-{_slug(unit.name)}"[:64], keep=k)


@dataclass
class _Reference:
    """The reference's greedy path of each row and its logits on it, computed once."""

    tier: Tier
    rows: list[tuple[int, list[int], list[int], np.ndarray]]

    @classmethod
    def decode(cls, tier: Tier, golden: GoldenRows) -> _Reference:
        rows = []
        for row in golden.rows:
            ids = tier.source_ids(row.input)
            greedy = list(tier.greedy_ids(ids).tokens)
            logits = tier.teacher_forced(ids, greedy)
            require_finite(logits, tier.name, golden.path, row.line, "the error location's reference pass")
            rows.append((row.line, ids, greedy, logits.astype(np.float32)))
        return cls(tier, rows)

    def judge(self, tier: Tier, golden: GoldenRows, timed: bool) -> Divergence:
        eos = self.tier.special.eos
        kld = same = positions = 0.0
        for line, ids, greedy, ref in self.rows:
            logits = tier.teacher_forced(ids, greedy)
            require_finite(logits, tier.name, golden.path, line, "the error location's pass")
            facts = compare_logits(ref, logits.astype(np.float32), [*greedy, eos])
            kld += float(facts.kld.sum())
            same += float(facts.same_top1.sum())
            positions += len(facts.kld)
        ms = _ms_per_token(tier, [ids for _, ids, _, _ in self.rows]) if timed else None
        return Divergence(kld / positions, same / positions, int(positions), ms)


def _ms_per_token(tier: Tier, prompts: list[list[int]], passes: int = 3) -> float:
    """Best of ``passes`` greedy passes over the rows, wall time per generated token (the first pass warms up)."""
    best = float("inf")
    for _ in range(passes):
        start, tokens = time.perf_counter(), 0
        for ids in prompts:
            tokens += max(1, len(tier.greedy_ids(ids).tokens))
        best = min(best, (time.perf_counter() - start) * 1e3 / tokens)
    return best


def locate(
    reference: Path,
    recipe: Recipe,
    golden: GoldenRows,
    *,
    axes: tuple[str, ...] = AXES,
    timed: bool = False,
    calibration: Path | None = None,
    work: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Location:
    """Rank ``recipe``'s error by unit on ``golden``'s rows, then build and judge the recipes that keep the worst
    group and the worst layer in full precision. Tiers are built under ``work`` (a temporary folder by default)
    and deleted once judged."""
    bad = [a for a in axes if a not in AXES]
    if bad or not axes:
        raise MeasureError(f"--axis {','.join(axes)}: expected group, layer or both")
    _, graphs = folder_graphs(reference)
    require_full_precision(reference, graphs)
    matmuls = tuple(m for g in graphs for m in graph_matmuls(reference / g))
    if not matmuls:
        raise MeasureError(f"{reference}: no weight MatMul to quantize; nothing to locate")
    every = tuple(dict.fromkeys(m.node for m in matmuls))
    ref = _Reference.decode(load_tier(reference, label="reference"), golden)
    owned = work is None
    base = Path(tempfile.mkdtemp(prefix="measure-locate-")) if work is None else work
    try:

        def judged(r: Recipe, label: str, time_it: bool = False) -> Divergence:
            out = base / r.name
            progress(f"{label}: quantizing ...")
            quantize_recipe(reference, out, r, calibration=calibration)
            try:
                found = ref.judge(load_tier(out, label=r.name, name=r.name), golden, time_it)
            finally:
                shutil.rmtree(out, ignore_errors=True)
            progress(f"{label}: mean KLD {found.kld_mean:.4g}")
            return found

        whole = judged(recipe, f"{recipe.name} (every MatMul)", timed)
        ranking: dict[str, tuple[UnitError, ...]] = {}
        for axis in axes:
            found = [(u, judged(alone(recipe, u, every), f"{u.name} alone")) for u in units(matmuls, (axis,))]
            total = sum(d.kld_mean for _, d in found)
            errors = [UnitError(u, d, d.kld_mean / total if total > 0 else 0.0) for u, d in found]
            ranking[axis] = tuple(sorted(errors, key=lambda e: -e.divergence.kld_mean))
        tried = []
        for axis in axes:
            worst = ranking[axis][0].unit if ranking[axis] else None
            if worst is not None and len(worst.nodes) < len(every):  # keeping everything is the reference
                r = keeping(recipe, worst)
                tried.append(Tried(worst, r, judged(r, f"{worst.name} kept", timed)))
        return Location(ref.tier.name, recipe, len(golden), whole, ranking, tuple(tried))
    finally:
        if owned:
            shutil.rmtree(base, ignore_errors=True)
