"""Wall-clock suite: timed warm-up, fresh sessions per repeat, repeats interleaved across cases, every sample kept.

A *case* is one tier's greedy decode or one speculative pair at one k. Each
timed pass decodes every golden row; passes go A B C A B C ... so drift on a
shared machine hits every case alike. Nothing is summarised here: medians,
intervals and ratios are derived later from the raw samples.

The timed region (``wall_s``, ``run_s``, ``cpu_s``, ``first_token_s``) is the
model's decode, token ids in -> ids out (``timed: "ids"``; older records timed
from the source text). Tokenizing is timed on its own, per repeat and per row,
in ``tokenize_s``: the source's encode just before the row's decode plus the
output's decode to text just after it. Per row and in place rather than once up
front, because that is where a real decode pays it, with the caches as cold as
they are there (the tokenizer alone in a warm loop reads 3-4x faster), and so its
samples have the shape of ``wall_s`` and are read the same way.

:func:`run_wallclock_paired` is the same suite over two artifact sets at once
(``measure ab``): the two sides of a case decode each row back to back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from time import perf_counter, process_time
from typing import Any, Protocol

from measure.engine.result import Decoded
from measure.engine.speculative import Pair, SpeculativeDecoded
from measure.engine.tier import Tier
from measure.record.model.wallclock import (
    CasePass,
    SpeculativeCounts,
    append_pass,
    case_entry,
    greedy_facts,
    repeat_done,
    speculative_facts,
    wallclock_header,
    warmed_up,
)
from measure.suites import RESOLUTION_S, Loader, Progress, Save, no_progress, us
from measure.suites.config import WallclockConfig


class CaseUnits(Protocol):
    """What the timing loop needs of its units (:class:`~measure.suites.units.Units`, which builds on this
    module's cases): the case names in order, and each unit's cases with its sessions held for the step."""

    @property
    def case_names(self) -> list[str]: ...

    def each(self, fresh_row: str | None = None, only: set[str] | None = None) -> Iterator[list[CaseSpec]]: ...


TIMED = "ids"
"""What ``wall_s`` spans in records this module writes (``wallclock.timed``): token ids in -> ids out."""


@dataclass(frozen=True)
class CaseSpec:
    """A case to run: what it measures (``facts``, as the record names it) and how to decode one row."""

    name: str
    facts: dict[str, Any]
    encode: Callable[[str], list[int]]
    """Source text -> the ids ``decode`` takes (a pair's verifier tokenizes)."""
    decode: Callable[[list[int]], Decoded]
    """The timed region: ids in -> ids out."""
    k: int | None = None
    """A speculative case's draft length; None for a greedy one."""
    causal: bool = False
    """Whether the case decodes with decoder-only tiers (its speculative rows record the time to first token)."""

    def run(self, text: str) -> Decoded:
        """Untimed use (warm-up, a new session's first row): tokenize and decode."""
        return self.decode(self.encode(text))


def cases_for(
    tiers: dict[str, Tier],
    pairs: dict[str, Pair],
    ks: tuple[int, ...],
) -> list[CaseSpec]:
    """Each tier's greedy case, then each pair at each k; either model kind, through the same decode calls."""
    cases = [
        CaseSpec(
            name,
            greedy_facts(name),
            tier.source_ids,
            tier.greedy_ids,
            causal=tier.kind == "causal",
        )
        for name, tier in tiers.items()
    ]
    for pair_name, pair in pairs.items():
        causal = pair.verifier.kind == "causal"
        for k in ks:
            facts = speculative_facts(pair_name, pair.drafter.name, pair.verifier.name, k)
            decode = partial(pair.decode_ids, k=k)
            cases.append(CaseSpec(f"{pair_name}@k{k}", facts, pair.source_ids, decode, k, causal))
    return cases


def _speculative_counts(k: int, spec: list[SpeculativeDecoded]) -> SpeculativeCounts:
    """Per-row facts of a speculative pass that do not change between repeats (checked, not assumed)."""
    by_pos_proposed, by_pos_accepted = [0] * k, [0] * k
    for d in spec:
        for r in d.rounds:
            for i in range(r.proposed):
                by_pos_proposed[i] += 1
                by_pos_accepted[i] += i < r.accepted
    return SpeculativeCounts(
        proposed=[d.proposed for d in spec],
        accepted=[d.accepted for d in spec],
        rounds=[len(d.rounds) for d in spec],
        bonus=[sum(r.bonus for r in d.rounds) for d in spec],
        drafter_calls=[d.drafter_calls for d in spec],
        verifier_calls=[d.verifier_calls for d in spec],
        proposed_by_position=by_pos_proposed,
        accepted_by_position=by_pos_accepted,
    )


@dataclass(frozen=True)
class Row:
    """One timed row: the decode, its process CPU seconds, and the tokenizing around it."""

    decoded: Decoded
    cpu_s: float
    tokenize_s: float
    """Source encode (before the decode) + output decode to text (after it): both outside ``wall_s``."""
    source_tokens: int = 0
    """The ids the decode took (the prompt, for a decoder-only tier)."""


def _timed_row(case: CaseSpec, text: str) -> Row:
    start = perf_counter()
    ids = case.encode(text)
    encode_s = perf_counter() - start
    cpu_start = process_time()  # all threads: onnxruntime's intra-op pool included
    decoded = case.decode(ids)
    return Row(decoded, process_time() - cpu_start, encode_s + decoded.detokenize_s, len(ids))


def timed_pass(case: CaseSpec, texts: list[str], cases_out: dict[str, Any]) -> None:
    """Decode every row once, timed, and append the pass's samples to the case's entry (made on its first pass)."""
    _append_pass(case, [_timed_row(case, text) for text in texts], cases_out)


def _case_pass(case: CaseSpec, rows: list[Row]) -> CasePass:
    """One pass's samples, rounded to the nanosecond as the record keeps them."""
    results = [r.decoded for r in rows]
    spec = [d for d in results if isinstance(d, SpeculativeDecoded)]  # all of them, where the case is a pair
    speculative = case.k is not None
    causal = case.causal
    return CasePass(
        tokens=[len(d.tokens) for d in results],
        calls=[d.calls for d in results],
        wall_s=[us(d.wall_s) for d in results],
        run_s=[us(d.run_s) for d in results],
        cpu_s=[us(r.cpu_s) for r in rows],
        tokenize_s=[us(r.tokenize_s) for r in rows],
        drafter_run_s=[us(d.drafter_run_s) for d in spec] if speculative else None,
        verifier_run_s=[us(d.verifier_run_s) for d in spec] if speculative else None,
        # source ids in -> first token out, for the profile's first-token latency (a seq2seq pair's is not kept)
        first_token_s=None if speculative and not causal else [us(d.first_token_s or 0.0) for d in results],
        source_tokens=[r.source_tokens for r in rows],
    )


def _append_pass(case: CaseSpec, rows: list[Row], cases_out: dict[str, Any]) -> None:
    found = _case_pass(case, rows)
    if case.name not in cases_out:
        spec = [r.decoded for r in rows if isinstance(r.decoded, SpeculativeDecoded)]
        counts = None if case.k is None else _speculative_counts(case.k, spec)
        cases_out[case.name] = case_entry(case.facts, found, counts)
    append_pass(cases_out[case.name], found)


def _header(config: WallclockConfig) -> dict[str, Any]:
    """The wall-clock section as it starts: how it is measured, no case yet."""
    return wallclock_header(config.warmup, config.warmup_s, config.repeats, TIMED, config.fresh_sessions, RESOLUTION_S)


def run_wallclock(
    units: CaseUnits,
    texts: list[str],
    config: WallclockConfig,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
    *,
    repeats: int | None = None,
    warmed: int | None = None,
) -> dict[str, Any]:
    """Fill ``out`` (the record's ``wallclock`` section) in place, saving after every case pass.

    Cases are timed a unit at a time (:class:`~measure.suites.units.Units`: a tier's greedy case, or a pair's
    cases at every k), in the same order every repeat (A B C A B C ...). With ``fresh_sessions`` every repeat
    loads each unit's sessions anew, decodes one untimed row, times its cases and lets them go before the next
    unit loads: on shared machines one session can run 1.5x slower than the next for its whole life, so, as
    pyperf spreads values over processes, repeats are spread over sessions and that variance lands inside the
    interval instead of between two runs; and only one unit's sessions are alive at a time.

    ``repeats`` overrides the config's (a budget's plan); ``warmed``: the passes a planning warm-up already made,
    so none is made here.
    """
    repeats = config.repeats if repeats is None else repeats
    out.update(_header(config) | {"repeats": repeats})
    warm = config.warmup if warmed is None else 0  # progress counts the warm-up passes made here
    total, done = len(units.case_names) * (warm + repeats), len(units.case_names) * warm
    passes = warm_up(units, texts, config, progress, total) if warmed is None else warmed
    warmed_up(out, passes)
    for rep in range(repeats):
        for cases in units.each(fresh_row=texts[0] if config.fresh_sessions else None):
            for case in cases:
                timed_pass(case, texts, out["cases"])
                done += 1
                progress(f"wallclock repeat {rep + 1}/{repeats} {case.name}", done, total)
                save()
        repeat_done(out, rep + 1)
    save()
    return out


def warm_up(
    units: CaseUnits, texts: list[str], config: WallclockConfig, progress: Progress = no_progress, total: int = 0
) -> int:
    """Untimed passes over every case: at least ``warmup`` and ``warmup_s`` seconds; returns the passes made.

    A CPU that was idle runs the first second or two up to 1.7x slower (frequency ramp, a host waking), which
    passes alone do not cover.
    """
    start, passes, done = perf_counter(), 0, 0
    total = total or len(units.case_names) * config.warmup
    while passes < config.warmup or perf_counter() - start < config.warmup_s:
        for cases in units.each():
            for case in cases:
                for text in texts:
                    case.run(text)
                if passes < config.warmup:
                    done += 1
                    progress(f"wallclock warm-up {case.name}", done, total)
        passes += 1
    return passes


SIDES = ("base", "new")
"""The two sides of a paired job, in the order their records are written."""


def base_first(rep: int, index: int, row: int = 0) -> bool:
    """Whether BASE decodes ``row`` just before NEW in repeat ``rep`` for the ``index``-th case.

    Alternating by row, by case and by repeat (A B B A ... along the rows;
    flipped for the next case and the next repeat): each side goes first on
    half the rows, so a first-or-second effect or a drift within a pass cancels
    out of the difference.
    """
    return (rep + index + row) % 2 == 0


def run_wallclock_paired(
    loads: dict[str, Loader],
    texts: list[str],
    config: WallclockConfig,
    outs: dict[str, dict[str, Any]],
    saves: dict[str, Save],
    base_first_out: dict[str, dict[str, list[bool]]],
    progress: Progress = no_progress,
) -> None:
    """The suite over two artifact sets at once: BASE and NEW interleaved row by row, repeats paired.

    ``loads``, ``outs`` and ``saves`` are keyed by side (:data:`SIDES`); both sides have the same case names
    (checked by the caller). A case's pass on both sides decodes row 1 on one side then the other, then
    row 2 the other way round, and so on (:func:`base_first`): the two sides' times of a row are taken
    milliseconds apart, so what the host does (a neighbour's burst, a frequency step) lands on both, and
    the per-repeat difference cancels it. Every repeat loads fresh sessions on both sides (as
    ``run_wallclock`` with ``fresh_sessions``); each side's record holds its own passes in the usual shape.
    ``base_first_out`` (per side) receives, per case, whether BASE went first on the first row of each repeat.
    """
    sides = {side: cases_for(*loads[side](), config.k) for side in SIDES}
    names = [c.name for c in sides["base"]]
    for side in SIDES:
        outs[side].update(_header(config))
        base_first_out[side].update({name: [] for name in names})
    total = len(names) * (config.warmup + config.repeats)
    passes, done = _paired_warmup(sides, names, texts, config, progress, total)
    for side in SIDES:
        warmed_up(outs[side], passes)
    for rep in range(config.repeats):
        if config.fresh_sessions and rep:
            sides = _fresh_sides(loads, texts, config, rep)
        for i, name in enumerate(names):
            by_side, rows = _paired_pass(sides, names, texts, rep, i)
            for side in SIDES:
                _append_pass(by_side[side], rows[side], outs[side]["cases"])
                base_first_out[side][name].append(base_first(rep, i))
            done += 1
            progress(f"paired repeat {rep + 1}/{config.repeats} {name}", done, total)
            for side in SIDES:
                saves[side]()
        for side in SIDES:
            repeat_done(outs[side], rep + 1)
    for side in SIDES:
        saves[side]()


Sides = dict[str, list[CaseSpec]]
"""Each side's cases, by side (:data:`SIDES`)."""


def _paired_pass(
    sides: Sides, names: list[str], texts: list[str], rep: int, i: int
) -> tuple[dict[str, CaseSpec], dict[str, list[Row]]]:
    """The ``i``-th case's pass on both sides, row by row, the side that goes first alternating (base_first)."""
    # by name: the two configs may list their tiers in different orders
    by_side = {side: next(c for c in sides[side] if c.name == names[i]) for side in SIDES}
    rows: dict[str, list[Row]] = {side: [] for side in SIDES}
    for k, text in enumerate(texts):
        for side in SIDES if base_first(rep, i, k) else SIDES[::-1]:
            rows[side].append(_timed_row(by_side[side], text))
    return by_side, rows


def _paired_warmup(
    sides: Sides, names: list[str], texts: list[str], config: WallclockConfig, progress: Progress, total: int
) -> tuple[int, int]:
    """Untimed paired passes: at least ``warmup`` of them and ``warmup_s`` seconds; returns (passes, progress done)."""
    done, start, passes = 0, perf_counter(), 0
    while passes < config.warmup or perf_counter() - start < config.warmup_s:
        for i in range(len(names)):
            _paired_pass(sides, names, texts, passes, i)
            if passes < config.warmup:
                done += 1
                progress(f"paired warm-up {names[i]}", done, total)
        passes += 1
    return passes, done


def _fresh_sides(loads: dict[str, Loader], texts: list[str], config: WallclockConfig, rep: int) -> Sides:
    """New sessions on both sides, each run on one untimed row; which side's are made first alternates too."""
    order = SIDES if rep % 2 == 0 else SIDES[::-1]
    sides = {side: cases_for(*loads[side](), config.k) for side in order}
    for side in order:
        for case in sides[side]:
            case.run(texts[0])
    return sides
