"""Verdicts: pure functions of a record's facts plus a stated policy.

Changing a policy never needs a re-run: ``verdicts(doc, policy)`` with a new
policy re-judges an old record. Each verdict states its rule, the measured
value and its interval; "inconclusive" is a real outcome. A verdict marked
``gate`` fails ``measure check`` (a failure there means a bug, e.g. fp32
speculative output differing from fp32 greedy).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from measure.analysis import PairTiming, TierTiming, pair_timings, tier_timings
from measure.cost import profile_ratios
from measure.model import FP32, Record
from measure.policy import Policy
from measure.stats import Estimate

OUTCOMES = ("success", "failure", "warning", "inconclusive", "info")


@dataclass(frozen=True)
class Verdict:
    topic: str
    """Stable slug of the question, e.g. ``decode-linear``; anchors are ``<topic>-<date>``."""
    question: str
    subject: str
    outcome: str
    answer: str
    """Short answer: yes / no / inconclusive / a number."""
    rule: str
    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    gate: bool = False
    """A failure here fails ``measure check``."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """A cached verdict; a missing or unknown key raises (the cache entry is then rebuilt)."""
        names = [f.name for f in fields(cls)]
        if sorted(d) != sorted(names):
            raise KeyError("verdict fields")
        return cls(**d)


def _est(e: Estimate) -> dict[str, float]:
    return {"value": e.value, "lo": e.lo, "hi": e.hi}


def _against(e: Estimate, threshold: float, want_above: bool) -> tuple[str, str]:
    """An interval against a threshold: wholly on the wanted side, wholly on the other, or straddling it."""
    good, bad = (e.lo > threshold, e.hi < threshold) if want_above else (e.hi <= threshold, e.lo > threshold)
    if good:
        return "success", "yes"
    if bad:
        return "failure", "no"
    return "inconclusive", "inconclusive"


def wallclock_verdicts(
    record: Record,
    policy: Policy,
    tiers: list[TierTiming] | tuple[TierTiming, ...] | None = None,
    pairs: list[PairTiming] | tuple[PairTiming, ...] | None = None,
) -> list[Verdict]:
    """``tiers``/``pairs``: the record's analysis when the caller has it already (it is the costly part)."""
    out = []
    for t in tier_timings(record, intervals=False) if tiers is None else tiers:
        if t.exponent is not None:
            e = t.exponent
            outcome, answer = _against(e, policy.exponent_max, want_above=False)
            out.append(
                Verdict(
                    "decode-linear",
                    "Is decoding O(T)?",
                    t.tier,
                    outcome,
                    answer,
                    f"fitted exponent's 95% interval at most {policy.exponent_max}",
                    **_est(e),
                    gate=outcome == "failure",
                )
            )
        outcome = "success" if t.overhead <= policy.overhead_max else "warning"
        out.append(
            Verdict(
                "harness-overhead",
                "Is the harness overhead small?",
                t.tier,
                outcome,
                "yes" if outcome == "success" else "no",
                f"wall time outside session.run at most {policy.overhead_max:.0%}",
                value=t.overhead,
            )
        )
    best: dict[str, PairTiming] = {}
    for p in pair_timings(record, intervals=False) if pairs is None else pairs:
        if p.pair not in best or p.observed_speedup.value > best[p.pair].observed_speedup.value:
            best[p.pair] = p
    for p in best.values():
        s = p.observed_speedup
        outcome, answer = _against(s, policy.speedup_min, want_above=True)
        out.append(
            Verdict(
                "speculative-speedup",
                "Is speculative decoding faster than plain greedy on this machine?",
                f"{p.pair} (best k={p.k})",
                outcome,
                answer,
                f"speedup over the verifier's greedy decode, 95% interval above {policy.speedup_min}",
                **_est(s),
            )
        )
    return out


def profile_verdicts(record: Record, policy: Policy) -> list[Verdict]:
    """Is each lite tier smaller on disk, lighter in memory and faster to load than the plain tier?

    Informative, never gates: a lite tier that is not lighter is a finding about the artifact, not a bug.
    Size is exact (bytes on disk); memory and load time carry their bootstrap intervals.
    """
    out = []
    limit = policy.lite_ratio_max
    for r in profile_ratios(record):
        if r.role != "lite":
            continue
        if r.size is not None:
            ok = r.size < limit
            out.append(
                Verdict(
                    "lite-smaller",
                    "Is the lite tier smaller on disk than plain?",
                    r.tier,
                    "success" if ok else "failure",
                    f"{'yes' if ok else 'no'}: {r.size:.2f}x plain",
                    f"bytes on disk / the plain tier's, below {limit:g}",
                    value=r.size,
                )
            )
        for topic, question, est, what in (
            ("lite-lighter", "Does the lite tier need less memory than plain?", r.memory, "peak memory increase"),
            ("lite-faster-load", "Does the lite tier load faster than plain?", r.load, "cold load time"),
        ):
            if est is None:
                continue
            outcome, answer = _against(est, limit, want_above=False)
            out.append(
                Verdict(
                    topic,
                    question,
                    r.tier,
                    outcome,
                    f"{answer}: {est.value:.2f}x plain",
                    f"{what} / the plain tier's (one-tier worker processes), 95% interval below {limit:g}",
                    **_est(est),
                )
            )
    return out


def framing_verdicts(record: Record, policy: Policy) -> list[Verdict]:
    out = []
    for t in record.python_tiers:
        agree, total, worst = t.argmax_agree, t.argmax_total, t.present_max_abs_diff
        if agree < total:
            outcome, answer = "failure", f"yes: {agree}/{total} argmax agree"
        elif worst > policy.framing_tolerance:
            outcome, answer = "warning", f"values move (max {worst:.2g}), decisions do not: {agree}/{total}"
        else:
            outcome, answer = "success", f"no: {agree}/{total}"
        out.append(
            Verdict(
                "framing-parity",
                "Does framing change decodes of this artifact?",
                t.tier,
                outcome,
                answer,
                f"single-step == batched argmax everywhere and presents within {policy.framing_tolerance:g}",
                value=worst,
                gate=t.fp32 and outcome != "success",
            )
        )
    out.extend(runtime_verdicts(record, policy))
    for a in record.framing.acceptance if record.framing else ():
        fp32 = record.precision(a.verifier) in FP32
        ok = a.preserved == a.rows
        out.append(
            Verdict(
                "output-preservation",
                "Is speculative output identical to plain greedy?",
                a.name,
                "success" if ok else "failure",
                f"{a.preserved}/{a.rows} rows identical",
                "every row of the speculative decode equals the verifier's greedy decode",
                value=a.preserved / a.rows if a.rows else None,
                gate=fp32 and not ok,
            )
        )
        runtime, probe = a.runtime.ratio, a.probe.ratio
        if a.self_pair:
            full = runtime == 1.0
            out.append(
                Verdict(
                    "self-acceptance",
                    "Does the artifact accept its own drafts under batched framing?",
                    a.name,
                    "success" if full else "warning",
                    f"{a.runtime.accepted}/{a.runtime.proposed}",
                    "drafter == verifier: anything below 1.0 is framing, not model disagreement",
                    value=runtime,
                    gate=fp32 and not full,
                )
            )
        else:
            out.append(
                Verdict(
                    "acceptance",
                    "Does the probe's acceptance hold at runtime?",
                    a.name,
                    "info",
                    f"probe {probe:.4f}, runtime {runtime:.4f}"
                    if probe is not None and runtime is not None
                    else "nothing proposed",
                    "probe: verifier checks drafts single-step; runtime: one batched call",
                    value=runtime,
                )
            )
    return out


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
            out.append(
                Verdict(
                    "runtime-parity",
                    "Does another runtime decode these artifacts like Python onnxruntime?",
                    leg.runtime,
                    "info",
                    f"{leg.status}: {leg.reason}",
                    "the leg runs where its runtime is installed; a missing runtime is recorded, not assumed",
                )
            )
            continue
        for t in leg.tiers:
            subject = f"{t.tier} under {leg.runtime}"
            if not t.measured:
                out.append(
                    Verdict(
                        "runtime-parity",
                        "Does another runtime decode these artifacts like Python onnxruntime?",
                        subject,
                        "info",
                        f"{t.status}: {t.reason}",
                        "a tier the runtime cannot load or read is recorded with the reason",
                    )
                )
                continue
            if t.rows_same < t.rows:
                outcome, answer = "failure", f"yes: {t.rows_same}/{t.rows} rows keep every argmax"
            elif t.present_max_abs_diff > policy.framing_tolerance:
                outcome = "warning"
                answer = f"values move (max {t.present_max_abs_diff:.2g}), decisions do not"
            else:
                outcome, answer = "success", f"no: {t.rows_same}/{t.rows} rows"
            out.append(
                Verdict(
                    "runtime-framing-parity",
                    "Does framing change decodes under another runtime?",
                    subject,
                    outcome,
                    answer,
                    f"single-step == batched argmax on every row and presents within {policy.framing_tolerance:g}",
                    value=t.present_max_abs_diff,
                )
            )
            ref = python.get(t.tier)
            if ref is None or ref.output_ids is None or t.output_ids is None:
                continue
            same = sum(x == y for x, y in zip(ref.output_ids, t.output_ids, strict=False))
            rows = len(ref.output_ids)
            out.append(
                Verdict(
                    "runtime-parity",
                    "Does another runtime decode these artifacts like Python onnxruntime?",
                    subject,
                    "success" if same == rows else "failure" if t.fp32 else "warning",
                    f"{same}/{rows} greedy decodes identical",
                    "the runtime's own greedy decode of every golden row equals Python onnxruntime's, token by token",
                    value=same / rows if rows else None,
                )
            )
    return out


def verdicts(
    record: Record,
    policy: Policy | None = None,
    tiers: list[TierTiming] | tuple[TierTiming, ...] | None = None,
    pairs: list[PairTiming] | tuple[PairTiming, ...] | None = None,
) -> list[Verdict]:
    """Every verdict for one record, under ``policy`` (default: the policy the record states)."""
    policy = policy or record.config.policy
    return (
        wallclock_verdicts(record, policy, tiers, pairs)
        + profile_verdicts(record, policy)
        + framing_verdicts(record, policy)
    )


def failed_gates(found: list[Verdict]) -> list[Verdict]:
    return [v for v in found if v.gate]
