"""The Overview's headline: what it says first, gathered from the current state's analysis, and its sentences.

Per tier its cost, speed against the reference tier, fidelity, framing, other runtimes' parity and verdicts; per
speculative pair its speedups over k, acceptance and preserved rows; and the gates that fail. The opening
sentences, the Overview's summary table and summary.csv all read this one gathering.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate, paired_ratio
from measure.analysis.timings import PairTiming
from measure.analysis.verdict import Verdict
from measure.record.model import FP32, Record
from measure.site.context import Md, link, megabytes
from measure.site.escape import md, trusted
from measure.site.evidence import row_id


@dataclass(frozen=True)
class TierLine:
    """One tier in the headline table: cost, speed against the reference, fidelity, stability, its verdicts."""

    tier: str
    role: str
    precision: str
    size_bytes: int
    ms_per_token: Estimate | None
    vs_reference: Estimate | None
    """This tier's ms/token over the reference tier's, repeats paired (below 1: faster)."""
    exact: int | None
    rows: int | None
    same_as_reference: int | None
    """Golden rows this tier decodes to the same text as the reference tier."""
    framing_changed: int | None
    framing_total: int | None
    runtimes: tuple[tuple[str, str], ...]
    """(runtime, "64/64" or a status) for every leg after Python onnxruntime."""
    verdicts: tuple[Verdict, ...]
    kind: str = "seq2seq"
    """``seq2seq`` or ``causal`` (decoder-only): a tier is measured against the reference of its own kind."""
    reference: str | None = None
    """The tier ``vs_reference`` and ``same_as_reference`` are against."""
    prompt_changed: int | None = None
    """Decoder-only tiers: prompt positions whose argmax changes between the prompt fed token by token and in
    blocks (every prefill framing summed); None without prefill facts."""
    prompt_total: int | None = None


@dataclass(frozen=True)
class PairLine:
    pair: str
    drafter: str
    verifier: str
    ks: tuple[PairTiming, ...]
    verdict: Verdict | None
    """The pair's verdict over every k."""
    acceptance: float | None
    preserved: str | None


@dataclass(frozen=True)
class Headline:
    """What the Overview says first: the RESULTS entry's facts, from the current record."""

    reference: str | None
    plain: str | None
    lite: str | None
    tiers: tuple[TierLine, ...]
    pairs: tuple[PairLine, ...]
    gates_failed: tuple[Verdict, ...]
    mixed: bool = False
    """Whether the record holds tiers of both kinds (seq2seq and decoder-only): then each tier names its kind."""


def _reference(record: Record, kind: str | None = None) -> str | None:
    """The tier a tier of ``kind`` is measured against: that kind's reference role, else its first fp32 tier
    (None: any kind). A decoder-only tier is never timed against an encoder-decoder one."""
    tiers = [(n, t) for n, t in record.tiers.items() if kind is None or t.kind == kind]
    by_role = next((n for n, t in tiers if t.role == "reference"), None)
    return by_role or next((n for n, t in tiers if t.precision in FP32), None)


def _vs(record: Record, tier: str, reference: str | None) -> Estimate | None:
    cases = record.wallclock.cases if record.wallclock else {}
    a, b = cases.get(tier), cases.get(reference or "")
    if a is None or b is None or not a.measured or not b.measured or a.repeats != b.repeats:
        return None
    return paired_ratio(a.per_repeat_ms_per_token, b.per_repeat_ms_per_token)


def _tier_line(a: Analysis, name: str) -> TierLine:
    r = a.record
    tier = r.tiers[name]
    reference = _reference(r, tier.kind)
    timing = next((t for t in a.tiers if t.tier == name), None)
    framing = next((t for t in r.python_tiers if t.tier == name), None)
    ref = next((t for t in r.python_tiers if t.tier == reference), None)
    same = None
    if framing is not None and ref is not None:
        same = sum(x == y for x, y in zip(framing.outputs, ref.outputs, strict=False))
    runtimes = []
    for leg in r.legs[1:]:
        t = leg.tier(name)
        if not leg.measured or t is None or not t.measured:
            runtimes.append((leg.name, "not measured"))
        elif framing is not None and t.output_ids is not None and framing.output_ids is not None:
            equal = sum(x == y for x, y in zip(framing.output_ids, t.output_ids, strict=False))
            runtimes.append((leg.name, f"{equal}/{len(framing.output_ids)}"))
        else:
            runtimes.append((leg.name, "-"))
    quality = framing.quality if framing else None
    prefill = framing.prefill if framing else ()
    return TierLine(
        name,
        tier.role,
        tier.precision,
        tier.total_bytes,
        timing.ms_per_token if timing else None,
        _vs(r, name, reference) if name != reference else None,
        quality.exact if quality else None,
        quality.rows if quality else None,
        same,
        framing.argmax_total - framing.argmax_agree if framing else None,
        framing.argmax_total if framing else None,
        tuple(runtimes),
        tuple(v for v in a.verdicts if v.key == name),
        tier.kind,
        reference,
        sum(b.argmax_total - b.argmax_agree for b in prefill) if prefill else None,
        sum(b.argmax_total for b in prefill) if prefill else None,
    )


def headline(a: Analysis) -> Headline:
    r = a.record
    role = {t.role: n for n, t in reversed(r.tiers.items())}
    plain = r.tiers.get(role.get("plain", ""))
    reference = _reference(r, plain.kind if plain else None)
    pairs = []
    for name in dict.fromkeys(p.pair for p in a.pairs):
        ks = tuple(sorted((p for p in a.pairs if p.pair == name), key=lambda p: p.k))
        acc = next((x for x in (r.framing.acceptance if r.framing else ()) if x.name == name), None)
        pairs.append(
            PairLine(
                name,
                ks[0].drafter,
                ks[0].verifier,
                ks,
                next((v for v in a.verdicts if v.topic == "speculative-speedup" and v.key == name), None),
                acc.runtime.ratio if acc else None,
                f"{acc.preserved}/{acc.rows}" if acc else None,
            )
        )
    return Headline(
        reference,
        role.get("plain"),
        role.get("lite"),
        tuple(_tier_line(a, n) for n in r.tiers),
        tuple(pairs),
        tuple(v for v in a.verdicts if v.gate and v.outcome not in ("success", "info")),
        len({t.kind for t in r.tiers.values()}) > 1,
    )


def _x(e: Estimate) -> str:
    return f"{e.value:.2f}× [{e.lo:.2f}, {e.hi:.2f}]"


def _tier_sentence(role: str, t: TierLine, reference: str | None) -> Md:
    parts = [f"{role} {md(t.tier)} ({md(t.precision)}, {megabytes(t.size_bytes)}) "]
    if t.ms_per_token is not None:
        parts.append(f"decodes at {t.ms_per_token.value:.3f} ms/token")
        if t.vs_reference is not None and reference:
            v = t.vs_reference
            if v.hi < 1:
                word = f"{1 - v.value:.0%} faster"
            elif v.lo > 1:
                word = f"{v.value - 1:.0%} slower"
            else:
                word = "no clear difference"
            parts.append(f", {_x(v)} the time per token of the reference {md(reference)} ({word})")
    if t.exact is not None:
        parts.append(f"; it matches the expected output on {t.exact}/{t.rows} golden rows")
        if t.same_as_reference is not None and reference and t.tier != reference:
            parts.append(f" and decodes {t.same_as_reference}/{t.rows} rows exactly as the reference does")
    if t.ms_per_token is not None:
        parts.append(f" ({link('evidence', 'wallclock.md#' + row_id('tier', t.tier))})")
    elif t.framing_total:
        parts.append(f" ({link('evidence', 'framing.md#' + row_id('framing', t.tier))})")
    parts.append(".")
    return trusted("".join(parts))


def _pair_sentence(p: PairLine) -> Md:
    ks = "; ".join(f"k={x.k} {_x(x.observed_speedup)}" for x in p.ks)
    v = p.verdict
    name = md(p.pair)
    if v is not None and v.outcome == "success":
        what = f"is faster than {md(p.verifier)}'s greedy decode {md(v.answer.removeprefix('yes, '))}"
    elif v is not None and v.outcome == "failure":
        what = "is not faster on this machine at any k: slower at every k"
    else:
        what = "is not shown faster on this machine at any k"
    shown = link("evidence", f"wallclock.md#{row_id('pair', p.pair)}")
    return trusted(f"Speculative {name} {what} ({ks}; Bonferroni over the k tried) ({shown}).")


def _framing_sentence(h: Headline) -> Md | None:
    measured = [t for t in h.tiers if t.framing_total]
    if not measured:
        return None
    changed = [t for t in measured if t.framing_changed]
    if not changed:
        total = sum(t.framing_total or 0 for t in measured)
        return trusted(
            f"Batched framing changes no decode: all {len(measured)} tiers keep every one of {total:,} argmax "
            f"decisions single-step and batched ({link('evidence', 'framing.md#framing-parity')})."
        )
    items = ", ".join(
        f"{link(t.tier, 'framing.md#' + row_id('framing', t.tier))} ({t.framing_changed} of {t.framing_total:,} "
        "argmax decisions)"
        for t in changed
    )
    rest = len(measured) - len(changed)
    return trusted(f"Framing changes decodes of {items}; the other {rest} tier(s) decode identically.")


def _decoder_only_sentence(a: Analysis, h: Headline) -> Md | None:
    """Each decoder-only tier's two phases: its prompt's prefill up to the first token, then each later token."""
    if not a.causal:
        return None
    rows = {t.tier: t.rows or a.record.golden.rows for t in h.tiers}
    lengths = {c.tier: c.prompt_tokens / max(1, rows.get(c.tier) or 1) for c in a.causal}
    once = len(set(lengths.values())) == 1
    items = []
    for i, c in enumerate(a.causal):
        prompt = "" if once else f" ({lengths[c.tier]:.1f}-token prompts)"
        first = (
            f"first token after {c.first_token_ms.value:.3f} ms on average"
            if i == 0
            else f"{c.first_token_ms.value:.3f} ms"
        )
        item = f"{md(c.tier)}{prompt} {first}"
        if c.decode_ms_per_token is not None:
            unit = " per generated token" if i == 0 else ""
            item += f", then {c.decode_ms_per_token.value:.3f} ms{unit}"
        items.append(item)
    prompts = f"{next(iter(lengths.values())):.1f}-token prompts on average" if once else "each its prompt"
    evidence = link("evidence", "wallclock.md#prompt-and-generation")
    return trusted(
        f"Decoder-only tiers ({prompts}, prefilled in one call, then one call per token): "
        f"{'; '.join(items)} ({evidence})."
    )


def _prompt_sentence(h: Headline) -> Md | None:
    """What feeding a decoder-only tier's prompt in blocks instead of token by token changes."""
    measured = [t for t in h.tiers if t.prompt_total]
    if not measured:
        return None
    changed = [t for t in measured if t.prompt_changed]
    where = link("evidence", "framing.md#prefill")
    if not changed:
        return trusted(
            f"Prefilling the prompt in blocks or whole instead of token by token changes no prompt position's argmax "
            f"of the {len(measured)} decoder-only tier(s) ({where})."
        )
    items = ", ".join(f"{md(t.tier)} ({t.prompt_changed} of {t.prompt_total:,} prompt positions)" for t in changed)
    return trusted(f"Prefilling the prompt in blocks instead of token by token moves the argmax of {items} ({where}).")


def _runtime_sentence(h: Headline) -> Md | None:
    legs = dict.fromkeys(name for t in h.tiers for name, _ in t.runtimes)
    out = []
    for leg in legs:
        cells = [(t.tier, cell) for t in h.tiers for name, cell in t.runtimes if name == leg]
        differ = [(tier, c) for tier, c in cells if "/" in c and c.split("/")[0] != c.split("/")[1]]
        missing = [tier for tier, c in cells if "/" not in c]
        if len(missing) == len(cells):
            out.append(f"{md(leg)} was not measured here")
        elif differ:
            out.append(f"{md(leg)} decodes " + ", ".join(f"{md(t)} {c}" for t, c in differ) + " rows as Python does")
        else:
            out.append(f"{md(leg)} decodes every measured tier identically to Python onnxruntime")
    if not out:
        return None
    return trusted("; ".join(out) + f" ({link('evidence', 'framing.md#runtimes')}).")


def _gates_sentence(h: Headline, a: Analysis) -> Md:
    if not h.gates_failed:
        gates = sum(v.gate or v.topic in ("decode-linear", "framing-parity") for v in a.verdicts)
        return trusted(f"`measure check` passes: no gate fails ({gates} gated checks).")
    names = ", ".join(f"{md(v.question)} {md(v.subject)}" for v in h.gates_failed)
    return trusted(f"**`measure check` fails**: {names}.")


def sentences(a: Analysis, h: Headline, sources: Md | None = None) -> tuple[Md, ...]:
    """``sources``: each part's run and date; without it, the record's own date."""
    r = a.record
    m = r.environment.machine
    when = f": {sources}" if sources is not None else f" {md(r.started_at[:10])}"
    out = [
        trusted(
            f"Measured on machine {md(r.machine_id)} ({md(m.cpu)}, {m.cores} cores) with onnxruntime "
            f"{md(r.environment.onnxruntime)}, over {r.golden.rows} golden rows{when}."
        )
    ]
    lines = {t.tier: t for t in h.tiers}
    for role, name in (("Plain", h.plain), ("Lite", h.lite)):
        if name in lines:
            out.append(_tier_sentence(role, lines[name], lines[name].reference))
    out.extend(s for s in (_decoder_only_sentence(a, h),) if s is not None)
    out.extend(_pair_sentence(p) for p in h.pairs)
    found = (_framing_sentence(h), _prompt_sentence(h), _runtime_sentence(h))
    out.extend(s for s in found if s is not None)
    out.append(_gates_sentence(h, a))
    return tuple(out)
