"""The Overview's opening sentences, from the headline figures :mod:`measure.analysis.headline` computes (the
Overview's summary table and summary.csv read the same figures)."""

from __future__ import annotations

from measure.analysis.headline import Headline, PairLine, TierLine
from measure.analysis.record_analysis import Analysis
from measure.analysis.stats import Estimate
from measure.site.context import Md, link, megabytes
from measure.site.escape import md, trusted
from measure.site.evidence import row_id


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
    if t.fidelity is not None:
        f, g = t.fidelity, t.fidelity.greedy
        parts.append(
            f"; against the full-precision {md(f.reference)} its mean KL divergence is {g.kld_mean.value:.2g} "
            f"[{g.kld_mean.lo:.2g}, {g.kld_mean.hi:.2g}] nats per token and it picks the same next token "
            f"{g.same_top1.value:.1%} of the time ({link('fidelity', 'framing.md#' + row_id('fidelity', t.tier))})"
        )
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
