"""The Overview's list of what ``measure explore`` tried: every candidate of the current record's ``explore``
section, measured or dropped, with the stage that dropped it, its screening figures with their intervals, and the
reason, so what was tried stays visible beside the chart of what was measured, not only what won.

On the Overview because that is where the search's result is read: the ship line and the advice name a recipe,
and the speed-fidelity chart draws the measured recipes as families; the dropped ones belong beside them.
Recipe names, reasons and tier names come from user files: every one goes through :func:`md`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.record.model.explore import Candidate, Explore, Screen, ScreenFigure
from measure.site.context import Md, badge, link, md, trusted
from measure.site.evidence import row_id

STAGES = {"quantize": "dropped at quantize", "fidelity": "dropped at screening"}
"""Each stage a candidate can be dropped at, in the pages' words (the record's ``dropped``)."""


@dataclass(frozen=True)
class CandidateRow:
    recipe: Md
    """The recipe's name, and under it its settings and the reference it was applied to."""
    tier: Md
    """The tier it made, linked to its timing where the run timed it."""
    stage: Md
    """measured, the baseline, or the stage that dropped it, badged."""
    ms_per_token: Md
    """With its interval where the run timed it, else "-"."""
    kld_mean: Md
    same_top1: Md
    ppl_ratio: Md
    """Each screening figure with its interval ("-" for a candidate the quantizer refused)."""
    reason: Md


@dataclass(frozen=True)
class RecipesTried:
    lead: Md
    """How many recipes on which references, from which grid, screened how, and how many each stage dropped."""
    rows: tuple[CandidateRow, ...]


def _stage(c: Candidate) -> Md:
    inconclusive = c.screen is not None and c.screen.outcome == "inconclusive"
    if c.dropped is None:
        said = "measured, the baseline" if c.baseline else "measured"
        said += " (screening inconclusive: kept)" if inconclusive else ""
        return trusted(f"{badge('success')} {said}")
    stage = md(STAGES.get(c.dropped, f"dropped at {c.dropped}"))
    if c.measured:  # the baseline: timed all the same, so every recipe reads against it
        return trusted(f"{badge('warning')} the baseline, {stage}; timed all the same")
    return trusted(f"{badge('failure')} {stage}")


def _figure(f: ScreenFigure, spec: str, rows: int | None) -> Md:
    over = f"<br><small>over {rows} rows</small>" if rows is not None else ""
    return trusted(f"{f.value:{spec}}<br><small>[{f.lo:{spec}}, {f.hi:{spec}}]</small>{over}")


def _figures(s: Screen | None, rows: int | None) -> tuple[Md, Md, Md]:
    """``rows``: said under the KLD where this candidate's screen read another number of rows than the lead says."""
    if s is None:
        return md("-"), md("-"), md("-")
    return _figure(s.kld_mean, ".2g", rows), _figure(s.same_top1, ".1%", None), _figure(s.ppl_ratio, ".4f", None)


_SAID: dict[str, Callable[[Any], str]] = {
    "bits": lambda v: f"{v}-bit",
    "per_channel": lambda v: "per-channel" if v else "per-tensor",
    "symmetric": lambda v: "symmetric" if v else "asymmetric",
    "block_size": lambda v: f"block {v}",
    "accuracy_level": lambda v: f"accuracy level {v}",
}
"""How a recipe's settings read in a cell (``per-tensor``, not ``per_channel False``); other keys as ``key value``."""


def _setting(key: str, value: Any) -> str:
    return _SAID[key](value) if key in _SAID else f"{key} {value}"


def _settings(c: Candidate) -> str:
    """The recipe's settings but its name; an unset one (None, the quantizer's default) is not said."""
    said = " · ".join(_setting(k, v) for k, v in c.recipe.items() if k != "name" and v is not None)
    return f'<span class="measure-settings">{md(said)}<br></span>' if said else ""


def recipes_tried(a: Analysis) -> RecipesTried | None:
    """None for a record that no ``measure explore`` made."""
    ex = a.record.explore
    if ex is None or not ex.candidates:
        return None
    timed = {t.tier: t.ms_per_token for t in a.tiers}
    counts = {s.rows for c in ex.candidates if (s := c.screen) is not None}
    rows_said = ex.screen_rows if counts <= {ex.screen_rows} else None
    rows = tuple(_row(c, timed.get(c.tier) if c.measured else None, rows_said) for c in ex.candidates)
    return RecipesTried(_lead(ex, rows_said), rows)


def _row(c: Candidate, ms: Estimate | None, rows_said: int | None) -> CandidateRow:
    """``ms``: the tier's ms/token where the run timed it; ``rows_said``: the screen's rows where the lead says them."""
    tier = link(c.tier, f"wallclock.md#{row_id('tier', c.tier)}") if ms is not None else md(c.tier)
    speed = trusted(f"{ms.value:.3f}<br><small>[{ms.lo:.3f}, {ms.hi:.3f}]</small>") if ms else md("-")
    own_rows = c.screen.rows if c.screen is not None and rows_said is None else None
    return CandidateRow(
        trusted(f'{md(c.recipe_name)}<br><small class="measure-recipe">{_settings(c)}of {md(c.reference)}</small>'),
        tier,
        _stage(c),
        speed,
        *_figures(c.screen, own_rows),
        md(c.reason) if c.reason else md("-"),
    )


def _lead(ex: Explore, rows_said: int | None) -> Md:
    """What was tried, from which grid, how it was screened, and how many each stage dropped."""
    references = list(dict.fromkeys(c.reference for c in ex.candidates))
    recipes = len({c.recipe_name for c in ex.candidates})
    dropped = [c.dropped for c in ex.candidates if c.dropped is not None]
    by_stage = ", ".join(f"{dropped.count(s)} {STAGES.get(s, f'at {s}')}" for s in dict.fromkeys(dropped))
    grid = f"the grid {md(ex.grid)}" if ex.grid else "the default grid"
    rows = f"the first {rows_said} golden rows" if rows_said is not None else "the first golden rows"
    measured = sum(c.measured for c in ex.candidates)
    lead = (
        f"`measure explore` tried {recipes} recipe(s) from {grid} on {', '.join(md(r) for r in references)}: "
        f"{len(ex.candidates)} candidates, {measured} measured, {len(dropped)} dropped"
        + (f" ({md(by_stage)})" if by_stage else "")
        + f". The screening is the fidelity pass on {rows}, judged by the policy's {md(ex.role)} bounds; "
        "its figures are against each candidate's reference, with 95% intervals."
    )
    return trusted(lead)
