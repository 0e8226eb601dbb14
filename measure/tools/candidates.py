"""The search's candidates: the grid of recipes it tries (the default or a grid file, read strictly; the baseline
added), every recipe on every reference named and placed (all checked before anything is written), each quantized
into its folder, and dealt to the shards of a split search.

Kept apart from :mod:`measure.tools.explore`, which screens the candidates and measures the survivors: what a
search will try is settled here, before any tier is judged.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.engine.meta import read_json_object
from measure.errors import MeasureError
from measure.record.model.explore import candidate_part
from measure.suites import Say
from measure.tools.quantize import folder_graphs, require_full_precision
from measure.tools.quantize_worker import quantize_apart
from measure.tools.recipes import NAMED, Recipe, parse_recipe, read_toml

DEFAULT_GRID = ("int8", "int8-per-channel", "int4", "int4-level4", "int4-asym", "int8-nbits", "int8-nbits-level0")
"""The recipes tried when no grid file is given (``int8-static`` too where calibration rows are given): today's
dynamic int8 first, as the baseline the others are read against."""


@dataclass(frozen=True)
class Grid:
    """The recipes to try, in order; ``path`` None for the default grid."""

    recipes: tuple[Recipe, ...]
    path: Path | None = None


def default_grid(calibrated: bool = False) -> Grid:
    names = DEFAULT_GRID + (("int8-static",) if calibrated else ())
    return Grid(tuple(NAMED[n] for n in names))


def load_grid(path: Path) -> Grid:
    """A grid file: ``[[recipes]]`` entries, each a named recipe (``name = "int8"`` alone) or a recipe's keys as a
    recipe file holds them (with ``name``). Strict as recipe files are: one line naming the file and the entry."""
    data = read_toml(path)
    unknown = sorted(set(data) - {"recipes"})
    if unknown:
        raise MeasureError(f"{path}: key {unknown[0]}: unknown; expected [[recipes]] entries")
    entries = data.get("recipes")
    if not isinstance(entries, list) or not entries:
        raise MeasureError(f"{path}: key recipes: expected one or more [[recipes]] entries")
    recipes = []
    for i, entry in enumerate(entries):
        where = f"{path}: recipes[{i}]"
        if isinstance(entry, dict) and set(entry) == {"name"}:
            name = entry["name"]
            if name not in NAMED:
                raise MeasureError(
                    f"{where}: key name: no recipe named {name!r}; expected one of {', '.join(NAMED)}, "
                    "or the recipe's method and settings"
                )
            recipes.append(NAMED[name])
        else:
            if isinstance(entry, dict) and "name" not in entry and "base" not in entry:
                raise MeasureError(f"{where}: key name: missing; each recipe of a grid is named")
            recipes.append(parse_recipe(entry, where))
    names = [r.name for r in recipes]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise MeasureError(f"{path}: recipe {twice!r} is named twice; expected each name once")
    return Grid(tuple(recipes), path)


@dataclass
class Candidate:
    """One recipe on one reference, as the search goes: dropped (with the stage and why) or still in."""

    reference: str
    recipe: Recipe
    tier: str
    folder: Path
    dropped: str | None = None
    reason: str | None = None
    screen: dict[str, Any] | None = None
    baseline: bool = False
    """The run's baseline recipe: timed even where the screening fails it (not where it was never scored)."""

    @property
    def timed(self) -> bool:
        """A tier of the run: kept by the screening, or the baseline the screening scored."""
        return self.dropped is None or (self.baseline and self.screen is not None)

    def to_dict(self) -> dict[str, Any]:
        return candidate_part(
            self.reference, self.recipe.to_dict(), self.tier, self.dropped, self.reason, self.screen, self.baseline
        )


def with_baseline(grid: Grid, baseline: str | None) -> Grid:
    """``grid`` with the baseline recipe first where it does not name it already; unchanged for no baseline."""
    if baseline is None or any(r.name == baseline for r in grid.recipes):
        return grid
    if baseline not in NAMED:
        raise MeasureError(
            f"explore --baseline: no recipe named {baseline!r}; expected one of {', '.join(NAMED)}, a recipe of "
            "the grid, or none"
        )
    return Grid((NAMED[baseline], *grid.recipes), grid.path)


def grid_sha256(grid: Grid, baseline: str | None) -> str:
    """The grid's recipes (the baseline added) and which is the baseline, hashed: what makes two shard records
    parts of one search."""
    recipes = [r.to_dict() for r in grid.recipes]
    return hashlib.sha256(json.dumps([baseline, recipes], sort_keys=True).encode()).hexdigest()


def parse_shard(value: str) -> tuple[int, int]:
    """``"2/4"``: shard 2 of 4 (1-based); else one line naming the option and what it expects."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", value)
    if m is None or not 1 <= int(m[1]) <= int(m[2]):
        raise MeasureError(f"explore --shard: expected INDEX/COUNT with 1 <= INDEX <= COUNT (e.g. 2/4), got {value!r}")
    return int(m[1]), int(m[2])


def deal(candidates: list[Candidate], index: int, count: int) -> list[Candidate]:
    """Shard ``index`` of ``count``'s candidates: every baseline one (each shard times its own, beside its
    share), and of the rest, in grid order, every ``count``-th from the ``index``-th. Deterministic, so each
    shard of a CI matrix deals alike and every candidate lands in exactly one shard."""
    rest = [c for c in candidates if not c.baseline]
    mine = {id(c) for c in rest[index - 1 :: count]}
    return [c for c in candidates if c.baseline or id(c) in mine]


def tier_name(reference: str, recipe: Recipe) -> str:
    """``smollm2-int8-nbits`` for recipe ``int8-nbits`` of ``smollm2-fp32``: the reference's name without its
    precision, then the recipe's."""
    return f"{re.sub(r'[-_.](fp32|fp16|f32|f16)$', '', reference)}-{recipe.name}"


def _reusable(folder: Path, reference: str, recipe: Recipe) -> bool:
    """A folder this search made before from the same reference by the same recipe is used again as it is."""
    meta = folder / "tier.json"
    if not meta.is_file():
        return False
    q = read_json_object(meta).get("quantization")
    return isinstance(q, dict) and q.get("from") == reference and q.get("recipe") == recipe.to_dict()


def plan_candidates(references: list[Path], grid: Grid, out: Path, calibration: Path | None) -> list[Candidate]:
    """Every (reference, recipe) with its tier name and folder, all checked before anything is written: the
    references full precision and apart in name, static recipes given calibration rows, and no folder in the way
    that this search did not make."""
    names = [r.name for r in references]
    if len(set(names)) != len(names):
        raise MeasureError(
            f"explore: two references named alike ({', '.join(names)}); expected folders of distinct names"
        )
    for ref in references:
        _, graphs = folder_graphs(ref)
        require_full_precision(ref, graphs)
    for recipe in grid.recipes:
        if recipe.method == "static-int8" and calibration is None:
            where = f"{grid.path}: recipe {recipe.name}" if grid.path else f"recipe {recipe.name}"
            raise MeasureError(f"{where}: static-int8 needs calibration rows; give --calibration ROWS.jsonl")
    out_candidates = []
    for ref in references:
        for recipe in grid.recipes:
            name = tier_name(ref.name, recipe)
            if name in names:
                raise MeasureError(
                    f"explore: recipe {recipe.name} of {ref.name} would be named {name}, a reference's name"
                )
            folder = out / name
            if folder.exists() and any(folder.iterdir()) and not _reusable(folder, ref.name, recipe):
                raise MeasureError(
                    f"{folder}: exists and was not made by recipe {recipe.name} from {ref.name}; remove it or give "
                    "another --out"
                )
            out_candidates.append(Candidate(ref.name, recipe, name, folder))
    tiers = [c.tier for c in out_candidates]
    twice = next((t for t in tiers if tiers.count(t) > 1), None)
    if twice is not None:
        raise MeasureError(f"explore: two candidates would both be tier {twice}; give the references distinct names")
    return out_candidates


def quantize_candidates(
    candidates: list[Candidate], references: dict[str, Path], calibration: Path | None, say: Say
) -> None:
    """Each recipe's tier; a recipe the quantizer refuses for this model (a keep that names nothing here, a merged
    decoder the int8 quantizer skips) is dropped with the quantizer's line, not the search."""
    for c in candidates:
        if _reusable(c.folder, c.reference, c.recipe):
            say(f"explore: {c.tier}: made before by recipe {c.recipe.name}, used as it is")
            continue
        cal = calibration if c.recipe.method == "static-int8" else None
        try:
            quantize_apart(references[c.reference], c.folder, c.recipe, cal)  # its memory given back after
        except MeasureError as exc:
            c.dropped, c.reason = "quantize", str(exc)
            say(f"explore: {c.tier}: dropped: {exc}")
            continue
        say(f"explore: {c.tier}: quantized by recipe {c.recipe.name}")
