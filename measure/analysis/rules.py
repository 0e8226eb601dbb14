"""Verdicts: pure functions of a record's facts plus a stated policy.

Changing a policy never needs a re-run: ``verdicts(record, policy)`` with a new
policy re-judges an old record. Every question is phrased so that "yes" is
the good outcome and the badge agrees with the words; each verdict states its
rule, the measured value with its unit and interval (``measured``), and the
record entity it rests on (``key``: a tier, a wall-clock case, a pair or a
runtime) so a page can link it to its evidence. "inconclusive" is a real
outcome. A verdict marked ``gate`` fails ``measure check`` (a failure there
means a bug, e.g. fp32 speculative output differing from fp32 greedy).
What a verdict holds is :class:`~measure.analysis.verdict.Verdict`; this module holds the rules (the framing
section's in :mod:`measure.analysis.framing_rules`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from measure.analysis.fidelity import TierFidelityFigures, fidelity_verdicts
from measure.analysis.framing_rules import framing_verdicts
from measure.analysis.plan_notes import with_plan_notes
from measure.analysis.profile import ProfileRatios, profile_ratios
from measure.analysis.timings import PairTiming, TierTiming, pair_timings, tier_timings
from measure.analysis.verdict import Verdict, against, ci
from measure.policy import Policy
from measure.record.model import FP32, Record


def _tier_verdicts(t: TierTiming, policy: Policy) -> list[Verdict]:
    out = []
    if t.exponent is not None:
        outcome, answer = against(t.exponent, policy.exponent_max, want_above=False)
        out.append(
            Verdict(
                "decode-linear",
                "Is decoding O(T)?",
                t.tier,
                t.tier,
                outcome,
                answer,
                f"exponent's 95% interval ≤ {policy.exponent_max:g}",
                f"exponent {ci(t.exponent)}" + (" (CPU time)" if t.exponent_of == "cpu" else ""),
                t.exponent.value,
                t.exponent.lo,
                t.exponent.hi,
                gate=outcome == "failure",
            )
        )
    small = t.overhead <= policy.overhead_max
    out.append(
        Verdict(
            "harness-overhead",
            "Is the harness overhead small?",
            t.tier,
            t.tier,
            "success" if small else "warning",
            "yes" if small else "no",
            f"wall time outside session.run ≤ {policy.overhead_max:.0%}",
            f"{t.overhead:.1%} of wall time",
            t.overhead,
        )
    )
    return out


def _pair_verdicts(pair: str, ks: list[PairTiming], policy: Policy) -> list[Verdict]:
    """One verdict per k (its own 95% interval) and one for the pair over every k.

    The pair's verdict uses Bonferroni intervals over its K values of k: "faster" needs some k whose
    adjusted interval lies above the bar, "not faster" needs every k's below it. Picking the best k by
    its observed value and quoting its unadjusted interval would overstate it.
    """
    bar = policy.speedup_min
    out = []
    for p in ks:
        outcome, answer = against(p.observed_speedup, bar, want_above=True)
        out.append(
            Verdict(
                "speculative-speedup-k",
                "Is speculative decoding faster than the verifier's greedy decode at this k?",
                f"{pair} at k={p.k}",
                p.case,
                outcome,
                answer,
                f"speedup's 95% interval above {bar:g}×",
                f"{ci(p.observed_speedup, unit='×')}",
                p.observed_speedup.value,
                p.observed_speedup.lo,
                p.observed_speedup.hi,
            )
        )
    faster = [p for p in ks if p.observed_speedup_family.lo > bar]
    slower = all(p.observed_speedup_family.hi < bar for p in ks)
    best = max(ks, key=lambda p: p.observed_speedup_family.lo)
    if faster:
        outcome, answer = "success", "yes, at k=" + ", ".join(str(p.k) for p in faster)
    elif slower:
        outcome, answer = "failure", "no: slower at every k"
    else:
        outcome, answer = "inconclusive", "inconclusive at every k"
    level = f"{1 - 0.05 / len(ks):.1%}"
    measured = "; ".join(f"k={p.k} {ci(p.observed_speedup_family, unit='×')}" for p in ks)
    out.append(
        Verdict(
            "speculative-speedup",
            "Is speculative decoding faster than plain greedy on this machine?",
            pair,
            pair,
            outcome,
            answer,
            f"some k's {level} interval (Bonferroni over {len(ks)} k) above {bar:g}×",
            measured,
            best.observed_speedup_family.value,
            best.observed_speedup_family.lo,
            best.observed_speedup_family.hi,
        )
    )
    return out


def wallclock_verdicts(
    record: Record,
    policy: Policy,
    tiers: Sequence[TierTiming] | None = None,
    pairs: Sequence[PairTiming] | None = None,
) -> list[Verdict]:
    """``tiers``/``pairs``: the record's timings when the caller has them already (they are the costly part);
    None computes them here without the intervals verdicts do not read."""
    out = []
    for t in tier_timings(record, intervals=False) if tiers is None else tiers:
        out.extend(_tier_verdicts(t, policy))
    found = pair_timings(record, intervals=False) if pairs is None else pairs
    for pair, ks in groupby(sorted(found, key=lambda p: (p.pair, p.k)), key=lambda p: p.pair):
        out.extend(_pair_verdicts(pair, list(ks), policy))
    return out


def profile_verdicts(record: Record, policy: Policy, ratios: Sequence[ProfileRatios] | None = None) -> list[Verdict]:
    """Is each lite tier smaller on disk, lighter in memory and faster to load than the plain tier?

    Informative, never gates: a lite tier that is not lighter is a finding about the artifact, not a bug.
    Size is exact (bytes on disk); memory and load time carry their bootstrap intervals. ``ratios``: the
    record's :func:`~measure.analysis.profile.profile_ratios` when the caller has them already.
    """
    out = []
    limit = policy.lite_ratio_max
    for r in profile_ratios(record) if ratios is None else ratios:
        if r.role != "lite":
            continue
        if r.size is not None:
            ok = r.size < limit
            out.append(
                Verdict(
                    "lite-smaller",
                    "Is the lite tier smaller on disk than plain?",
                    r.tier,
                    r.tier,
                    "success" if ok else "failure",
                    "yes" if ok else "no",
                    f"bytes on disk / the plain tier's below {limit:g}×",
                    f"{r.size:.2f}× plain's bytes",
                    r.size,
                )
            )
        for topic, question, est, what in (
            ("lite-lighter", "Does the lite tier need less memory than plain?", r.memory, "peak memory increase"),
            ("lite-faster-load", "Does the lite tier load faster than plain?", r.load, "cold load time"),
        ):
            if est is None:
                continue
            outcome, answer = against(est, limit, want_above=False)
            out.append(
                Verdict(
                    topic,
                    question,
                    r.tier,
                    r.tier,
                    outcome,
                    answer,
                    f"{what} / the plain tier's (one-tier worker processes), 95% interval below {limit:g}×",
                    f"{ci(est, unit='×')} plain's",
                    est.value,
                    est.lo,
                    est.hi,
                )
            )
    return out


def verdicts(
    record: Record,
    policy: Policy | None = None,
    tiers: Sequence[TierTiming] | None = None,
    pairs: Sequence[PairTiming] | None = None,
    ratios: Sequence[ProfileRatios] | None = None,
    fidelity: tuple[TierFidelityFigures, ...] | None = None,
) -> list[Verdict]:
    """Every verdict for one record, under ``policy`` (default: the policy the record states).

    ``tiers``, ``pairs``, ``ratios``, ``fidelity``: what the caller has computed of the record already (the full
    analysis has them all), judged as given; whatever is None is computed here. The verdicts are the same either
    way.
    """
    policy = policy or record.config.policy
    found = (
        wallclock_verdicts(record, policy, tiers, pairs)
        + profile_verdicts(record, policy, ratios)
        + framing_verdicts(record, policy)
        + fidelity_verdicts(record, policy, fidelity)
    )
    return with_plan_notes(record, found)  # a budget's cut named beside the answers that rest on it


def failed_gates(found: list[Verdict]) -> list[Verdict]:
    return [v for v in found if v.gate]


GATED = {"decode-linear": False, "framing-parity": True, "output-preservation": True, "self-acceptance": True}
"""Topics whose failure fails ``measure check`` (a bug, not a trade-off): True where only an fp32 subject gates."""


def gateable(record: Record, v: Verdict) -> bool:
    """Whether this verdict is one ``measure check`` gates on, whatever its outcome (the rules above set ``gate``
    on the failing ones): decoding O(T) for every tier; framing parity, speculative output preservation and
    self-acceptance where the tier (or the pair's verifier) is fp32."""
    if v.topic not in GATED:
        return False
    if not GATED[v.topic]:
        return True
    tier = v.key.split("->")[-1]
    return record.precision(tier) in FP32
