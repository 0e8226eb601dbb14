"""The Overview's decision block: what to ship, whether speculative decoding pays, what precision and size cost,
whether framing changes decodes, what ``measure check`` gates. Sentences from :mod:`measure.analysis.decision`,
each with its number, interval and a link to its evidence row."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from measure.analysis.decision import FULL, KIND_MODEL, Decision, Precision, Ship, Size, Speculative
from measure.analysis.headline import Headline
from measure.analysis.parity import Agreement
from measure.analysis.recipe_advice import Advice
from measure.analysis.stats import Estimate
from measure.analysis.verdict import accepted
from measure.site.context import KIND, Md, badge, link, md, trusted
from measure.site.evidence import row_id

GATE_NAMES = {
    "decode-linear": "decoding is O(T)",
    "framing-parity": "fp32 decodes unchanged by batched framing",
    "output-preservation": "speculative output equals greedy (fp32 verifiers)",
    "self-acceptance": "fp32 artifacts accept their own drafts",
}


@dataclass(frozen=True)
class DecisionBlock:
    ship: tuple[Md, ...]
    speculative: tuple[Md, ...]
    precision: tuple[Md, ...]
    framing: Md | None
    gates: Md
    runtimes: Md | None = None
    """Which runtimes decode every tier as Python onnxruntime does, and which do not (None: one runtime only)."""


def _x(e: Estimate) -> str:
    """A time ratio with its interval: 0.56× [0.53, 0.58]."""
    return f"{e.value:.2f}× [{e.lo:.2f}, {e.hi:.2f}]"


def _speed(tier: str, ms: Estimate) -> str:
    where = link(f"{ms.value:.3f} ms/token", f"wallclock.md#{row_id('tier', tier)}")
    return f"{where} [{ms.lo:.3f}, {ms.hi:.3f}]"


def _faithful(s: Ship) -> str:
    t = s.tier
    assert t is not None
    if t.fidelity is None:
        return "the full-precision reference itself" if t.precision in FULL else "fidelity not measured"
    g = t.fidelity.greedy
    figures = link(
        f"mean KLD {g.kld_mean.value:.2g}, same top-1 {g.same_top1.value:.1%}",
        f"framing.md#{row_id('fidelity', t.tier)}",
    )
    against = f" against {md(t.fidelity.reference)}" if t.fidelity.reference != s.reference else ""
    word = {"success": "faithful", "inconclusive": "fidelity not shown either way"}
    return f"{word.get(t.faithful.outcome, 'faithful') if t.faithful else 'faithful'}{against} ({figures})"


def _model(s: Ship, mixed: bool) -> str:
    """ "the base-fp32 model (encoder-decoder)"; the kind only where the record holds two; its exports where two
    tools exported it."""
    kind = f", {KIND[s.kind]}" if mixed else ""
    if s.model.startswith(KIND_MODEL):
        return f"the {KIND[s.kind]} tiers" if mixed else "the tiers"
    exports = f"{len(s.exports)} exports: {', '.join(md(e) for e in s.exports)}" if len(s.exports) > 1 else ""
    said = "; ".join(x for x in (exports, kind.removeprefix(", ")) if x)
    return f"the {md(s.model)} model" + (f" ({said})" if said else "")


def _unjudged_hint(unjudged: tuple[tuple[str, str], ...]) -> str:
    """What would judge the tiers: the pass switched on, or a reference named, as the record says."""
    if not unjudged:
        return " (`[framing] fidelity = true`)"
    if all("fidelity = false" in why for _, why in unjudged):
        return f" ({md(unjudged[0][1])})"
    names = ", ".join(md(t) for t, _ in unjudged)
    return f': {names} have no reference; give each one with `reference = "TIER"` on its `[[tiers]]` entry'


def _unjudged(d: Decision) -> Md | None:
    """Quantized tiers left unjudged beside judged ones: no ship line takes them, and this line says why."""
    if not d.unjudged or all(s.model.startswith(KIND_MODEL) for s in d.ships):
        return None
    said = "; ".join(f"{md(t)} ({md(why)})" for t, why in d.unjudged)
    hint = '`reference = "TIER"` (a full-precision tier of the run) on its `[[tiers]]` entry'
    return trusted(f"{badge('inconclusive')} **Not judged, so not shipped**: {said}. Give each a reference: {hint}.")


def _accepts(s: Ship) -> str:
    """What the shipped tier carries that is not a plain yes, each judgment as it is answered, said as accepted."""
    said: list[str] = [md(x) for x in accepted(s.accepted)]
    if s.cold_load is not None and s.reference:
        said.append(f"cold load {_x(s.cold_load)} {md(s.reference)}'s")
    if not said:
        return ""
    where = link("every verdict", "verdicts.md")
    return f"; accepted, as no gate stops on it: {'; '.join(said)} ({where})"


def _ship(s: Ship, mixed: bool, unjudged: tuple[tuple[str, str], ...] = ()) -> Md:
    model = _model(s, mixed)
    if s.tier is None:
        fails = "; ".join(f"{md(t.tier)}: {md(why)}" for t, why in s.faster_unfaithful)
        if s.missing is not None:  # nothing to decide against, and nothing passes anyway
            head = f"{badge('inconclusive')} **No ship decision for {model}**: {md(s.missing)}"
            return trusted(f"{head}; every timed tier of it fails fidelity or a gate anyway ({fails}).")
        head = f"{badge('failure')} **No tier of {model} to ship**"
        return trusted(f"{head}: every timed tier fails fidelity or a gate ({fails}).")
    t = s.tier
    if s.model.startswith(KIND_MODEL):  # no fidelity pass: the fastest tier, and why that does not decide
        head = f"{badge('inconclusive')} **Fastest of {model}: {md(t.tier)}**, {_speed(t.tier, t.ms_per_token)}"
    elif s.missing is not None:  # no timed reference of its own model: nothing to set its speed against
        head = (
            f"{badge('inconclusive')} **No ship decision for {model}**: {md(s.missing)}. "
            f"Its fastest tier: {md(t.tier)}, {_speed(t.tier, t.ms_per_token)}"
        )
    else:
        head = f"{badge('success')} **Ship {md(t.tier)}** for {model}: {_speed(t.tier, t.ms_per_token)}"
    parts = [head]
    if s.vs_reference is not None and s.reference:
        parts.append(f", {_x(s.vs_reference)} the time of {md(s.reference)}")
    if s.vs_plain is not None and s.plain:
        parts.append(f", {_x(s.vs_plain)} of plain {md(s.plain)}")
    if s.model.startswith(KIND_MODEL):
        parts.append(f"; fidelity not measured, so no tier is judged fit to ship{_unjudged_hint(unjudged)}")
    else:
        parts.append(f"; {_faithful(s)}")
    parts.append(_accepts(s))
    if s.tied_with:
        parts.append(f"; as fast within the interval: {', '.join(md(x) for x in s.tied_with)}")
    if s.faster_unfaithful:
        named = "; ".join(f"{md(t.tier)} ({md(why)})" for t, why in s.faster_unfaithful)
        why = "not faithful" if all(t.blocked is None for t, _ in s.faster_unfaithful) else "ruled out"
        parts.append(f". Faster but {why}: {named}")
    return trusted("".join(parts) + ".")


def _advice(a: Advice) -> Md:
    """What to try for a model none of whose quantized tiers is fit: the recipe an explore run found, or the
    search to run."""
    failing = ", ".join(md(t) for t in a.failing)
    command = f"<code>{md(a.command)}</code>"  # escaped text is entities, which a Markdown code span would show
    b = a.best
    if b is None:
        if a.searched is not None:
            return trusted(
                f"{badge('inconclusive')} **No recipe fit either** for the {md(a.model)} model: explore run "
                f"{md(a.searched)} found none faithful; try a wider grid: "
                f"<code>{md(a.command)} --grid GRID.toml</code>."
            )
        return trusted(
            f"{badge('inconclusive')} **What to try** for the {md(a.model)} model ({failing} not faithful): "
            f"{command} quantizes it by other recipes, drops those that fail fidelity and times the rest."
        )
    said = [f"{badge('info')} **Try recipe {md(b.recipe)}** for the {md(a.model)} model ({failing} not faithful)"]
    said.append(f": in explore run {md(b.run_id)} ({md(b.date)}) its tier {md(b.tier)} took")
    said.append(f" {b.ms_per_token.value:.3f} ms/token [{b.ms_per_token.lo:.3f}, {b.ms_per_token.hi:.3f}]")
    if b.vs_plain is not None and b.plain and b.baseline and b.plain != b.tier:
        failed = ", which the screening dropped" if b.baseline_dropped else ""
        said.append(f", {_x(b.vs_plain)} the time of baseline recipe {md(b.baseline)} ({md(b.plain)}{failed})")
    elif b.vs_plain is not None and b.plain:
        said.append(f", {_x(b.vs_plain)} the time of that run's plain tier {md(b.plain)}")
    if b.fidelity is not None:
        g = b.fidelity.greedy
        said.append(
            f", mean KLD {g.kld_mean.value:.2g} [{g.kld_mean.lo:.2g}, {g.kld_mean.hi:.2g}], same top-1 "
            f"{g.same_top1.value:.1%}"
        )
    make = f"<code>measure quantize SRC OUT --recipe {md(b.recipe)}</code>"
    said.append(f" (best of {b.tried} recipes tried); make it with {make}.")
    return trusted("".join(said))


def _preserved(p: Speculative) -> str:
    """Only where the pair's output leaves its verifier's greedy decode: then it is not the verifier sped up."""
    if p.preserved is None or p.preserved[0] == p.preserved[1]:
        return ""
    said = f"output equals greedy on {p.preserved[0]} of {p.preserved[1]} rows"
    where = link(said, f"framing.md#{row_id('accept', p.pair)}")
    return f", {badge('failure')} {where}"


def _level_of(level: float | None, why: str = "") -> str:
    """The level an interval is at, said where the interval is: "97.5% interval, Bonferroni over k"."""
    return f"{level or 0.95:.1%} interval" + (f", {why}" if why else "")


def _speculative(found: tuple[Speculative, ...], fastest: dict[str, str], mixed: bool) -> tuple[Md, ...]:
    out = []
    by_kind: dict[str, list[Speculative]] = defaultdict(list)
    for p in found:
        by_kind[p.kind].append(p)
    for kind, pairs in by_kind.items():
        viable = [p for p in pairs if p.viable]
        where = "on quantized CPU artifacts" if all(p.quantized for p in pairs) else "on this machine"
        greedy = md(fastest[kind])
        of_kind = f" ({KIND[kind]})" if mixed else ""
        if viable:
            head = f"{badge('success')} **Speculative decoding pays**{of_kind}: " + ", ".join(
                f"{md(p.pair)} at k={p.best_k}" for p in viable
            )
            head += f" beat{'s' if len(viable) == 1 else ''} {greedy}, the fastest greedy tier, with 95% confidence."
        elif all(p.viable is False for p in pairs):
            head = (
                f"{badge('failure')} **Speculative decoding is not viable {where}**{of_kind}: no pair beats "
                f"{greedy}, the fastest greedy tier of its kind, at any k."
            )
        else:
            head = (
                f"{badge('inconclusive')} **Speculative decoding is not shown to pay**{of_kind}: no pair is "
                f"faster than {greedy}, the fastest greedy tier, with 95% confidence."
            )
        items = "; ".join(
            f"{link(p.pair, 'wallclock.md#' + row_id('pair', p.pair))} at its best k={p.best_k} "
            f"{p.ms_per_token.value:.3f} ms/token, {_x(p.vs_fastest)} the time of {greedy} "
            f"({_level_of(p.vs_fastest.level, 'Bonferroni over k')}; {_x(p.vs_verifier)} of its verifier "
            f"{md(p.verifier)} alone, {_level_of(p.vs_verifier.level if p.vs_verifier else None)}){_preserved(p)}"
            for p in pairs
        )
        out.append(trusted(f"{head} {items}."))
    return tuple(out)


def _level(p: Precision) -> str:
    if p.accuracy_level is None:
        return ""
    said = {4: " = int8 activations", 0: " = unset, fp32 activations"}.get(p.accuracy_level, "")
    return f", accuracy level {p.accuracy_level}{said}"


def _precision(found: tuple[Precision, ...], sizes: tuple[Size, ...]) -> tuple[Md, ...]:
    out = []
    by_model: dict[str, list[Precision]] = defaultdict(list)
    for p in found:
        by_model[p.model].append(p)
    for model, precisions in by_model.items():
        said = []
        for p in precisions:
            fid = f", mean KLD {p.fidelity.greedy.kld_mean.value:.2g}" if p.fidelity else ""
            verdict = ""
            if p.against_precision.startswith("int8") and p.precision.startswith("int4"):
                verdict = (
                    ": int4 kernels lose to int8 here"
                    if p.ratio.lo > 1
                    else ": int4 kernels beat int8 here"
                    if p.ratio.hi < 1
                    else ": int4 and int8 not told apart"
                )
            export = f" (another export: {md(p.export)}'s, so precision and export together)" if p.export else ""
            said.append(
                f"{md(p.tier)} ({md(p.precision)}{_level(p)}) {_x(p.ratio)} the time of {md(p.against)}{export}"
                f"{fid}{verdict}"
            )
        out.append(trusted(f"**Precision**, the {md(model)} model alone: " + "; ".join(said) + "."))
        limits = list(dict.fromkeys(p.limit for p in precisions if p.limit))  # which effect decides each tier's speed
        if limits:
            out.append(trusted("**Why**: " + " ".join(md(x) for x in limits)))
    if sizes:
        items = "; ".join(
            f"{md(s.smaller)} {_x(s.ratio)} the time of {md(s.larger)} ({md(s.precision)})" for s in sizes
        )
        out.append(trusted(f"**Model size**, one precision and layout: {items}."))
    return tuple(out)


def _gates(d: Decision) -> Md:
    if not d.gates:
        return trusted("**Gates**: `measure check` has no gated check in this record.")
    total = sum(g.checks for g in d.gates)
    failing = [g for g in d.gates if g.failing]
    items = " · ".join(
        f"{badge('failure' if g.failing else 'success')} {md(GATE_NAMES.get(g.topic, g.question))} "
        f"({g.checks - len(g.failing)}/{g.checks})"
        for g in d.gates
    )
    state = f"{len(failing)} gate(s) fail" if failing else "every gated check passes"
    return trusted(
        f"**Gates**: `measure check` gates {total} checks, {state}: {items}. Any other ✗ on these pages is a "
        "finding about a tier, not a gate ([every verdict](verdicts.md))."
    )


FRAMING = {"framing-parity": "output", "prompt-framing-parity": "prompt"}
"""The framing verdicts the Framing line phrases, each as the part of a decode it judges."""


def _framing(h: Headline) -> Md | None:
    """The framing verdicts of every tier in one line: the tiers whose decisions change, each with its verdicts'
    counts (positions × framings, as Verdicts says them), and how many decode identically."""
    measured = [t for t in h.tiers if any(v.topic == "framing-parity" for v in t.verdicts)]
    if not measured:
        return None
    where = link("evidence", "framing.md#framing-parity")
    changed = [(t, [v for v in t.verdicts if v.topic in FRAMING and v.outcome == "failure"]) for t in measured]
    changed = [(t, vs) for t, vs in changed if vs]
    if not changed:
        total = sum(t.framing_total or 0 for t in measured)
        return trusted(
            f"**Framing**: feeding a tier k tokens per call (as a speculative verifier does) instead of one changes "
            f"no decode: all {len(measured)} tiers keep every one of {total:,} next-token decisions ({where})."
        )
    items = ", ".join(
        f"{md(t.tier)} ({'; '.join(f'{FRAMING[v.topic]}: {md(v.answer.removeprefix(NO))}' for v in vs)})"
        for t, vs in changed
    )
    return trusted(
        f"**Framing**: feeding k tokens per call instead of one changes next-token decisions of {items}; the "
        f"other {len(measured) - len(changed)} tier(s) decode identically, prompt and output ({where})."
    )


NO = "no: "


def _ran(a: Agreement) -> str:
    """What one runtime decoded: "on 10 tiers", "on 9 of 10 tiers", "on 4 decoder-only tiers (encoder-decoder:
    skipped)"."""
    ran = len(a.same) + len(a.differ)
    kinds = f" {KIND[a.kinds_run[0]]}" if a.kinds_not_run and len(a.kinds_run) == 1 else ""
    total = f" of {ran + len(a.unmeasured)}" if a.unmeasured else ""
    said = f"on {ran}{total}{kinds} tier{'s' if ran + len(a.unmeasured) != 1 else ''}"
    absent = [f"{KIND[k]}: {md(status)}" for k, status in a.kinds_not_run]
    absent += [f"{md(t)} {md(status)}" for t, status in a.unmeasured[:3]]
    absent += [f"{len(a.unmeasured) - 3} more not measured"] if len(a.unmeasured) > 3 else []
    return f"{said} ({'; '.join(absent)})" if absent else said


def _runtimes(found: tuple[Agreement, ...]) -> Md | None:
    """One line: the runtimes that decode every tier they ran as Python onnxruntime does, the ones that do not
    (each tier with its rows), and the ones that did not run."""
    same, differ, absent = [], [], []
    for a in found:
        if not (a.same or a.differ):
            why = {"skipped": "was skipped", "failed": "failed"}.get(a.leg.status, md(a.leg.status))
            absent.append(f"{md(a.leg.name)} {why if not a.leg.measured else 'measured no tier'}")
        elif a.differ:
            items = ", ".join(f"{md(t)} ({equal}/{rows} rows)" for t, equal, rows in a.differ)
            differ.append(f"{md(a.leg.name)} {_ran(a)} does not: {items}")
        else:
            same.append(f"{md(a.leg.name)} {_ran(a)}")
    if not (same or differ or absent):
        return None
    parts = []
    if same:
        listed = same[0] if len(same) == 1 else f"{', '.join(same[:-1])} and {same[-1]}"
        verb = "decodes" if len(same) == 1 else "decode"
        parts.append(f"{listed} {verb} every golden row token for token as Python onnxruntime does")
    parts.extend(differ)
    parts.extend(f"{a} here" for a in absent)
    where = link("evidence", "framing.md#runtimes")
    return trusted(f"**Runtimes**: {'; '.join(parts)} ({where}).")


def decision_block(
    d: Decision, h: Headline, agreement: tuple[Agreement, ...] = (), advice: tuple[Advice, ...] = ()
) -> DecisionBlock:
    """``agreement``: each runtime leg after Python onnxruntime against it (:func:`runtime_agreement`); ``advice``:
    what to try for each model with no quantized tier fit (:func:`measure.analysis.recipe_advice.advise`), said
    after the ship lines."""
    return DecisionBlock(
        tuple(_ship(s, h.mixed, d.unjudged) for s in d.ships)
        + tuple(x for x in (_unjudged(d),) if x is not None)
        + tuple(_advice(a) for a in advice),
        _speculative(d.speculative, d.fastest, h.mixed),
        _precision(d.precision, d.sizes),
        _framing(h),
        _gates(d),
        _runtimes(agreement),
    )
