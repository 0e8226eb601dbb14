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
side), and ``measure merge --shards`` joins the records (:mod:`measure.record.shards`). What a search tries (the
grid, its candidates, how they are quantized and dealt) is :mod:`measure.tools.candidates`'s.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from time import perf_counter
from typing import Any

from measure.analysis.fidelity import judge_figures, tier_figures
from measure.analysis.timings import Bootstrap
from measure.engine.load import load_tier
from measure.engine.options import SessionConfig
from measure.engine.tier import Tier
from measure.errors import MeasureError
from measure.policy import Policy
from measure.record.model.explore import explore_part, screen_part, shard_part
from measure.record.model.fidelity import Fidelity, fidelity_part
from measure.suites import Progress, Say, no_progress, no_say
from measure.suites.config import SUITES, WallclockConfig, load_config
from measure.suites.fidelity import LOGITS_PREFIX, Judged, check_streams, score_reference, score_tier
from measure.suites.golden import GoldenRows, load_golden
from measure.suites.runner import run as run_suites
from measure.suites.steps import release
from measure.tools.candidates import (
    Candidate,
    Grid,
    deal,
    grid_sha256,
    plan_candidates,
    quantize_candidates,
    with_baseline,
)
from measure.tools.screen_cache import ScreenCache, Screened, folder_files, screen_key
from measure.writing import make_dirs, toml_value, write_text

DEFAULT_BASELINE = "int8"
"""The recipe timed beside the survivors whatever its screening says: ``measure quantize --to int8``'s."""
ROLES = ("plain", "lite", "default")
FIDELITY_BOUNDS = ("kld_mean_max", "same_top1_min", "ppl_ratio_max")


def screen_candidates(
    candidates: list[Candidate],
    references: dict[str, Path],
    golden: GoldenRows,
    session: SessionConfig,
    policy: Policy,
    role: str,
    say: Say,
    row_s: dict[str, float] | None = None,
    cache: ScreenCache | None = None,
) -> None:
    """The fidelity pass on ``golden``'s rows, each reference's candidates in turn (one tier loaded at a time);
    a candidate the policy's bounds for ``role`` already fail is dropped, its figures kept either way.
    ``row_s`` receives the seconds a row took each tier (and reference), scoring without loading: the run's
    fidelity pass on every row is this pass again, and its plan charges at least that. ``cache``: figures an
    earlier pass measured of an unchanged tier are judged again, not measured (the reference is then loaded only
    where some tier of it is not in the cache), and what this pass measures is added to it."""
    row_s = {} if row_s is None else row_s
    for name, folder in references.items():
        todo = [c for c in candidates if c.reference == name and c.dropped is None]
        ref_files = folder_files(folder) if cache is not None and todo else []
        keys = {c.tier: screen_key(ref_files, c.folder, golden) for c in todo} if cache is not None else {}
        fresh = []
        for c in todo:
            kept = cache.get(c.tier, keys[c.tier]) if cache is not None else None
            if kept is None:
                fresh.append(c)
                continue
            row_s[c.tier] = kept.tier_row_s
            row_s.setdefault(name, kept.reference_row_s)
            say(f"explore: {c.tier}: screened before (unchanged since), judged again")
            _judge(c, kept.part, len(golden), policy, role, say)
        if not fresh:
            continue
        reference = load_tier(folder, session, label=name, name=name)
        for c, part in _judged(reference, fresh, golden, session, say, row_s):
            if cache is not None:
                cache.put(c.tier, keys[c.tier], Screened(part, row_s[c.tier], row_s[name]))
            _judge(c, part, len(golden), policy, role, say)
    if cache is not None and cache.note is not None:
        say(f"explore: {cache.note}")


def _judge(c: Candidate, part: dict[str, Any], rows: int, policy: Policy, role: str, say: Say) -> None:
    """One candidate's screening figures (a fidelity part of one tier) against the policy's bounds for ``role``:
    kept, or dropped with the figures past their bounds."""
    judged = Fidelity.from_dict(part)
    assert judged is not None, "score_tier writes a fidelity part"
    wc = WallclockConfig()
    (figures,) = tier_figures(judged, Bootstrap(wc.bootstrap, wc.seed))
    outcome, answer, _ = judge_figures(figures, policy, role)
    g = figures.greedy
    c.screen = screen_part(
        rows,
        outcome,
        {
            "kld_mean": (g.kld_mean.value, g.kld_mean.lo, g.kld_mean.hi),
            "same_top1": (g.same_top1.value, g.same_top1.lo, g.same_top1.hi),
            "ppl_ratio": (figures.ppl_ratio.value, figures.ppl_ratio.lo, figures.ppl_ratio.hi),
        },
    )
    if outcome == "failure":
        c.dropped = "fidelity"
        c.reason = f"on the first {rows} golden rows, {answer.removeprefix('no: ')} (role {role})"
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
        candidates = _shard_of(candidates, shard, baseline)
    folders = {ref.name: ref for ref in references}
    make_dirs(out)
    quantize_candidates(candidates, folders, calibration, say)
    screen = GoldenRows(rows.path, rows.sha256, rows.rows[:screen_rows])
    row_s: dict[str, float] = {}
    cache = ScreenCache.open(out)
    screen_candidates(candidates, folders, screen, session, policy, role, say, row_s, cache)
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
    left = _left_s(budget_s, started, out)
    say(f"explore: measuring {len(kept)} recipes and {len(references)} references in the {left:.0f} s left")
    try:
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
    except MeasureError as exc:  # a budget refused after the screening, say: what it measured is kept
        if not cache.entries:
            raise
        raise MeasureError(f"{exc}; the screening is kept in {cache.path}, judged again by a search run again") from exc


def _shard_of(candidates: list[Candidate], shard: tuple[int, int], baseline: str | None) -> list[Candidate]:
    """Shard (I, N)'s candidates (:func:`~measure.tools.candidates.deal`), the option checked first."""
    index, count = shard
    if not 1 <= index <= count:
        raise MeasureError(f"explore --shard: expected INDEX/COUNT with 1 <= INDEX <= COUNT, got {index}/{count}")
    if count > 1 and baseline is None:
        raise MeasureError(
            "explore --shard: a split search needs a baseline (every shard times it beside its share, so each "
            "ratio pairs repeats measured side by side); give --baseline RECIPE, not none"
        )
    return deal(candidates, index, count)


def _left_s(budget_s: float, started: float, out: Path) -> float:
    """The seconds of the budget left for the run, after quantizing and screening; none left is an error."""
    left = budget_s - (perf_counter() - started)
    if left <= 0:
        raise MeasureError(
            f"explore --budget: {budget_s:g} s were spent quantizing and screening; nothing was timed (give a "
            f"larger budget; the tiers are in {out}, made again only where missing, and their screening in "
            f"{out / 'screening.json'}, judged again where unchanged)"
        )
    return left
