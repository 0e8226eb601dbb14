"""Verdicts: pure functions of a record's facts plus a stated policy.

Changing a policy never needs a re-run: ``verdicts(record, policy)`` with a new
policy re-judges an old record. Every question is phrased so that "yes" is
the good outcome and the badge agrees with the words; each verdict states its
rule, the measured value with its unit and interval (``measured``), and the
record entity it rests on (``key``: a tier, a wall-clock case, a pair or a
runtime) so a page can link it to its evidence. "inconclusive" is a real
outcome. A verdict marked ``gate`` fails ``measure check`` (a failure there
means a bug, e.g. fp32 speculative output differing from fp32 greedy).
What a verdict holds is :class:`~measure.analysis.verdict.Verdict`; this module holds the rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from measure.analysis.fidelity import TierFidelityFigures, fidelity_verdicts
from measure.analysis.plan_notes import with_plan_notes
from measure.analysis.profile import ProfileRatios, profile_ratios
from measure.analysis.timings import PairTiming, TierTiming, pair_timings, tier_timings
from measure.analysis.verdict import Verdict, against, ci
from measure.policy import Policy
from measure.record.model import FP32, Acceptance, FramingTier, Leg, Record


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
                f"exponent {ci(t.exponent)}",
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


def _framing_stable(t: FramingTier, policy: Policy, topic: str, question: str, subject: str) -> Verdict:
    """Single-step vs batched: every argmax must hold; presents moving past the tolerance is a warning."""
    agree, total, worst = t.argmax_agree, t.argmax_total, t.present_max_abs_diff
    changed = total - agree
    if changed:
        per = f" ({total // len(t.blocks):,} positions × {len(t.blocks)} framings)" if len(t.blocks) > 1 else ""
        outcome, answer = "failure", f"no: {changed} of {total:,} argmax decisions change{per}"
    elif worst > policy.framing_tolerance:
        outcome, answer = "warning", f"yes, {agree:,}/{total:,} argmax hold, but presents move by up to {worst:.2g}"
    else:
        outcome, answer = "success", f"yes: {agree:,}/{total:,} argmax hold"
    return Verdict(
        topic,
        question,
        subject,
        t.tier,
        outcome,
        answer,
        f"every argmax equal single-step and batched; presents within {policy.framing_tolerance:g}",
        f"{agree:,}/{total:,} argmax agree; presents differ by up to {worst:.2g}",
        worst,
        gate=t.fp32 and outcome != "success" and topic == "framing-parity",
    )


def _acceptance_verdicts(record: Record, a: Acceptance) -> list[Verdict]:
    fp32 = record.precision(a.verifier) in FP32
    ok = a.preserved == a.rows
    out = [
        Verdict(
            "output-preservation",
            "Is speculative output identical to plain greedy?",
            a.name,
            a.name,
            "success" if ok else "failure",
            f"{'yes' if ok else 'no'}: {a.preserved}/{a.rows} rows identical",
            "every row of the speculative decode equals the verifier's greedy decode",
            f"{a.preserved}/{a.rows} rows",
            a.preserved / a.rows if a.rows else None,
            gate=fp32 and not ok,
        )
    ]
    runtime, probe = a.runtime.ratio, a.probe.ratio
    if a.self_pair:
        full = runtime == 1.0
        out.append(
            Verdict(
                "self-acceptance",
                "Does the artifact accept its own drafts under batched framing?",
                a.name,
                a.name,
                "success" if full else "warning",
                f"{'yes' if full else 'no'}: {a.runtime.accepted}/{a.runtime.proposed} drafts accepted",
                "drafter == verifier: anything below 1.0 is framing, not model disagreement",
                f"acceptance {runtime:.4f}" if runtime is not None else "nothing proposed",
                runtime,
                gate=fp32 and not full,
            )
        )
    else:
        measured = f"probe {probe:.4f}, runtime {runtime:.4f}" if probe is not None and runtime is not None else "-"
        holds = probe is not None and runtime is not None and runtime >= probe
        out.append(
            Verdict(
                "acceptance",
                "Does the probe's acceptance hold at runtime?",
                a.name,
                a.name,
                "info",
                "yes" if holds else "no" if probe is not None else "nothing proposed",
                "probe: the verifier checks drafts single-step; runtime: in one batched call",
                measured,
                runtime,
            )
        )
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


PROMPT_QUESTION = "Is every prompt position's next-token decision unchanged when the prompt is fed in blocks?"


def _prompt_stable(t: FramingTier) -> Verdict:
    """A decoder-only tier's prompt fed token by token against blocks of k and whole: the positions whose argmax
    moves, counted as the Overview's Framing line counts them. A finding, never a gate (the output's framing is)."""
    agree = sum(b.argmax_agree for b in t.prefill)
    total = sum(b.argmax_total for b in t.prefill)
    worst = max((b.present_max_abs_diff for b in t.prefill), default=0.0)
    changed = total - agree
    per = f" ({total // len(t.prefill):,} positions × {len(t.prefill)} framings)" if len(t.prefill) > 1 else ""
    return Verdict(
        "prompt-framing-parity",
        PROMPT_QUESTION,
        t.tier,
        t.tier,
        "failure" if changed else "success",
        f"no: {changed} of {total:,} prompt decisions change{per}" if changed else f"yes: {agree:,}/{total:,} hold",
        "every prompt position's argmax equal token by token, in blocks of k and whole",
        f"{agree:,}/{total:,} argmax agree; presents differ by up to {worst:.2g}",
        worst,
    )


def framing_verdicts(record: Record, policy: Policy) -> list[Verdict]:
    out = [
        _framing_stable(
            t, policy, "framing-parity", "Are decodes of this artifact unchanged by batched framing?", t.tier
        )
        for t in record.python_tiers
    ]
    out.extend(_prompt_stable(t) for t in record.python_tiers if t.prefill)
    out.extend(runtime_verdicts(record, policy))
    for a in record.framing.acceptance if record.framing else ():
        out.extend(_acceptance_verdicts(record, a))
    return out


RUNTIME_QUESTION = "Does another runtime decode these artifacts like Python onnxruntime?"
BROWSER_QUESTION = "Are decodes unchanged in the browser?"
"""The onnxruntime-web leg's greedy parity, its own question: the tier a page would actually run."""


def _parity_question(leg: Leg) -> tuple[str, str]:
    """(topic, question) of a leg's greedy-decode parity with Python onnxruntime."""
    return ("browser-parity", BROWSER_QUESTION) if leg.browser else ("runtime-parity", RUNTIME_QUESTION)


def _first_divergence(t: FramingTier) -> str:
    """Where the first differing row parts from Python's decode, and how close the call was on both sides."""
    if not t.divergence:
        return ""
    d = t.divergence[0]
    where = f"line {d.line}" if d.line is not None else f"row {d.row + 1}"
    python = f", Python's {d.python_margin:.3g}" if d.python_margin is not None else ""
    return f"; first divergence: {where}, token {d.step + 1} (logit margin {d.margin:.3g}{python})"


def _not_measured(leg: Leg, t: FramingTier | None) -> Verdict:
    what = leg if t is None else t
    topic, question = _parity_question(leg)
    return Verdict(
        topic,
        question,
        leg.runtime if t is None else f"{t.tier} under {leg.runtime}",
        leg.runtime,
        "info",
        f"not measured: {what.status}",
        "the leg runs where its runtime is installed; a missing runtime or tier is recorded, not assumed",
        what.reason or what.status,
    )


def runtime_verdicts(record: Record, policy: Policy) -> list[Verdict]:
    """The legs after Python onnxruntime: framing parity under each, and greedy decodes against Python's.

    Informative, never gates: a runtime's kernel paths are the finding, and ``measure check`` keeps
    judging the artifacts under the runtime the suites are defined on.
    """
    legs = record.legs
    python = {t.tier: t for t in legs[0].tiers} if legs else {}
    out = []
    for leg in legs[1:]:
        if not leg.measured:
            out.append(_not_measured(leg, None))
            continue
        for t in leg.tiers:
            if not t.measured:
                out.append(_not_measured(leg, t))
                continue
            subject = f"{t.tier} under {leg.runtime}"
            question = "Are decodes unchanged by batched framing under another runtime?"
            if t.blocks:  # onnxruntime-genai replays no framing blocks: only its greedy decodes are compared
                out.append(_framing_stable(t, policy, "runtime-framing-parity", question, subject))
            ref = python.get(t.tier)
            if ref is None or ref.output_ids is None or t.output_ids is None:
                continue
            same = sum(x == y for x, y in zip(ref.output_ids, t.output_ids, strict=False))
            rows = len(ref.output_ids)
            topic, question = _parity_question(leg)
            out.append(
                Verdict(
                    topic,
                    question,
                    subject,
                    t.tier,
                    "success" if same == rows else "failure" if t.fp32 else "warning",
                    f"{'yes' if same == rows else 'no'}: {same}/{rows} greedy decodes identical",
                    "the runtime's greedy decode of every golden row equals Python onnxruntime's, token by token",
                    f"{same}/{rows} rows{_first_divergence(t) if same != rows else ''}",
                    same / rows if rows else None,
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
