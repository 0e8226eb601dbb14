"""The framing section's rules: framing parity (every tier, and fp32's a gate), the prompt fed in blocks,
speculative acceptance and output preservation, and each other runtime's leg against Python onnxruntime.

Pure functions of a record's facts plus a stated policy, as every rule in :mod:`measure.analysis.rules`, which
gathers these with the others.
"""

from __future__ import annotations

from measure.analysis.verdict import Verdict
from measure.policy import Policy
from measure.record.model import FP32, Acceptance, FramingTier, Leg, Record


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
