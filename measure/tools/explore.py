"""``measure explore``: try a grid of quantization recipes on full-precision tiers, drop what fails, time the rest.

The order is the cheap one: every recipe is quantized (seconds each); each tier is judged by the fidelity pass on
the first few golden rows against its reference, and one whose 95% intervals already lie past the policy's bounds
is dropped (a few rows cannot make a tier faithful, only show it is not); the survivors and their references are
then measured by ``measure run``'s own runner (wall-clock and framing suites, the full fidelity pass) under what is
left of the budget, into an ordinary run record whose tiers are the recipes. What was dropped, at which stage and
why, stays in the record (``explore``), and the suite config the run used is written beside the tiers, so
``measure run --config OUT/explore.toml`` measures the same tiers again.

One recipe, the baseline (``int8`` unless told: what ``measure quantize --to int8`` applies, what teams ship by
default), is timed whatever its screening says, as the run's plain tier: every recipe's speed is then read against
what a team would otherwise ship, and a baseline the policy fails still says how much fidelity the others buy at
what cost. It stays marked dropped in the record (``baseline: true`` beside its stage and reason); it is no
candidate for shipping.

A grid too big for one machine is split (``shard=(I, N)``): the candidates are dealt to N shards in grid order,
each shard's record measures its share and the baseline beside it (every ratio pairs repeats measured side by
side), and ``measure merge --shards`` joins the records (:mod:`measure.record.shards`).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from measure.analysis.fidelity import judge_figures, tier_figures
from measure.analysis.timings import Bootstrap
from measure.engine.load import load_tier
from measure.engine.meta import read_json_object
from measure.engine.options import SessionConfig
from measure.engine.tier import Tier
from measure.errors import MeasureError
from measure.policy import Policy
from measure.record.model.explore import candidate_part, explore_part, screen_part, shard_part
from measure.record.model.fidelity import Fidelity, fidelity_part
from measure.suites import Progress, Say, no_progress, no_say
from measure.suites.config import SUITES, WallclockConfig, load_config
from measure.suites.fidelity import LOGITS_PREFIX, Judged, check_streams, score_reference, score_tier
from measure.suites.golden import GoldenRows, load_golden
from measure.suites.runner import run as run_suites
from measure.suites.steps import release
from measure.tools.quantize import folder_graphs, quantize_recipe, require_full_precision
from measure.tools.recipes import NAMED, Recipe, parse_recipe, read_toml
from measure.writing import make_dirs, toml_value, write_text

DEFAULT_BASELINE = "int8"
"""The recipe timed beside the survivors whatever its screening says: ``measure quantize --to int8``'s."""
DEFAULT_GRID = ("int8", "int8-per-channel", "int4", "int4-level4", "int4-asym", "int8-nbits", "int8-nbits-level0")
"""The recipes tried when no grid file is given (``int8-static`` too where calibration rows are given): today's
dynamic int8 first, as the baseline the others are read against."""
ROLES = ("plain", "lite", "default")
FIDELITY_BOUNDS = ("kld_mean_max", "same_top1_min", "ppl_ratio_max")


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
            quantize_recipe(references[c.reference], c.folder, c.recipe, calibration=cal)
        except MeasureError as exc:
            c.dropped, c.reason = "quantize", str(exc)
            say(f"explore: {c.tier}: dropped: {exc}")
            continue
        say(f"explore: {c.tier}: quantized by recipe {c.recipe.name}")


def screen_candidates(
    candidates: list[Candidate],
    references: dict[str, Path],
    golden: GoldenRows,
    session: SessionConfig,
    policy: Policy,
    role: str,
    say: Say,
    row_s: dict[str, float] | None = None,
) -> None:
    """The fidelity pass on ``golden``'s rows, each reference's candidates in turn (one tier loaded at a time);
    a candidate the policy's bounds for ``role`` already fail is dropped, its figures kept either way.
    ``row_s`` receives the seconds a row took each tier (and reference), scoring without loading: the run's
    fidelity pass on every row is this pass again, and its plan charges at least that."""
    wc = WallclockConfig()
    row_s = {} if row_s is None else row_s
    for name, folder in references.items():
        todo = [c for c in candidates if c.reference == name and c.dropped is None]
        if not todo:
            continue
        reference = load_tier(folder, session, label=name, name=name)
        for c, part in _judged(reference, todo, golden, session, say, row_s):
            judged = Fidelity.from_dict(part)
            assert judged is not None, "score_tier writes a fidelity part"
            (figures,) = tier_figures(judged, Bootstrap(wc.bootstrap, wc.seed))
            outcome, answer, _ = judge_figures(figures, policy, role)
            g = figures.greedy
            c.screen = screen_part(
                len(golden),
                outcome,
                {
                    "kld_mean": (g.kld_mean.value, g.kld_mean.lo, g.kld_mean.hi),
                    "same_top1": (g.same_top1.value, g.same_top1.lo, g.same_top1.hi),
                    "ppl_ratio": (figures.ppl_ratio.value, figures.ppl_ratio.lo, figures.ppl_ratio.hi),
                },
            )
            if outcome == "failure":
                c.dropped = "fidelity"
                c.reason = f"on the first {len(golden)} golden rows, {answer.removeprefix('no: ')} (role {role})"
                timed = "; timed all the same, as the baseline" if c.baseline else ""
                say(f"explore: {c.tier}: dropped: {c.reason}{timed}")
            else:
                say(f"explore: {c.tier}: kept ({answer})")


def _judged(
    reference: Tier,
    todo: list[Candidate],
    golden: GoldenRows,
    session: SessionConfig,
    say: Say,
    row_s: dict[str, float],
) -> Iterator[tuple[Candidate, dict[str, Any]]]:
    """Each candidate's fidelity block of one tier: the reference scored once for all of them (its logits kept on
    disk) and let go of, then each tier loaded only while it is scored, as a run's pass does. A tier the pass
    refuses (NaN logits, a reference that cannot judge it) is dropped with that line, and the pass goes on."""
    prompt = getattr(reference, "prompt", None) if reference.kind == "causal" else None
    with tempfile.TemporaryDirectory(prefix=LOGITS_PREFIX) as folder:
        began = perf_counter()
        scored = score_reference(reference, golden, Path(folder), True)
        row_s[reference.name] = (perf_counter() - began) / len(golden)
        release(reference)
        for c in todo:
            tier = load_tier(c.folder, session, label=c.tier, name=c.tier, prompt=prompt)
            try:
                began = perf_counter()
                check_streams([Judged(tier, reference, "quantization.from", True)], golden)
                part = score_tier(scored, tier, "quantization.from", golden)
                row_s[c.tier] = (perf_counter() - began) / len(golden)
            except MeasureError as exc:
                c.dropped, c.reason = "fidelity", str(exc)
                say(f"explore: {c.tier}: dropped: {exc}")
                continue
            finally:
                release(tier)
            yield c, fidelity_part() | {"references": [scored.part], "tiers": [part]}


def explore_policy(policy: Policy, role: str) -> Policy:
    """The policy the search and its record judge by: the fidelity bounds of ``role`` for every tier, so the pages
    judge each recipe by the bound it was screened against, whatever role it is given in the run."""
    return Policy(**(asdict(policy) | {name: policy.bound(name, role) for name in FIDELITY_BOUNDS}))


def suite_config_text(
    references: dict[str, Path],
    kept: list[Candidate],
    golden: Path,
    session: SessionConfig,
    policy: Policy,
    plain: str,
) -> str:
    """The suite config the run measures: the references (role reference), the recipes timed (``plain`` anchors
    the ratios: the baseline, else the first survivor; the rest verifier), each judged against its reference; the
    cost profile and
    the other runtimes' legs off (the search compares recipes in one runtime); the search's policy."""
    lines = [
        "# Written by measure explore: the references and the recipes that survived its screening pass.",
        f"golden = {toml_value(str(golden.resolve()))}",
        "",
        "[session]",
        *(f"{k} = {toml_value(v)}" for k, v in session.to_dict().items()),
        "",
        "[wallclock]",
        "profile = false",
        "call_costs = false",
        "",
        "[framing]",
        "node_leg = false",
        "web_leg = false",
        "genai_leg = false",
        "leg_repeats = 0",
        "",
        "[policy]",
        *(f"{k} = {toml_value(v)}" for k, v in asdict(policy).items()),
    ]
    for name, folder in references.items():
        role = "plain" if name == plain else "reference"
        lines += [
            "",
            "[[tiers]]",
            f"name = {toml_value(name)}",
            f"path = {toml_value(str(folder.resolve()))}",
            f'role = "{role}"',
        ]
    for c in kept:
        role = "plain" if c.tier == plain else "verifier"
        lines += [
            "",
            "[[tiers]]",
            f"name = {toml_value(c.tier)}",
            f"path = {toml_value(str(c.folder.resolve()))}",
            f'role = "{role}"',
            f"reference = {toml_value(c.reference)}",
        ]
    return "\n".join(lines) + "\n"


def explore(
    references: list[Path],
    grid: Grid,
    *,
    out: Path,
    results: Path,
    golden: Path,
    screen_rows: int,
    budget_s: float,
    calibration: Path | None = None,
    session: SessionConfig | None = None,
    policy: Policy | None = None,
    role: str = "plain",
    baseline: str | None = DEFAULT_BASELINE,
    shard: tuple[int, int] | None = None,
    argv: list[str] | None = None,
    progress: Progress = no_progress,
    say: Say = no_say,
) -> Path:
    """Quantize, screen and measure; the run record's path. Everything checkable is checked before the first
    tier is written: one line and nothing written for a bad reference, grid, option or folder. ``baseline``: the
    recipe timed whatever its screening says, as the plain tier (added to the grid where absent); None: none.
    ``shard``: (I, N): measure only shard I of N of the candidates (:func:`deal`), the baseline in each."""
    started = perf_counter()
    if role not in ROLES:
        raise MeasureError(f"explore --role: expected one of {', '.join(ROLES)}, got {role!r}")
    rows = load_golden(golden)
    if not 1 <= screen_rows <= len(rows):
        raise MeasureError(
            f"explore --screen-rows: expected 1 to {len(rows)} (the rows in {rows.path}), got {screen_rows}"
        )
    session = session or SessionConfig()
    policy = explore_policy(policy or Policy(), role)
    grid = with_baseline(grid, baseline)
    candidates = plan_candidates(references, grid, out, calibration)
    for c in candidates:
        c.baseline = c.recipe.name == baseline
    if shard is not None:
        index, count = shard
        if not 1 <= index <= count:
            raise MeasureError(f"explore --shard: expected INDEX/COUNT with 1 <= INDEX <= COUNT, got {index}/{count}")
        if count > 1 and baseline is None:
            raise MeasureError(
                "explore --shard: a split search needs a baseline (every shard times it beside its share, so each "
                "ratio pairs repeats measured side by side); give --baseline RECIPE, not none"
            )
        candidates = deal(candidates, index, count)
    folders = {ref.name: ref for ref in references}
    make_dirs(out)
    quantize_candidates(candidates, folders, calibration, say)
    screen = GoldenRows(rows.path, rows.sha256, rows.rows[:screen_rows])
    row_s: dict[str, float] = {}
    screen_candidates(candidates, folders, screen, session, policy, role, say, row_s)
    kept = [c for c in candidates if c.timed]
    anchors = [c for c in kept if c.baseline] + kept
    plain = anchors[0].tier if anchors else references[0].name  # nothing left: the first reference anchors them
    if not kept:
        say("explore: every recipe was dropped; the references alone are measured, the record says why")
    config_path = out / "explore.toml"
    write_text(config_path, suite_config_text(folders, kept, rows.path, session, policy, plain))
    config = load_config(config_path)
    part = explore_part(
        None if grid.path is None else str(grid.path),
        screen_rows,
        role,
        budget_s,
        [c.to_dict() for c in candidates],
        None if shard is None else shard_part(shard[0], shard[1], grid_sha256(grid, baseline)),
    )
    left = budget_s - (perf_counter() - started)
    if left <= 0:
        raise MeasureError(
            f"explore --budget: {budget_s:g} s were spent quantizing and screening; nothing was measured (give a "
            f"larger budget; the tiers are in {out}, made again only where missing)"
        )
    say(f"explore: measuring {len(kept)} recipes and {len(references)} references in the {left:.0f} s left")
    return run_suites(
        config,
        list(SUITES),
        results,
        argv=argv,
        progress=progress,
        budget_s=left,
        say=say,
        parts={"explore": part},
        fidelity_row_s=row_s,
    )
