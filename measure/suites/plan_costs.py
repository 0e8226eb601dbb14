"""What each step of a run would cost at a given shape, estimated from the warm-up's timings. Pure.

The planner (:mod:`measure.suites.plan`) asks this module for seconds only. The wall-clock estimate is the
warm-up's own passes (and loads) times the repeats; the other steps are built from the same per-row facts
of each tier: a row's decode, its first token (the prefill, or the encoder and first call), its tokens and
prompt tokens, and from those the cost of one decode step and of a call of n tokens. Steps whose work is
not seen in the warm-up (other runtimes, worker processes) carry stated constants; every estimate but the
wall-clock's is inflated by :data:`SAFETY`, since the top-up at the end spends what an overestimate leaves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import median

from measure.suites.legs.cost import LegCost, LegRate

PROCESS_S = 0.5
"""A worker process's start and imports (Python, onnxruntime, numpy, tokenizers)."""
GENAI_WARM_ROWS = 4
"""Rows the onnxruntime-genai leg decodes untimed, by both loops, before it times a tier (all, where fewer)."""
SAFETY = 1.15
"""Every estimate but the wall-clock's is inflated by this much."""


@dataclass(frozen=True)
class TierTimes:
    """One tier's greedy decode of each golden row in the warm-up, and its load."""

    kind: str
    load_s: float
    row_s: tuple[float, ...]
    first_s: tuple[float, ...]
    """Ids in to the first output token (decoder-only: the prefill)."""
    tokens: tuple[int, ...]
    prompt: tuple[int, ...]
    """Source (prompt) tokens of each row."""

    @property
    def row_mean(self) -> float:
        return sum(self.row_s) / max(len(self.row_s), 1)

    @property
    def step_s(self) -> float:
        """One single-token call on a warm cache (the decode phase's median per token)."""
        steps = [(r - f) / (t - 1) for r, f, t in zip(self.row_s, self.first_s, self.tokens, strict=True) if t > 1]
        return median(steps) if steps else self.row_mean / max(median(self.tokens) if self.tokens else 1, 1)

    def call_s(self, width: float) -> float:
        """A call of ``width`` tokens: between a step and the prefill, linearly in the tokens it feeds."""
        prompt, first = median(self.prompt) if self.prompt else 1, median(self.first_s) if self.first_s else 0.0
        per_token = max(first - self.step_s, 0.0) / max(prompt - 1, 1)
        return self.step_s + max(width - 1, 0) * per_token


@dataclass(frozen=True)
class CaseTimes:
    """One wall-clock case's warm-up pass: which sessions it decodes with and each row's seconds."""

    unit: str
    row_s: tuple[float, ...]
    tokens: tuple[int, ...]


@dataclass(frozen=True)
class Warm:
    """What the warm-up measured, and how long everything before the plan took.

    The warm-up decodes a seeded sample of the golden rows (:data:`measure.suites.plan.WARM_ROWS`), as pyperf
    and asv calibrate on a few runs: each case's row times there stand for every row's, so a pass over ``n``
    rows is estimated as ``n`` times the sample's mean row."""

    tiers: Mapping[str, TierTimes]
    cases: Mapping[str, CaseTimes]
    unit_load_s: Mapping[str, float]
    """Seconds to load each unit's sessions (a tier, or a pair's two)."""
    elapsed_s: float
    rows: tuple[int, ...] = ()
    """The golden rows (0-based) the warm-up decoded; empty where it decoded every row."""


@dataclass(frozen=True)
class Asks:
    """What the config asks for, in the terms the planner cuts."""

    rows: int
    repeats: int
    seed: int
    tolerance: float
    steps: tuple[str, ...]
    """The steps this run takes, in order: wallclock, call_costs, layouts, profile, threads, framing, fidelity."""
    pairs: tuple[tuple[str, str], ...] = ()
    ks: tuple[int, ...] = (2, 4, 8)
    framing_blocks: tuple[int, ...] = (2, 4, 8)
    whole: bool = True
    probe_k: int = 4
    legs: tuple[LegCost, ...] = ()
    """Other runtimes the framing suite runs, as each leg states its cost (:mod:`measure.suites.legs`)."""
    leg_repeats: int = 2
    profile_workers: int = 3
    profile_rows: int = 8
    warm_loads: int = 2
    threads: tuple[int, ...] = ()
    call_cost_rows: int = 16
    layouts: int = 0
    judged: tuple[tuple[str, str], ...] = ()
    """The fidelity pass's tiers and the reference each is judged against (empty: no fidelity pass)."""
    leg_rates: Mapping[tuple[str, str], LegRate] = field(default_factory=dict)
    """What the warm-up measured of a replaying leg on a tier, by (leg key, tier name); a pair not here takes
    the leg's stated :class:`~measure.suites.legs.cost.LegCost` (its ``factor`` and ``start_s``)."""
    fidelity_row_s: Mapping[str, float] = field(default_factory=dict)
    """Seconds one golden row of the fidelity pass was seen to take per tier (a reference: its greedy path and
    both streams; a judged tier: its scoring), where a caller measured them (``measure explore``'s screening is
    that very pass on the first rows): the estimate takes the larger of this and its own model, which counts
    the calls but not the scoring around them (a softmax and a KLD over the whole vocabulary at every token)."""


@dataclass(frozen=True)
class Shape:
    """One candidate plan: how much of each step."""

    wallclock_rows: int
    repeats: int
    framing_rows: int
    prefill_rows: int
    profile_workers: int
    profile_rows: int
    warm_loads: int
    call_cost_rows: int
    call_cost_repeats: int
    fidelity_rows: int = 0
    """Golden rows the fidelity pass scores: every row until the last cut (``plan.FIDELITY_ROWS``)."""


def _pass(case: CaseTimes, rows: int) -> float:
    """One timed pass over ``rows`` rows and the untimed first row a new session decodes."""
    mean = sum(case.row_s) / max(len(case.row_s), 1)
    return mean * rows + (case.row_s[0] if case.row_s else 0.0)


def wallclock_s(warm: Warm, rows: int, repeats: int) -> float:
    """Every unit loaded afresh each repeat, each of its cases decoding one untimed row and one timed pass."""
    per = sum(warm.unit_load_s.values()) + sum(_pass(c, rows) for c in warm.cases.values())
    return per * repeats


def case_round_s(warm: Warm, case: str, rows: int) -> float:
    """One more repeat of one case in the top-up: its unit's load, its untimed row and its pass."""
    c = warm.cases[case]
    return warm.unit_load_s.get(c.unit, 0.0) + _pass(c, rows)


def _framing_row(t: TierTimes, asks: Asks, prefill: bool) -> float:
    """One row of one tier on the Python leg: the greedy decode, the single-step replay, each block and whole;
    decoder-only rows with ``prefill`` also feed the prompt token by token, in blocks and whole."""
    tokens = median(t.tokens) if t.tokens else 1
    first = median(t.first_s) if t.first_s else 0.0
    cost = 2 * t.row_mean
    blocks = [*asks.framing_blocks, *([max(tokens, 1)] if asks.whole else [])]
    cost += sum(first + math.ceil(tokens / b) * t.call_s(b) for b in blocks)
    if prefill and t.kind == "causal":
        prompt = median(t.prompt) if t.prompt else 1
        cost += prompt * t.step_s + sum(math.ceil(prompt / b) * t.call_s(b) for b in asks.framing_blocks)
        cost += first if asks.whole else 0.0
    return cost


def _legs_s(name: str, t: TierTimes, asks: Asks, rows: int, prefill_rows: int) -> float:
    """The other runtimes on one tier, each as its :class:`~measure.suites.legs.contract.LegCost` states: a leg
    with a loop of its own (onnxruntime-genai) decodes each row beside measure's, its paired passes and warm rows;
    a replaying leg frames each row as the Python leg does (its greedy decode standing for the single-step replay)
    and times its passes, ``factor`` times slower, started once per tier: the factor and the start the warm-up
    measured on this tier's precision (``asks.leg_rates``) where it did, else the leg's stated ones."""
    cost = 0.0
    for leg in asks.legs:
        if t.kind not in leg.kinds:
            continue
        if leg.style == "loop":
            repeats = max(asks.leg_repeats, leg.repeats_min)
            cost += (2 * repeats + 2) * t.row_mean * rows + 2 * min(GENAI_WARM_ROWS, rows) * t.row_mean + t.load_s
            continue
        rate = asks.leg_rates.get((leg.key, name))
        if rate is not None and rate.skipped:
            continue
        framed = sum(_framing_row(t, asks, i < prefill_rows) for i in range(rows))
        work = framed + (asks.leg_repeats - 1) * t.row_mean * rows
        if rate is None:
            cost += leg.factor * (work + t.load_s) + leg.start_s
        else:  # its measured start includes the tier's load there
            cost += rate.factor * work + rate.start_s
    return cost


def fidelity_s(warm: Warm, asks: Asks, rows: int) -> float:
    """Each reference's greedy path and both streams teacher-forced by it, once; then per judged tier both streams
    teacher-forced by the tier (a prefill and one call of the output's tokens each); each pair's verifier path
    scored the same way."""
    cost = 0.0
    groups: dict[str, list[str]] = {}
    for tier, reference in asks.judged:
        groups.setdefault(reference, []).append(tier)
    for reference, judged in groups.items():
        r = warm.tiers.get(reference) or warm.tiers.get(judged[0])
        if r is None:
            continue
        seen = asks.fidelity_row_s
        cost += r.load_s + rows * max(r.row_mean + 2 * _forced(r), seen.get(reference, 0.0))
        for name in judged:
            t = warm.tiers.get(name, r)
            cost += t.load_s + rows * max(2 * _forced(t), seen.get(name, 0.0))
    for drafter, verifier in asks.pairs:
        d, v = warm.tiers.get(drafter), warm.tiers.get(verifier)
        if d is not None and v is not None:
            cost += d.load_s + v.load_s + rows * (v.row_mean + _forced(v) + _forced(d))
    return cost


def _forced(t: TierTimes) -> float:
    """One teacher-forced row: the prompt's prefill and the output's tokens in one call."""
    tokens = median(t.tokens) if t.tokens else 1
    return (median(t.first_s) if t.first_s else 0.0) + t.call_s(tokens + 1)


def framing_s(warm: Warm, asks: Asks, rows: int, prefill_rows: int) -> float:
    """The Python leg and the other legs per tier, then acceptance for every pair and self-pair."""
    cost = 0.0
    for name, t in warm.tiers.items():
        cost += t.load_s + sum(_framing_row(t, asks, i < prefill_rows) for i in range(rows))
        cost += _legs_s(name, t, asks, rows, prefill_rows)
    used = dict.fromkeys(n for pair in asks.pairs for n in pair)
    pairs = [*asks.pairs, *((n, n) for n in used)]
    for drafter, verifier in pairs:
        d, v = warm.tiers.get(drafter), warm.tiers.get(verifier)
        if d is None or v is None:
            continue
        case = warm.cases.get(f"{drafter}->{verifier}@k{asks.probe_k}")
        runtime = sum(case.row_s) / len(case.row_s) if case and case.row_s else v.row_mean + d.row_mean
        cost += d.load_s + v.load_s + rows * (v.row_mean + d.row_mean + runtime + v.row_mean)
        if drafter != verifier and any(leg.pairs and v.kind in leg.kinds for leg in asks.legs):
            cost += rows * (2 * runtime + 2 * v.row_mean) + d.load_s + v.load_s
    return cost


def profile_s(warm: Warm, workers: int, rows: int, warm_loads: int) -> float:
    """Worker processes one at a time: a baseline one, then one per tier (cold load, ``rows`` rows, warm loads)."""
    per_worker = PROCESS_S
    for t in warm.tiers.values():
        per_worker += PROCESS_S + t.load_s * (1 + warm_loads) + t.row_mean * rows
    return workers * per_worker


def threads_s(warm: Warm, asks: Asks, rows: int) -> float:
    per = sum(t.load_s + t.row_mean * (rows + 1) for t in warm.tiers.values() if t.row_s)
    return per * len(asks.threads) * asks.repeats


def call_costs_s(warm: Warm, asks: Asks, rows: int, repeats: int) -> float:
    """Each pair's verifier at widths 1 .. max(k) + 1 and drafter at 1, on the first rows' mid-decode caches."""
    widths: dict[str, list[int]] = {}
    for drafter, verifier in asks.pairs:
        widths.setdefault(drafter, [1])
        widths[verifier] = list(range(1, max(asks.ks, default=1) + 2))
    cost = 0.0
    for name, ns in widths.items():
        t = warm.tiers.get(name)
        if t is None:
            continue
        calls = sum(t.call_s(n) for n in ns)
        cost += rows * t.row_mean + repeats * (t.load_s + rows * (t.row_mean / 2 + calls)) + 2 * calls
    return cost


def layouts_s(warm: Warm, asks: Asks, rows: int) -> float:
    """Layout comparisons run tiers the warm-up never loaded: two passes of an average tier per repeat."""
    if not warm.tiers:
        return 0.0
    mean = sum(t.row_mean for t in warm.tiers.values()) / len(warm.tiers)
    return asks.layouts * 2 * (asks.repeats + 1) * mean * rows


def estimate(warm: Warm, asks: Asks, shape: Shape) -> dict[str, float]:
    """Seconds per step at ``shape``, in the order the run takes them (only the steps ``asks`` runs)."""
    s = shape
    found = {
        "wallclock": wallclock_s(warm, s.wallclock_rows, s.repeats),
        "call_costs": SAFETY * call_costs_s(warm, asks, s.call_cost_rows, s.call_cost_repeats),
        "layouts": SAFETY * layouts_s(warm, asks, s.wallclock_rows),
        "profile": SAFETY * profile_s(warm, s.profile_workers, s.profile_rows, s.warm_loads),
        "threads": SAFETY * threads_s(warm, asks, s.profile_rows),
        "framing": SAFETY * framing_s(warm, asks, s.framing_rows, s.prefill_rows),
        "fidelity": SAFETY * fidelity_s(warm, asks, s.fidelity_rows),
    }
    return {step: found[step] for step in asks.steps if step in found}
