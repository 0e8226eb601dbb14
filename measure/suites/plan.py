"""A run that plans itself to a budget: how many rows, repeats, framing rows and profile workers fit. Pure.

The warm-up times one pass of every wall-clock case over a seeded sample of :data:`WARM_ROWS` golden rows (and
loads each tier once), the sample's rows standing for every row's; from those seconds and
what the config asks, :func:`make_plan` picks the largest *shape* (rows, repeats, framing rows, profile
workers, call-cost rows) whose estimate fits the budget, cutting in a fixed order: what informs a verdict
least goes first (profile workers, call costs, the prompt framings), then framing rows, then wall-clock
rows down to what the row-to-row spread allows, then repeats; the fidelity pass's rows never
(:data:`FIDELITY_ROWS`). Repeats are never planned below the
:data:`REPEATS_FOR_95` a 95% interval needs while rows can still go. What is left at the end buys more
repeats, round by round, for the cases whose interval is widest (:func:`next_round`), until every interval
is within the policy's tolerance, the repeats reach :attr:`Plan.max_repeats` or the budget is spent.

Nothing here measures or loads: the planner is tested on timings a test makes up.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

from measure.errors import MeasureError
from measure.suites.legs.cost import LegRate
from measure.suites.plan_costs import Asks, Shape, Warm, estimate

REPEATS_FOR_95 = 6
"""The fewest repeats whose extremes cover a median at 95% or more (1 - 2 * 0.5^6 = 96.9%): below it every
interval is reported at a lower level."""
MIN_ROWS = 4
"""Rows the plan keeps at least, of the wall-clock and of the framing suite (all, where there are fewer)."""
FIDELITY_ROWS = "all"
"""The fidelity pass scores every golden row, whatever the budget: a teacher-forced row costs two calls a tier
(a 135M model's 24 rows of 32 tokens: about 3 minutes for two tiers on 2 cores), and its figures decide what
ships, so the budget cuts everything else first, and a budget that cannot hold it is refused. Each row is the
interval's unit: on 2 rows the bootstrap has no width to show (a zero-width "interval"), on 24 it separates a
mean KLD of 0.2 from a bound of 0.01."""
WARM_ROWS = MIN_ROWS
"""Rows the planning warm-up decodes per case: the first of the plan's seeded shuffle, so they lie inside every
wall-clock sample the plan can pick (pyperf and asv calibrate on a few runs, not on the whole benchmark)."""
TOP_UP = 3
"""The top-up stops a case at this many times the planned repeats."""
FINISH_S = 5.0
"""Seconds kept for writing the record and the summary at the end."""

__all__ = ["REPEATS_FOR_95", "WARM_ROWS", "Asks", "BudgetTooSmall", "Plan", "Shape", "Warm", "make_plan", "next_round"]

_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*h)?\s*(?:(\d+(?:\.\d+)?)\s*m)?\s*(?:(\d+(?:\.\d+)?)\s*s?)?\s*$")


def parse_budget(value: object, where: str) -> float:
    """``"15m"``, ``"1h30m"``, ``"900s"``, ``"900"`` or a number: seconds above zero; else one line naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise MeasureError(f'{where}: expected a duration such as "15m", "1h30m" or 900 (seconds), got {value!r}')
    if isinstance(value, str):
        m = _DURATION.match(value)
        if not value.strip() or m is None or not any(m.groups()):
            raise MeasureError(f'{where}: expected a duration such as "15m", "1h30m" or "900s", got {value!r}')
        h, mins, s = (float(g) if g else 0.0 for g in m.groups())
        seconds = 3600 * h + 60 * mins + s
    else:
        seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise MeasureError(f"{where}: expected a duration above zero, got {value!r}")
    return seconds


def clock(seconds: float) -> str:
    """``14m05s``, ``1h02m``, ``45s``: how the plan and progress lines say a duration."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class BudgetTooSmall(MeasureError):
    """The budget cannot hold one repeat of everything: refused before anything is measured."""

    def __init__(self, budget_s: float, minimum_s: float, elapsed_s: float, what: str, given: str | None) -> None:
        """``given``: where the budget came from, as the message names it (None: the ``--budget`` flag)."""
        self.minimum_s = minimum_s
        super().__init__(
            f"{given or f'--budget {clock(budget_s)}'}: too small: one repeat of everything ({what}) needs at least "
            f"{clock(minimum_s)} here ({clock(elapsed_s)} of it loading and warming up); give at least "
            f"{clock(math.ceil(minimum_s / 60) * 60)}, or measure less (fewer tiers, pairs or k); nothing was measured",
            docs="guide/large-models.md#give-the-run-a-budget",
        )


@dataclass(frozen=True)
class Plan:
    """What a budgeted run measures, and why: stored in the record (``plan``) and printed before measuring."""

    budget_s: float
    elapsed_s: float
    """Seconds spent before the plan (checks, loads, the warm-up)."""
    minimum_s: float
    """What the smallest shape (one repeat of everything) would have taken, the warm-up included."""
    estimate_s: float
    """The planned shape's estimate, the warm-up included: the expected end, before any top-up."""
    shape: Shape
    wallclock_rows: tuple[int, ...]
    """Golden rows (0-based) the wall-clock cases decode: a seeded sample where the budget cut them."""
    framing_rows: tuple[int, ...]
    """Golden rows the framing suite decodes (the first of the same sample); its prompt framings the first
    ``shape.prefill_rows`` of them."""
    max_repeats: int
    steps: Mapping[str, float] = field(default_factory=dict)
    """Each step's estimated seconds."""
    cut: tuple[str, ...] = ()
    """What the budget cut from what the config asks, in words; empty when nothing was."""
    warm_rows: tuple[int, ...] = ()
    """The golden rows the warm-up decoded, whose row times the estimates take for every row's; empty: all."""
    fidelity_rows: tuple[int, ...] = ()
    """Golden rows the fidelity pass scores (the same sample; every row unless the budget cut all else first)."""
    leg_rates: tuple[tuple[str, str, LegRate], ...] = ()
    """What the warm-up measured of each replaying leg on each tier it prices: (leg key, tier, rate)."""

    def to_dict(self) -> dict[str, object]:
        sampled: dict[str, object] = {"warm_rows": list(self.warm_rows)} if self.warm_rows else {}
        if self.leg_rates:
            sampled["leg_rates"] = [
                {"leg": leg, "tier": tier, "precision": r.precision, "skipped": r.skipped}
                | ({} if r.skipped else {"factor": round(r.factor, 3), "start_s": round(r.start_s, 3)})
                for leg, tier, r in self.leg_rates
            ]
        return {
            "budget_s": round(self.budget_s, 3),
            "elapsed_s": round(self.elapsed_s, 3),
            "minimum_s": round(self.minimum_s, 3),
            "estimate_s": round(self.estimate_s, 3),
            "shape": asdict(self.shape),
            "wallclock_rows": list(self.wallclock_rows),
            "framing_rows": list(self.framing_rows),
            "fidelity_rows": list(self.fidelity_rows),
            "max_repeats": self.max_repeats,
            "steps": {k: round(v, 3) for k, v in self.steps.items()},
            "cut": list(self.cut),
        } | sampled

    def lines(self, rows: int) -> list[str]:
        """The plan as ``measure run`` prints it: one line a step, the ETA, what was cut."""
        s = self.shape
        wc, fr, fi = len(self.wallclock_rows), len(self.framing_rows), len(self.fidelity_rows)
        warmed = f" on {len(self.warm_rows)}/{rows} rows" if self.warm_rows else ""
        out = [
            f"plan for a {clock(self.budget_s)} budget ({clock(self.elapsed_s)} spent loading and warming up{warmed}):"
        ]
        described = {
            "wallclock": f"{wc}/{rows} rows x {s.repeats} repeats per case, up to {self.max_repeats} where an "
            "interval is wider than the tolerance",
            "call_costs": f"{s.call_cost_rows} rows x {s.call_cost_repeats} repeats",
            "profile": f"{s.profile_workers} worker(s) per tier, {s.profile_rows} rows each",
            "framing": f"{fr}/{rows} rows (prompt framings on {min(s.prefill_rows, fr)})",
            "fidelity": f"{fi}/{rows} rows (never cut: its figures decide what ships)",
        }
        for step, seconds in self.steps.items():
            if seconds > 0:
                out.append(f"  {step:<11}{described.get(step, ''):<76} ~{clock(seconds)}")
        ends = self.estimate_s
        out.append(f"  estimated end {clock(ends)} of {clock(self.budget_s)} (ETA {clock(ends - self.elapsed_s)})")
        out.extend(f"  measured: {leg}" for leg in _rates_said(self.leg_rates))
        out.extend(f"  cut: {c}" for c in self.cut)
        return out


def sample_rows(n: int, keep: int, seed: int) -> tuple[int, ...]:
    """``keep`` of ``n`` golden rows, a seeded sample in order; every row when ``keep >= n``. The wall-clock's
    and the framing's samples are prefixes of one shuffle, so a smaller one lies inside the larger."""
    if keep >= n:
        return tuple(range(n))
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return tuple(sorted(order[:keep]))


def rows_needed(warm: Warm, tolerance: float, rows: int | None = None) -> int:
    """The fewest of ``rows`` rows (default: those the warm-up decoded) whose sample mean ms/token stays within the
    tolerance of all rows' (two standard errors, finite population), for every case, the spread read from the
    rows the warm-up decoded: rows are cut where rows are alike, kept where they differ."""
    need = 1
    for case in warm.cases.values():
        per = [r / max(t, 1) for r, t in zip(case.row_s, case.tokens, strict=True)]
        n = len(per)
        if n < 2:
            continue
        mean, total = sum(per) / n, max(rows or n, n)
        if mean <= 0:
            continue
        sd = math.sqrt(sum((x - mean) ** 2 for x in per) / (n - 1))
        for r in range(1, total + 1):
            if 2 * sd / mean * math.sqrt((total - r) / ((total - 1) * r)) <= tolerance:
                need = max(need, r)
                break
    return need


def _halve(n: int, floor: int) -> Iterator[int]:
    while n > floor:
        n = max(floor, n // 2)
        yield n


def _shapes(asks: Asks, floor_rows: int) -> Iterator[Shape]:
    """Shapes from what the config asks down to one repeat of everything, one cut at a time, in the order a
    verdict loses least: profile workers, call costs and the prompt framings; framing rows; wall-clock rows to
    the row spread's floor; repeats to the 95% interval's; then everything to its least."""
    n, least = asks.rows, min(asks.rows, MIN_ROWS)
    s = Shape(
        wallclock_rows=n,
        repeats=max(asks.repeats, REPEATS_FOR_95),
        framing_rows=n,
        prefill_rows=n,
        profile_workers=asks.profile_workers,
        profile_rows=asks.profile_rows,
        warm_loads=asks.warm_loads,
        call_cost_rows=asks.call_cost_rows,
        call_cost_repeats=asks.repeats,
        fidelity_rows=n,
    )
    yield s
    s = replace(s, profile_workers=1, warm_loads=min(asks.warm_loads, 1), profile_rows=min(asks.profile_rows, 2))
    yield s
    s = replace(s, call_cost_rows=min(asks.call_cost_rows, 4), call_cost_repeats=min(asks.repeats, 3))
    yield s
    for p in _halve(s.prefill_rows, min(2, n)):
        yield (s := replace(s, prefill_rows=p))
    for f in _halve(s.framing_rows, least):
        yield (s := replace(s, framing_rows=f, prefill_rows=min(s.prefill_rows, f)))
    for w in _halve(s.wallclock_rows, max(least, min(floor_rows, n))):
        yield (s := replace(s, wallclock_rows=w))
    for r in range(s.repeats - 1, REPEATS_FOR_95 - 1, -1):
        yield (s := replace(s, repeats=r))
    s = replace(s, framing_rows=min(2, n), prefill_rows=1, call_cost_rows=1, call_cost_repeats=1, profile_rows=1)
    yield s
    for w in _halve(s.wallclock_rows, least):
        yield (s := replace(s, wallclock_rows=w))
    for r in range(s.repeats - 1, 0, -1):
        yield (s := replace(s, repeats=r))
    yield (s := replace(s, framing_rows=1, warm_loads=0))
    yield replace(s, prefill_rows=0)  # last: a decoder-only prompt fed token by token is hundreds of calls a leg


def _cuts(asks: Asks, s: Shape, seed: int) -> tuple[str, ...]:
    """What the shape takes from what the config asks, in words a reader of the record acts on."""
    checks = [
        (
            "wallclock",
            s.wallclock_rows < asks.rows,
            f"wall-clock rows {asks.rows} -> {s.wallclock_rows} (a sample, seed {seed})",
        ),
        ("wallclock", s.repeats < asks.repeats, f"wall-clock repeats {asks.repeats} -> {s.repeats}"),
        (
            "wallclock",
            s.repeats < REPEATS_FOR_95,
            f"{s.repeats} repeats: intervals below 95% (the ratios and verdicts say at which level)",
        ),
        ("framing", s.framing_rows < asks.rows, f"framing rows {asks.rows} -> {s.framing_rows} (the same sample)"),
        (
            "framing",
            s.prefill_rows < s.framing_rows,
            f"prompt framings on {s.prefill_rows} of the framing rows" if s.prefill_rows else "no prompt framings",
        ),
        ("profile", s.profile_workers < asks.profile_workers, f"profile workers {asks.profile_workers} -> 1"),
        ("profile", s.profile_rows < asks.profile_rows, f"profile rows {asks.profile_rows} -> {s.profile_rows}"),
        ("profile", s.warm_loads < asks.warm_loads, f"warm loads {asks.warm_loads} -> {s.warm_loads}"),
        (
            "call_costs",
            s.call_cost_rows < asks.call_cost_rows,
            f"call-cost rows {asks.call_cost_rows} -> {s.call_cost_rows}",
        ),
        (
            "call_costs",
            s.call_cost_repeats < asks.repeats,
            f"call-cost repeats {asks.repeats} -> {s.call_cost_repeats}",
        ),
    ]
    return tuple(text for step, cut, text in checks if cut and step in asks.steps)


def make_plan(warm: Warm, asks: Asks, budget_s: float, given: str | None = None) -> Plan:
    """The largest shape that fits what is left of ``budget_s`` after the warm-up; :class:`BudgetTooSmall` when
    not even the smallest (one repeat of everything) does, naming the budget as ``given`` (None: ``--budget``)."""
    left = budget_s - warm.elapsed_s - FINISH_S
    floor_rows = rows_needed(warm, asks.tolerance, asks.rows)
    chosen, steps, last = None, {}, None
    for shape in _shapes(asks, floor_rows):
        steps = estimate(warm, asks, shape)
        last = (shape, steps)
        if sum(steps.values()) <= left:
            chosen = shape
            break
    assert last is not None
    minimum_s = warm.elapsed_s + FINISH_S + sum(last[1].values())
    if chosen is None:
        s = last[0]
        what = f"each wall-clock case once over {s.wallclock_rows} rows, framing on {s.framing_rows}, "
        what += "one profile worker per tier, no prompt framings"
        raise BudgetTooSmall(budget_s, minimum_s, warm.elapsed_s, what, given)
    return Plan(
        budget_s=budget_s,
        elapsed_s=warm.elapsed_s,
        minimum_s=minimum_s,
        estimate_s=warm.elapsed_s + FINISH_S + sum(steps.values()),
        shape=chosen,
        wallclock_rows=sample_rows(asks.rows, chosen.wallclock_rows, asks.seed),
        framing_rows=sample_rows(asks.rows, chosen.framing_rows, asks.seed),
        fidelity_rows=sample_rows(asks.rows, chosen.fidelity_rows, asks.seed) if asks.judged else (),
        max_repeats=max(chosen.repeats, asks.repeats) * TOP_UP,
        steps=steps,
        cut=_cuts(asks, chosen, asks.seed),
        warm_rows=warm.rows,
        leg_rates=tuple((leg, tier, rate) for (leg, tier), rate in asks.leg_rates.items()),
    )


def _rates_said(rates: tuple[tuple[str, str, LegRate], ...]) -> tuple[str, ...]:
    """Each replaying leg's measured rate once per precision: ``web leg on int4 tiers (its tier): 12.9x ...``."""
    said: dict[tuple[str, str], str] = {}
    for leg, tier, r in rates:
        if (leg, r.precision) not in said:
            pace = "not run there" if r.skipped else f"{r.factor:.1f}x Python's decode, {clock(r.start_s)} to start"
            said[leg, r.precision] = f"{leg} leg on {r.precision or 'its'} tiers ({tier}): {pace}"
    return tuple(said.values())


def _level(n: int, depth: int) -> float:
    """Coverage of ``[x_(depth), x_(n + 1 - depth)]`` for a median: 1 - 2 P(Binomial(n, 1/2) <= depth - 1)."""
    return 1 - 2 * sum(math.comb(n, i) for i in range(depth)) / 2**n


def half_width(samples: Sequence[float]) -> float:
    """The widest side of a median's distribution-free 95% interval (order statistics, no interpolation: a
    little wider than the analysis's), over the median; infinite below :data:`REPEATS_FOR_95` samples."""
    n = len(samples)
    if n < REPEATS_FOR_95:
        return math.inf
    x = sorted(samples)
    depth = 1
    while depth + 1 <= n // 2 and _level(n, depth + 1) >= 0.95:
        depth += 1
    mid = (x[(n - 1) // 2] + x[n // 2]) / 2
    return max(mid - x[depth - 1], x[n - depth] - mid) / mid if mid > 0 else math.inf


@dataclass(frozen=True)
class Round:
    """The top-up's next decision: the cases to repeat once more (widest interval first), or why it stops."""

    cases: tuple[str, ...] = ()
    stop: str | None = None
    """``tolerance`` (every interval within it), ``repeats`` (the wide ones are at the cap) or ``budget``."""


def next_round(
    per_repeat: Mapping[str, Sequence[float]],
    cost_s: Mapping[str, float],
    left_s: float,
    tolerance: float,
    max_repeats: int,
) -> Round:
    """Which cases get one more repeat: those whose interval (of per-repeat ms/token) is wider than ``tolerance``
    of their median, widest first, as many as ``left_s`` pays for at ``cost_s`` each (a pass, its load and its
    untimed row). A case with a large run-to-run spread keeps getting repeats; a tight one gets none."""
    widths = {c: half_width(s) for c, s in per_repeat.items()}
    wide = [c for c, w in widths.items() if w > tolerance]
    if not wide:
        return Round(stop="tolerance")
    open_ = sorted((c for c in wide if len(per_repeat[c]) < max_repeats), key=lambda c: -widths[c])
    if not open_:
        return Round(stop="repeats")
    chosen, spent = [], 0.0
    for c in open_:
        if spent + cost_s[c] <= left_s:
            chosen.append(c)
            spent += cost_s[c]
    return Round(cases=tuple(chosen)) if chosen else Round(stop="budget")
