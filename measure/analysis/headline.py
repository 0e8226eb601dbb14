"""The Overview's headline figures: per tier its cost, speed against the reference tier of its kind, fidelity,
framing and other runtimes' parity; per speculative pair its speedups over k, acceptance and preserved rows; the
gates that fail. Computed once here from a record's analysis; the Overview's sentences, its summary table and
summary.csv format them (:mod:`measure.site.pages.headline`)."""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.fidelity import TierFidelityFigures
from measure.analysis.models import model_of
from measure.analysis.parity import rows_as_python
from measure.analysis.record_analysis import Analysis
from measure.analysis.roofline import TierBound
from measure.analysis.stats import Estimate, paired_ratio
from measure.analysis.timings import PairTiming, common_repeats
from measure.analysis.verdict import Verdict
from measure.record.model import FP32, FramingTier, Record


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
    fidelity: TierFidelityFigures | None = None
    """Against its full-precision reference, teacher-forced (None: the tier has none, or no fidelity pass)."""
    present_max: float | None = None
    """The largest present key/value difference batched framing made (None: framing not measured)."""
    framings: int = 0
    """The framings each decode position was fed in (blocks of each k and whole): ``framing_total`` counts every
    position that many times, so a page says positions × framings, not one inflated count."""
    kind_reference: str | None = None
    """Where the tier's own source (its fidelity reference) was not timed: its kind's reference, the other
    comparison, named as such; None where the row's one reference is the kind's anyway."""
    vs_kind_reference: Estimate | None = None
    """This tier's ms/token over :attr:`kind_reference`'s, paired (its own column, never the row's reference)."""
    bound: TierBound | None = None
    """Its bytes per decode step against the machine's memory-bandwidth bound (None: bytes not counted)."""
    model: str | None = None
    """The model it exports (:func:`~measure.analysis.models.model_of`): its ship line's; None where unknown."""


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
    mixed: bool = False
    """Whether the record holds tiers of both kinds (seq2seq and decoder-only): then each tier names its kind."""


def kind_reference(record: Record, kind: str | None = None) -> str | None:
    """The tier a tier of ``kind`` is measured against: that kind's reference role, else its first fp32 tier
    (None: any kind). A decoder-only tier is never timed against an encoder-decoder one."""
    tiers = [(n, t) for n, t in record.tiers.items() if kind is None or t.kind == kind]
    by_role = next((n for n, t in tiers if t.role == "reference"), None)
    return by_role or next((n for n, t in tiers if t.precision in FP32), None)


def _vs(record: Record, tier: str, reference: str | None) -> Estimate | None:
    cases = record.wallclock.cases if record.wallclock else {}
    a, b = cases.get(tier), cases.get(reference or "")
    if a is None or b is None or not a.measured or not b.measured:
        return None
    return paired_ratio(*common_repeats(a.per_repeat_ms_per_token, b.per_repeat_ms_per_token))


def _same_rows(framing: FramingTier | None, ref: FramingTier | None) -> int | None:
    """Golden rows a tier decodes to the same text as its reference."""
    if framing is None or ref is None:
        return None
    return sum(x == y for x, y in zip(framing.outputs, ref.outputs, strict=False))


def _framing_counts(framing: FramingTier | None) -> tuple[int | None, int | None, int | None, int | None]:
    """Decode argmax decisions changed and made by batched framing, then prompt positions (decoder-only)."""
    if framing is None:
        return None, None, None, None
    prefill = framing.prefill
    changed = sum(b.argmax_total - b.argmax_agree for b in prefill) if prefill else None
    total = sum(b.argmax_total for b in prefill) if prefill else None
    return framing.argmax_total - framing.argmax_agree, framing.argmax_total, changed, total


def _row_reference(a: Analysis, name: str) -> str | None:
    """The one tier a row's speed and fidelity are both against: the tier's own full-precision source where it has
    one (timed or not: an untimed one leaves the speed ratio empty), else its kind's reference (never a tier of the
    other kind)."""
    fid = a.fidelity_of(name)
    return fid.reference if fid is not None else kind_reference(a.record, a.record.tiers[name].kind)


def _framing_figures(framing: FramingTier | None) -> tuple[int | None, int | None, float | None, int]:
    """Rows decoded exactly and rows, the presents' largest difference and the framings replayed, of a tier's
    Python framing result (None, and no framings, where it has none)."""
    if framing is None:
        return None, None, None, 0
    quality = framing.quality
    exact, rows = (quality.exact, quality.rows) if quality else (None, None)
    return exact, rows, framing.present_max_abs_diff, len(framing.blocks)


def _tier_line(a: Analysis, name: str) -> TierLine:
    r = a.record
    tier = r.tiers[name]
    reference = _row_reference(a, name)
    kind_ref = kind_reference(r, tier.kind)
    other = kind_ref if kind_ref not in (None, reference, name) else None
    timing = next((t for t in a.tiers if t.tier == name), None)
    framing = next((t for t in r.python_tiers if t.tier == name), None)
    ref = next((t for t in r.python_tiers if t.tier == reference), None)
    changed, total, prompt_changed, prompt_total = _framing_counts(framing)
    exact, rows, present_max, framings = _framing_figures(framing)
    return TierLine(
        name,
        tier.role,
        tier.precision,
        tier.total_bytes,
        timing.ms_per_token if timing else None,
        _vs(r, name, reference) if reference and name != reference else None,
        exact,
        rows,
        _same_rows(framing, ref),
        changed,
        total,
        rows_as_python(r, name),
        tuple(v for v in a.verdicts if v.key == name),
        tier.kind,
        reference,
        prompt_changed,
        prompt_total,
        a.fidelity_of(name),
        present_max,
        framings,
        other,
        _vs(r, name, other) if other else None,
        a.roofline.of(name) if a.roofline is not None else None,
        model_of(r, name) if a.fidelity else None,
    )


def headline(a: Analysis) -> Headline:
    r = a.record
    role = {t.role: n for n, t in reversed(r.tiers.items())}
    plain = r.tiers.get(role.get("plain", ""))
    reference = kind_reference(r, plain.kind if plain else None)
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
        len({t.kind for t in r.tiers.values()}) > 1,
    )
