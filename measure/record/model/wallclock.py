"""The wall-clock section: cases and their raw samples (repeats x rows), the cost profile, call costs and layouts.

Each class reads itself (``from_dict``) beside the sums every reader takes of it; the builders the suites fill
in place (a run saves after every pass, so they are plain dicts at this edge) follow, in the record's key order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from measure.record.model.call_costs import CallTimings, LayoutPair
from measure.record.model.convert import array, ints, present
from measure.record.model.cost_profile import Profile
from measure.record.model.section import FILED

Part = dict[str, Any]

GREEDY = "greedy"
SPECULATIVE = "speculative"
"""A wall-clock case's ``kind``."""


@dataclass(frozen=True)
class Case:
    """One wall-clock case: a greedy tier, or a speculative pair at one k. Samples are repeats x rows."""

    name: str = field(metadata=FILED)
    kind: str
    """greedy or speculative."""
    tokens: tuple[int, ...]
    """Output tokens per golden row (one pass)."""
    calls: tuple[int, ...]
    outputs_stable: bool
    wall_s: np.ndarray
    run_s: np.ndarray
    tier: str | None = None
    """The greedy case's tier."""
    pair: str | None = None
    drafter: str | None = None
    verifier: str | None = None
    k: int | None = None
    proposed: tuple[int, ...] = ()
    accepted: tuple[int, ...] = ()
    rounds: tuple[int, ...] = ()
    bonus: tuple[int, ...] = ()
    drafter_calls: tuple[int, ...] = ()
    verifier_calls: tuple[int, ...] = ()
    proposed_by_position: tuple[int, ...] = ()
    accepted_by_position: tuple[int, ...] = ()
    drafter_run_s: np.ndarray | None = None
    verifier_run_s: np.ndarray | None = None
    first_token_s: np.ndarray | None = None
    """Greedy cases from the cost profile on: source in -> first output token, repeats x rows (from the
    source ids where ``Wallclock.timed`` is ``ids``, else from its text)."""
    cpu_s: np.ndarray | None = None
    """Process CPU seconds of each row's decode (repeats x rows); None in records older than the field."""
    tokenize_s: np.ndarray | None = None
    """Seconds tokenizing each row outside the timed region (source encode + output decode), repeats x rows;
    None where ``Wallclock.timed`` is ``text`` (tokenizing was inside ``wall_s``)."""
    source_tokens: tuple[int, ...] = ()
    """The ids each row's timed region took (a decoder-only tier's prompt); empty in records older than the field."""

    @property
    def tokenize_us_per_row(self) -> float | None:
        """Median over repeats and rows of one row's tokenizing, in microseconds; None without samples."""
        if self.tokenize_s is None or not self.tokenize_s.size:
            return None
        return 1e6 * float(np.median(self.tokenize_s))

    @property
    def measured(self) -> bool:
        return self.wall_s.size > 0

    @property
    def repeats(self) -> int:
        return int(self.wall_s.shape[0])

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)

    @cached_property
    def per_repeat_totals(self) -> np.ndarray:
        """Total wall seconds over the golden rows, one value per repeat."""
        return self.wall_s.sum(axis=1)

    @cached_property
    def per_repeat_ms_per_token(self) -> np.ndarray:
        return 1000 * self.per_repeat_totals / max(1, self.total_tokens)

    @cached_property
    def per_repeat_cpu_ms_per_token(self) -> np.ndarray | None:
        """CPU ms per output token, one value per repeat; None when the record has no CPU samples."""
        if self.cpu_s is None or self.cpu_s.shape != self.wall_s.shape:
            return None
        return 1000 * self.cpu_s.sum(axis=1) / max(1, self.total_tokens)

    @cached_property
    def median_ms_per_token(self) -> float:
        """The point value every ratio between runs is taken of (compare, A/A calibration, History)."""
        return float(np.median(self.per_repeat_ms_per_token))

    @property
    def overhead(self) -> float:
        """Share of wall time outside session.run."""
        wall = float(self.wall_s.sum())
        return 1 - float(self.run_s.sum()) / wall if wall else 0.0

    @classmethod
    def from_dict(cls, name: str, c: Part) -> Case:
        spec = c["kind"] == SPECULATIVE
        return cls(
            name=name,
            kind=c["kind"],
            tokens=ints(c["tokens"]),
            calls=ints(c.get("calls")),
            outputs_stable=bool(c.get("outputs_stable", True)),
            wall_s=array(c["wall_s"]),
            run_s=array(c["run_s"]),
            cpu_s=array(c["cpu_s"]) if "cpu_s" in c else None,
            tokenize_s=array(c["tokenize_s"]) if "tokenize_s" in c else None,
            tier=c.get("tier"),
            pair=c.get("pair"),
            drafter=c.get("drafter"),
            verifier=c.get("verifier"),
            k=c.get("k"),
            proposed=ints(c.get("proposed")),
            accepted=ints(c.get("accepted")),
            rounds=ints(c.get("rounds")),
            bonus=ints(c.get("bonus")),
            drafter_calls=ints(c.get("drafter_calls")),
            verifier_calls=ints(c.get("verifier_calls")),
            proposed_by_position=ints(c.get("proposed_by_position")),
            accepted_by_position=ints(c.get("accepted_by_position")),
            drafter_run_s=array(c["drafter_run_s"]) if spec and "drafter_run_s" in c else None,
            verifier_run_s=array(c["verifier_run_s"]) if spec and "verifier_run_s" in c else None,
            first_token_s=array(c["first_token_s"]) if present(c.get("first_token_s")) else None,
            source_tokens=ints(c.get("source_tokens")),
        )


@dataclass(frozen=True)
class Wallclock:
    warmup: int
    repeats: int
    order: str
    """How the cases' repeats run: ``interleaved`` (one pass of every case, then the next repeat)."""
    repeats_done: int
    cases: dict[str, Case]
    fresh_sessions: bool | None = None
    profile: Profile | None = None
    """Records from before the cost profile, and runs with ``profile = false`` and no sweep, have none."""
    call_costs: CallTimings | None = None
    """Records from before the cost model, and runs with ``call_costs = false`` or no pairs, have none."""
    layouts: tuple[LayoutPair, ...] = ()
    """Runs with no ``[[layouts]]`` have none."""
    timed: str = "text"
    """The region ``wall_s`` spans: ``ids`` (ids in -> ids out, tokenizing in ``Case.tokenize_s``) or ``text``
    (source text in, tokenizing included: every record older than the field)."""
    resolution_s: float = 1e-9
    """What every sample is recorded to: 1e-6 (a microsecond) since 2026-12; a nanosecond in older records."""
    warmup_s: float = 0.0
    """The warm-up's least seconds (beside its least passes, ``warmup``); 0 in records before it."""
    warmup_passes: int | None = None
    """The untimed passes the warm-up took; None until it ends, and in records before the field."""

    def greedy(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "greedy" and c.measured]

    def speculative(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "speculative" and c.measured]

    @classmethod
    def from_dict(cls, wc: Part | None) -> Wallclock | None:
        """The ``wallclock`` part: cases, and the cost profile, call costs and layouts where the run measured them."""
        if not wc:
            return None
        passes = wc.get("warmup_passes")
        return cls(
            warmup=int(wc.get("warmup", 0)),
            repeats=int(wc.get("repeats", 0)),
            order=str(wc.get("order", "interleaved")),
            repeats_done=int(wc.get("repeats_done", 0)),
            cases={name: Case.from_dict(name, c) for name, c in wc.get("cases", {}).items()},
            fresh_sessions=wc.get("fresh_sessions"),
            profile=Profile.from_dict(wc.get("profile")),
            call_costs=CallTimings.from_dict(wc.get("call_costs")),
            layouts=tuple(LayoutPair.from_dict(name, x) for name, x in (wc.get("layouts") or {}).items()),
            timed=str(wc.get("timed", "text")),
            resolution_s=float(wc.get("resolution_s", 1e-9)),
            warmup_s=float(wc.get("warmup_s", 0.0)),
            warmup_passes=None if passes is None else int(passes),
        )


# ------------------------------------------------------------------ the parts a run fills in place


def wallclock_header(
    warmup: int, warmup_s: float, repeats: int, timed: str, fresh_sessions: bool, resolution_s: float
) -> Part:
    """The wall-clock section as it starts: how it is measured, no case yet."""
    return {
        "warmup": warmup,
        "warmup_s": warmup_s,
        "repeats": repeats,
        "order": "interleaved",
        "timed": timed,
        "fresh_sessions": fresh_sessions,
        "resolution_s": resolution_s,
        "repeats_done": 0,
        "cases": {},
    }


def warmed_up(part: Part, passes: int) -> None:
    """The untimed passes the warm-up took (at least ``warmup``, and ``warmup_s`` seconds)."""
    part["warmup_passes"] = passes


def repeat_done(part: Part, repeats: int) -> None:
    """Every case has this many timed repeats: saved so, an interrupted run says how far it got."""
    part["repeats_done"] = repeats


def greedy_facts(tier: str) -> Part:
    """What a greedy case measures (the case's key is the tier's name)."""
    return {"kind": GREEDY, "tier": tier}


def speculative_facts(pair: str, drafter: str, verifier: str, k: int) -> Part:
    """What a speculative case measures (keyed ``<pair>@k<k>``)."""
    return {"kind": SPECULATIVE, "pair": pair, "drafter": drafter, "verifier": verifier, "k": k}


@dataclass(frozen=True)
class SpeculativeCounts:
    """A speculative case's per-row counts of one pass, and its acceptance by draft position (k each)."""

    proposed: list[int]
    accepted: list[int]
    rounds: list[int]
    bonus: list[int]
    drafter_calls: list[int]
    verifier_calls: list[int]
    proposed_by_position: list[int]
    accepted_by_position: list[int]

    def to_dict(self) -> Part:
        return {
            "proposed": self.proposed,
            "accepted": self.accepted,
            "rounds": self.rounds,
            "bonus": self.bonus,
            "drafter_calls": self.drafter_calls,
            "verifier_calls": self.verifier_calls,
            "proposed_by_position": self.proposed_by_position,
            "accepted_by_position": self.accepted_by_position,
        }


@dataclass(frozen=True)
class CasePass:
    """One timed pass of a case over the golden rows: one value per row of each sample.

    ``drafter_run_s`` and ``verifier_run_s`` belong to speculative cases, ``first_token_s`` to greedy ones and to
    decoder-only speculative ones (the verifier's prefill decides the first token). ``source_tokens``: the ids
    each row's timed region takes (prompt or source), so prefill time per prompt token can be read.
    """

    tokens: list[int]
    calls: list[int]
    wall_s: list[float]
    run_s: list[float]
    cpu_s: list[float]
    tokenize_s: list[float]
    drafter_run_s: list[float] | None = None
    verifier_run_s: list[float] | None = None
    first_token_s: list[float] | None = None
    source_tokens: list[int] | None = None

    @property
    def speculative(self) -> bool:
        return self.drafter_run_s is not None


def case_entry(facts: Part, first: CasePass, counts: SpeculativeCounts | None) -> Part:
    """A case's entry as its first pass makes it: what it measures, the per-row counts, empty sample lists."""
    entry = facts | {"tokens": first.tokens, "calls": first.calls}
    if first.source_tokens is not None:
        entry["source_tokens"] = first.source_tokens
    entry["outputs_stable"] = True
    if counts is not None:
        entry |= counts.to_dict()
    entry |= {"wall_s": [], "run_s": [], "cpu_s": [], "tokenize_s": []}
    if first.speculative:
        entry |= {"drafter_run_s": [], "verifier_run_s": []}
    if first.first_token_s is not None:
        entry["first_token_s"] = []
    return entry


def append_pass(entry: Part, p: CasePass) -> None:
    """Add one pass's samples to a case's entry; a pass whose token counts differ marks its outputs unstable."""
    if p.tokens != entry["tokens"]:
        entry["outputs_stable"] = False
    for key in ("wall_s", "run_s", "cpu_s", "tokenize_s"):
        entry[key].append(getattr(p, key))
    optional = ("drafter_run_s", "verifier_run_s") if p.speculative else ()
    for key in (*optional, "first_token_s"):
        if key in entry and getattr(p, key) is not None:
            entry[key].append(getattr(p, key))
