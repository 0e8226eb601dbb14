"""Framing parity: single-step vs batched decodes, acceptance and quality of the machine's newest framing result."""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.current import Current
from measure.analysis.parity import Cell, runtime_matrix
from measure.analysis.record_analysis import Analysis
from measure.record.model import Framing, FramingTier, Leg
from measure.site import charts
from measure.site.context import (
    KIND,
    Chart,
    Md,
    RunLinks,
    RunRef,
    chart,
    fmt,
    fmt_sci,
    marked,
    md,
    provenance,
    trusted,
)
from measure.site.escape import slug
from measure.site.evidence import anchor, row_id
from measure.site.glossary import glossary
from measure.site.pages.fidelity import FidelitySection, fidelity_section
from measure.site.pages.legs import LegFacts, leg_facts
from measure.site.pages.prefill import PromptFraming, prompt_framing

FRAMING_TERMS = ("framing", "golden rows", "argmax decision", "presents", "k", "acceptance")


@dataclass(frozen=True)
class DiffRow:
    pair: Md
    line: int
    source: Md
    speculative: Md
    greedy: Md
    """Both outputs with the differing characters inside <mark>."""


@dataclass(frozen=True)
class AcceptRow:
    anchor: Md
    pair: Md
    kind: Md
    k: int
    probe: Md
    runtime: Md
    preserved: Md


@dataclass(frozen=True)
class MatrixLine:
    anchor: Md
    tier: Md
    precision: Md
    cells: tuple[Md, ...]
    worst: Md
    logits: Md
    exact: Md
    cer: Md


@dataclass(frozen=True)
class MissRow:
    tier: Md
    line: int
    source: Md
    expected: Md
    output: Md


@dataclass(frozen=True)
class RuntimeRow:
    """The tiers of one kind and precision across the runtime columns: single == batched rows, worst differences."""

    kind: Md
    precision: Md
    cells: tuple[Md, ...]


@dataclass(frozen=True)
class LegNote:
    """A leg or one of its tiers that was not measured, and why."""

    runtime: Md
    subject: Md
    status: Md
    reason: Md


@dataclass(frozen=True)
class RuntimeParity:
    """One tier's plain greedy decodes under another runtime against Python onnxruntime's."""

    anchor: Md
    tier: Md
    cells: tuple[Md, ...]


@dataclass(frozen=True)
class Runtimes:
    heads: tuple[Md, ...]
    """One per runtime leg, Python onnxruntime first; a software WebGPU adapter says so under its name."""
    matrix: tuple[RuntimeRow, ...]
    others: tuple[Md, ...]
    """Column heads of ``parity``: every runtime but Python onnxruntime."""
    parity: tuple[RuntimeParity, ...]
    notes: tuple[LegNote, ...]
    legs: LegFacts | None = None
    """Hosts and execution, ms/token per runtime, rows whose decodes part from Python's (issue 30)."""
    compiled: bool = False
    """Whether a leg decodes without framing blocks (onnxruntime-genai): the matrix says what its cells count."""
    mixed: bool = False
    """Whether the rows hold both kinds: only then does the matrix name each row's kind."""


@dataclass(frozen=True)
class FramingPage:
    run: RunRef | None
    anchor: Md
    blocks: tuple[Md, ...]
    matrix: tuple[MatrixLine, ...]
    acceptance: tuple[AcceptRow, ...]
    differing: tuple[DiffRow, ...]
    charts: tuple[Chart, ...]
    misses: tuple[MissRow, ...] = ()
    """Golden rows a tier decodes differently from the expected output (first 20 per tier)."""
    runtimes: Runtimes | None = None
    """The runtime x precision matrix; None for records with one leg only."""
    sources: Md | None = None
    """Each part's run and date, where the machine's current state takes its parts from more than one run."""
    differences: tuple[Md, ...] = ()
    """How those runs' builds differ."""
    prompt: PromptFraming | None = None
    """Decoder-only tiers: the prompt prefilled token by token against blocks of k and whole."""
    fidelity: FidelitySection | None = None
    """Each quantized tier against its full-precision reference, teacher-forced (None: no fidelity pass)."""
    glossary: Md | None = None
    """The page's words defined in one line where the page begins."""


def _lines(*lines: str) -> Md:
    """Short lines, each kept whole (a phone scrolls the table rather than break "9.8e-06" at its hyphen)."""
    return trusted("<br>".join(f'<span class="measure-nowrap">{line}</span>' for line in lines if line))


def _cell(c: Cell | str) -> Md:
    """Three short lines, so that five runtime columns fit a laptop's width."""
    if isinstance(c, str):
        return md(c)
    extra = f"{c.unmeasured} tier{'s' if c.unmeasured > 1 else ''} not measured" if c.unmeasured else ""
    if c.decodes:  # onnxruntime-genai replays no blocks: its own greedy decodes against Python's
        return _lines(f"{c.rows_same}/{c.rows} rows as Python's", f"logits ≤ {c.logits_max_abs_diff:.1e}", extra)
    return _lines(
        f"{c.rows_same}/{c.rows} rows",
        f"present ≤ {c.present_max_abs_diff:.1e}",
        f"logits ≤ {c.logits_max_abs_diff:.1e}",
        extra,
    )


def _head(leg: Leg) -> Md:
    """A leg's column head; a software WebGPU adapter's numerics are WebGPU's kernels, its speed meaningless."""
    if leg.software_adapter:
        return trusted(f"{md(leg.name)}<br><small>software adapter: numerics only, no timing</small>")
    return md(leg.name)


def runtimes_section(a: Analysis) -> Runtimes | None:
    found = runtime_matrix(a.record)
    if found is None:
        return None
    notes = []
    for leg in found.legs:
        if not leg.measured and not leg.tiers:
            notes.append(LegNote(md(leg.name), md("every tier"), md(leg.status), md(leg.reason)))
        notes.extend(LegNote(md(leg.name), md(t.tier), md(t.status), md(t.reason)) for t in leg.tiers if not t.measured)
    return Runtimes(
        tuple(_head(leg) for leg in found.legs),
        tuple(RuntimeRow(md(KIND[r.kind]), md(r.precision), tuple(_cell(c) for c in r.cells)) for r in found.rows),
        tuple(md(leg.name) for leg in found.legs[1:]),
        tuple(
            RuntimeParity(
                anchor(row_id("runtime", t.tier)), md(f"{t.tier} ({t.precision})"), tuple(md(s) for s in cells)
            )
            for t, cells in found.parity
        ),
        tuple(notes),
        leg_facts(a.record),
        any(isinstance(c, Cell) and c.decodes for r in found.rows for c in r.cells),
        len({r.kind for r in found.rows}) > 1,
    )


def _matrix(tiers: tuple[FramingTier, ...]) -> tuple[MatrixLine, ...]:
    return tuple(
        MatrixLine(
            anchor(row_id("framing", t.tier)),
            md(t.tier),
            md(t.precision),
            tuple(md(f"{b.argmax_agree}/{b.argmax_total}") for b in t.blocks),
            fmt_sci(t.present_max_abs_diff),
            fmt_sci(t.logits_max_abs_diff),
            md(f"{t.quality.exact}/{t.quality.rows}" if t.quality else "-"),
            fmt(t.quality.cer_mean if t.quality else None, 4),
        )
        for t in tiers
    )


def _differing(fr: Framing) -> tuple[DiffRow, ...]:
    """Every row whose speculative decode differs from greedy, the difference marked."""
    out = []
    for x in fr.acceptance:
        for d in x.differing:
            spec, plain = marked(d.speculative, d.greedy)
            out.append(DiffRow(md(x.name), d.line, md(d.input), spec, plain))
    return tuple(out)


def _misses(tiers: tuple[FramingTier, ...]) -> tuple[MissRow, ...]:
    """The first 20 golden rows each tier misses, the difference marked."""
    out = []
    for t in tiers:
        for miss in ((t.quality.misses if t.quality else None) or ())[:20]:
            expected, output = marked(miss.expected, miss.output)
            out.append(MissRow(md(t.tier), miss.line, md(miss.input), expected, output))
    return tuple(out)


def framing_page(
    a: Analysis | None, links: RunLinks, palette: charts.Palette, state: Current | None = None
) -> FramingPage:
    """``state``: the machine's current state ``a`` analyses (None: ``a`` is one record's analysis)."""
    fr = a.record.framing if a else None
    own = (state.source("framing") if state else None) or (a.record if a else None)
    if a is None or fr is None or own is None:
        return FramingPage(None if a is None else links.ref(a.record), slug("framing"), (), (), (), (), ())
    tiers = a.record.python_tiers
    acceptance = tuple(
        AcceptRow(
            anchor(row_id("accept", x.name)),
            md(x.name),
            md("self" if x.self_pair else "pair"),
            x.k,
            fmt(x.probe.ratio, 4),
            fmt(x.runtime.ratio, 4),
            md(f"{x.preserved}/{x.rows}"),
        )
        for x in fr.acceptance
    )
    found = (
        chart(
            "framing-layers",
            "present key/value difference per layer, single-step vs batched (log)",
            charts.layer_diffs(tiers, palette),
        ),
    )
    several = state is not None and not state.one_run
    return FramingPage(
        links.ref(own),
        slug(f"framing-{own.date}"),
        tuple(md(f"k={b}") for b in fr.blocks),
        _matrix(tiers),
        acceptance,
        _differing(fr),
        found,
        _misses(tiers),
        runtimes_section(a),
        provenance(state, links) if several and state is not None else None,
        tuple(md(d) for d in state.differences()) if state is not None else (),
        prompt_framing(tiers, palette),
        fidelity_section(a, palette),
        glossary(*FRAMING_TERMS, *(("KLD", "same top-1", "PPL ratio") if a.fidelity else ())),
    )
