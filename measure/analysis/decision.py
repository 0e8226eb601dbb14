"""What the Overview decides: which tier to ship for each model, whether speculative decoding pays, what each
precision costs apart from the model's size. Pure functions of one analysis and its policy.

A **model** is what was exported (:mod:`measure.analysis.models`): the tiers a config or tier.json names as one
model, else a full-precision source and the tiers quantized from it, every export of it by every tool. Per model the
tier to **ship** is the fastest one, among all its exports, that no judgment rules out (fidelity failing the policy,
or a gated check failing); the faster tiers ruled out are named with the figure that rules them out, and every other
judgment of the shipped tier that is not a plain yes (framing, runtimes, overhead, cold load) is carried with it, so
the ship line says what it accepts. A ship line needs a timed full-precision tier of its model: without one it names
the fastest tier and what is missing, and decides nothing. A speculative pair is **viable** only when some k
is faster than the **fastest greedy tier of its kind** with 95% confidence (Bonferroni over the k tried): being
faster than its own verifier is not enough when a cheaper tier alone beats both. The **precision effect** sets the
tiers of one model against its fp32 tier (and int4 against int8), the **size effect** one model against another
at the same precision. Every ratio is ms/token, repeats paired, with its interval.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from measure.analysis.fidelity import TierFidelityFigures, unjudged_why
from measure.analysis.greedy_tiers import FULL, KIND_MODEL, Speed, pareto_fronts, speeds
from measure.analysis.headline import kind_reference
from measure.analysis.models import Model, models, source_root
from measure.analysis.profile import cold_load_ratio
from measure.analysis.record_analysis import Analysis
from measure.analysis.rules import gateable
from measure.analysis.stats import Estimate, paired_ratio
from measure.analysis.timings import common_repeats
from measure.analysis.verdict import Verdict
from measure.record.model import FP32, Record


@dataclass(frozen=True)
class Ship:
    model: str
    kind: str
    tier: Speed | None
    """None: no tier of the model was timed."""
    vs_reference: Estimate | None
    vs_plain: Estimate | None
    plain: str | None
    faster_unfaithful: tuple[tuple[Speed, str], ...]
    """Faster tiers of the model whose fidelity fails, each with its failing figures."""
    tied_with: tuple[str, ...]
    """Tiers of the model whose speed the interval cannot tell from the shipped tier's."""
    reference: str | None = None
    """The tier ``vs_reference`` is against: the model's timed full-precision tier, or for a kind's tiers unjudged
    its reference."""
    missing: str | None = None
    """Why the model has no timed reference (then nothing is shipped: ``tier`` is its fastest tier, undecided)."""
    accepted: tuple[Verdict, ...] = ()
    """Every judgment of the shipped tier other than its fidelity whose answer is not a plain yes, accepted because
    none of them gates (framing of a quantized tier, another runtime, harness overhead, profile)."""
    cold_load: Estimate | None = None
    """The shipped tier's cold load time over the reference's (one-tier worker processes), where both were profiled
    and the interval lies above 1: a cost the ship line states."""
    exports: tuple[str, ...] = ()
    """The model's full-precision exports (:attr:`Model.sources`): two where two tools exported one model."""

    @property
    def decided(self) -> bool:
        """A ship decision: a tier chosen against a timed reference of its own model, its fidelity judged."""
        return self.tier is not None and self.missing is None and not self.model.startswith(KIND_MODEL)


@dataclass(frozen=True)
class Speculative:
    pair: str
    kind: str
    verifier: str
    best_k: int
    ms_per_token: Estimate
    fastest: str
    """The fastest greedy tier of the pair's kind."""
    vs_fastest: Estimate
    """The pair's ms/token at its best k over the fastest greedy tier's, at 1 - 0.05/K (Bonferroni over k)."""
    vs_verifier: Estimate
    viable: bool | None
    """True: faster than the fastest greedy tier with 95% confidence; False: slower; None: not shown either way."""
    quantized: bool
    """Both of the pair's tiers are quantized."""
    preserved: tuple[int, int] | None = None
    """(rows whose speculative output equals the verifier's greedy, rows) at the probe k; None: not measured."""


@dataclass(frozen=True)
class Precision:
    model: str
    tier: str
    precision: str
    against: str
    against_precision: str
    ratio: Estimate
    """This tier's ms/token over ``against``'s, repeats paired."""
    fidelity: TierFidelityFigures | None
    accuracy_level: int | None
    limit: str | None = None
    """Which effect decides the tier's speed, where its bytes do not fit in the cache: the roofline's sentence
    (near its memory-bandwidth bound, or its kernels the limit); None without a bound."""
    export: str | None = None
    """Where the two tiers are different exports of the model (another tool's graphs): the tier's own source, so
    the ratio is read as precision and export together; None within one export."""


@dataclass(frozen=True)
class Size:
    kind: str
    precision: str
    smaller: str
    larger: str
    ratio: Estimate
    """The smaller model's ms/token over the larger's at one precision."""


@dataclass(frozen=True)
class Gate:
    topic: str
    question: str
    checks: int
    failing: tuple[str, ...]
    """Subjects whose check fails the gate."""


@dataclass(frozen=True)
class Decision:
    speeds: tuple[Speed, ...]
    ships: tuple[Ship, ...]
    speculative: tuple[Speculative, ...]
    precision: tuple[Precision, ...]
    sizes: tuple[Size, ...]
    gates: tuple[Gate, ...]
    fastest: dict[str, str]
    """Per kind: its fastest greedy tier."""
    unjudged: tuple[tuple[str, str], ...]
    """(tier, why) for every timed quantized tier the fidelity pass did not judge: no ship line takes it, and the
    page says how to give it a reference."""
    fronts: dict[str, tuple[str, ...]]
    """Per model (:attr:`Speed.model`): the tiers on its speed-fidelity Pareto front (no tier of the model both
    faster and closer to its reference), fastest first; tiers of two models are never compared, even of one kind
    (their references differ, so their KLDs do not compare)."""


def _paired(record: Record, num: str, den: str, level: float = 0.95) -> Estimate | None:
    """``num``'s time over ``den``'s, repeats paired: the repeats both have (a budget's top-up gives more to the
    cases whose intervals are widest, as :func:`~measure.analysis.timings.common_repeats` says)."""
    cases = record.wallclock.cases if record.wallclock else {}
    a, b = cases.get(num), cases.get(den)
    if a is None or b is None or not a.measured or not b.measured or min(a.repeats, b.repeats) < 1:
        return None
    return paired_ratio(*common_repeats(a.per_repeat_ms_per_token, b.per_repeat_ms_per_token), level=level)


def _failing(s: Speed) -> str:
    if s.blocked is not None:
        return s.blocked
    answer = s.faithful.answer if s.faithful else ""
    return answer.removeprefix("no: ").strip() or "fidelity fails the policy"


ACCEPTED = ("failure", "warning", "inconclusive")
"""The answers a shipped tier's other judgments may carry that its ship line must state (not a plain yes)."""


def _accepted(a: Analysis, tier: str) -> tuple[Verdict, ...]:
    return tuple(v for v in a.verdicts if v.key == tier and v.topic != "fidelity" and v.outcome in ACCEPTED)


def _ship(a: Analysis, model: str, group: list[Speed], info: Model | None) -> Ship:
    r = a.record
    group = sorted(group, key=lambda s: s.ms_per_token.value)
    passing = [s for s in group if not s.fails]
    ship = passing[0] if passing else None
    faster = _faster_failing(group, ship)
    exports = info.sources if info is not None else ()
    if ship is None:
        missing = info.missing if info is not None else None
        return Ship(model, group[0].kind, None, None, None, r.plain, faster, (), missing=missing, exports=exports)
    ties = tuple(
        s.tier for s in passing[1:] if (e := _paired(r, s.tier, ship.tier)) is not None and e.lo <= 1.0 <= e.hi
    )
    ref, missing = _reference(r, model, ship, info)
    plain = r.plain if r.plain not in (None, ship.tier) and r.tiers[r.plain].kind == ship.kind else None
    cold = cold_load_ratio(r, ship.tier, ref) if ref else None
    return Ship(
        model,
        ship.kind,
        ship,
        _paired(r, ship.tier, ref) if ref else None,
        _paired(r, ship.tier, plain) if plain else None,
        plain,
        faster,
        ties,
        ref,
        missing,
        _accepted(a, ship.tier),
        cold if cold is not None and cold.lo > 1 else None,
        exports,
    )


def _faster_failing(group: list[Speed], ship: Speed | None) -> tuple[tuple[Speed, str], ...]:
    """The tiers ruled out that are faster than the shipped one (all of them where none ships), with why."""
    return tuple(
        (s, _failing(s)) for s in group if s.fails and (ship is None or s.ms_per_token.value < ship.ms_per_token.value)
    )


def _reference(r: Record, model: str, ship: Speed, info: Model | None) -> tuple[str | None, str | None]:
    """The tier the shipped one is read against (None where that is the shipped tier itself), and why the model
    has no timed reference: a kind's tiers unjudged are read against the kind's reference."""
    missing = info.missing if info is not None else None
    if model.startswith(KIND_MODEL):
        ref = kind_reference(r, ship.kind)
    elif info is not None:
        ref = info.reference
    else:
        ref, missing = None, f"no timed full-precision tier of {model}"
    return (ref if ref != ship.tier else None), missing


def _speculative(a: Analysis, fastest: dict[str, Speed]) -> tuple[Speculative, ...]:
    r = a.record
    by_pair: dict[str, list] = defaultdict(list)
    for p in a.pairs:
        by_pair[p.pair].append(p)
    out = []
    for pair, ks in by_pair.items():
        kind = r.tiers[ks[0].verifier].kind
        greedy = fastest.get(kind)
        if greedy is None:
            continue
        level = 1 - 0.05 / len(ks)
        ratios = {p.k: _paired(r, p.case, greedy.tier, level) for p in ks}
        estimates = {k: e for k, e in ratios.items() if e is not None}
        measured = [p for p in ks if p.k in estimates]
        if not measured:
            continue
        best = min(measured, key=lambda p: estimates[p.k].value)
        vs = estimates[best.k]
        if any(estimates[p.k].hi < 1 for p in measured):
            viable: bool | None = True
        elif all(estimates[p.k].lo > 1 for p in measured):
            viable = False
        else:
            viable = None
        quantized = all(r.tiers[t].precision not in FP32 for t in (best.drafter, best.verifier))
        accepted = r.framing.acceptance if r.framing else ()
        found = next((x for x in accepted if x.name == pair and not x.self_pair), None)
        inverse = Estimate(1 / best.observed_speedup.value, 1 / best.observed_speedup.hi, 1 / best.observed_speedup.lo)
        out.append(
            Speculative(
                pair,
                kind,
                best.verifier,
                best.k,
                best.ms_per_token,
                greedy.tier,
                vs,
                inverse,
                viable,
                quantized,
                (found.preserved, found.rows) if found else None,
            )
        )
    return tuple(out)


def _against(model: str, s: Speed, against: Speed, ratio: Estimate) -> Precision:
    return Precision(model, s.tier, s.precision, against.tier, against.precision, ratio, s.fidelity, s.accuracy_level)


def _limit(a: Analysis, tier: str) -> str | None:
    bound = a.roofline.of(tier) if a.roofline is not None else None
    return bound.finding if bound is not None and bound.limit in ("memory", "kernels", "beyond") else None


def _precision(a: Analysis, models: dict[str, list[Speed]]) -> tuple[Precision, ...]:
    r = a.record
    out = []
    for model, group in models.items():
        if model.startswith(KIND_MODEL):  # which tiers share a source is unknown: precision cannot be isolated
            continue
        full = next((s for s in group if s.precision in FULL), None)
        int8 = next((s for s in group if s.precision.startswith("int8-dynamic")), None)
        for s in group:
            against = full if s is not full else None
            if against is None:
                continue
            if (ratio := _paired(r, s.tier, against.tier)) is not None:
                out.append(_against(model, s, against, ratio))
        if int8 is not None:  # the seed's question: do int4 kernels lose to int8 on this CPU?
            for s in group:
                if s.precision.startswith("int4") and (ratio := _paired(r, s.tier, int8.tier)) is not None:
                    out.append(_against(model, s, int8, ratio))
    root = {p.tier: source_root(r, p.tier) for p in out} | {p.against: source_root(r, p.against) for p in out}
    return tuple(
        replace(p, limit=_limit(a, p.tier), export=root[p.tier] if root[p.tier] != root[p.against] else None)
        for p in out
    )


def _sizes(a: Analysis, models: dict[str, list[Speed]]) -> tuple[Size, ...]:
    """Two models of one kind at one precision: what the smaller model saves, apart from any quantization."""
    r = a.record
    out = []
    by_key: dict[tuple[str, str, str, int | None], list[Speed]] = defaultdict(list)
    for group in models.values():
        for s in group:  # one layout and accuracy level: a builder or a kernel setting is not the model's size
            by_key[(s.kind, s.precision, r.tiers[s.tier].layout, s.accuracy_level)].append(s)
    for (kind, precision, _, _), found in by_key.items():
        if len({s.model for s in found}) < 2:
            continue
        bytes_of = {s.tier: r.tiers[s.tier].total_bytes for s in found}
        found = sorted(found, key=lambda s: bytes_of[s.tier])
        largest = found[-1]
        for s in found[:-1]:
            if s.model != largest.model and (ratio := _paired(r, s.tier, largest.tier)) is not None:
                out.append(Size(kind, precision, s.tier, largest.tier, ratio))
    return tuple(out)


def _gates(a: Analysis) -> tuple[Gate, ...]:
    """Every check ``measure check`` gates on, by question: how many there are and which fail."""
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in a.verdicts:
        if gateable(a.record, v):
            groups[v.topic].append(v)
    return tuple(
        Gate(topic, vs[0].question, len(vs), tuple(v.subject for v in vs if v.gate)) for topic, vs in groups.items()
    )


def decide(a: Analysis) -> Decision:
    """The Overview's decision block, from one record's analysis."""
    found = speeds(a)
    grouped: dict[str, list[Speed]] = defaultdict(list)
    for s in found:
        grouped[s.model].append(s)
    info = {m.name: m for m in models(a.record, {t.tier for t in a.tiers})}
    fastest: dict[str, Speed] = {}
    for s in found:
        if s.kind not in fastest or s.ms_per_token.value < fastest[s.kind].ms_per_token.value:
            fastest[s.kind] = s
    return Decision(
        found,
        tuple(_ship(a, m, g, info.get(m)) for m, g in grouped.items()),
        _speculative(a, fastest),
        _precision(a, grouped),
        _sizes(a, grouped),
        _gates(a),
        {k: s.tier for k, s in fastest.items()},
        tuple((t.tier, why) for t in a.tiers if (why := unjudged_why(a.record, t.tier))),
        pareto_fronts(found),
    )
