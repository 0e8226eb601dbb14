"""Decoder-only tiers' prompt phase on the pages: prefill and decode timed apart (Wall-clock), prompt framings
(Framing parity).

Only tiers of kind ``causal`` have a prompt phase of their own; a record
without them gives ``None`` here, and the pages render as they did before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from measure.analysis.record_analysis import Analysis
from measure.record.model import FramingTier
from measure.site import charts
from measure.site.context import Chart, Md, chart, fmt_sci, md, prompt_templates, stacked, trusted
from measure.site.evidence import anchor, row_id


@dataclass(frozen=True)
class PhaseRow:
    """One decoder-only tier's greedy decode split at the first token."""

    anchor: Md
    tier: Md
    precision: Md
    prompt_tokens: Md
    """Mean prompt tokens per golden row."""
    first_token_ms: Md
    prefill_ms: Md
    """Per prompt token."""
    decode_ms: Md
    """Per generated token, apart from the prefill."""
    decode_calls: int


@dataclass(frozen=True)
class Phases:
    """The Wall-clock page's section on decoder-only tiers: its rows, charts and the template of each tier."""

    rows: tuple[PhaseRow, ...]
    charts: tuple[Chart, ...]
    prompts: Md
    """Each tier's prompt template, escaped (untrusted text from the tier folder or the config)."""
    repeats: int


def _templates(a: Analysis) -> Md:
    """ "`{input}=` (lm-a, lm-b)": each distinct template once, with the tiers that use it."""
    users = prompt_templates(a.record).items()
    return trusted("; ".join(f"<code>{md(p)}</code> ({', '.join(md(n) for n in ns)})" for p, ns in users))


def phases_section(a: Analysis, palette: charts.Palette) -> Phases | None:
    """None when the record times no decoder-only tier's first token."""
    if not a.causal:
        return None
    rows = tuple(
        PhaseRow(
            anchor(row_id("prefill", c.tier)),
            md(c.tier),
            md(a.record.tiers[c.tier].precision),
            md(f"{c.prompt_tokens / max(1, a.record.golden.rows):.1f}"),
            stacked(c.first_token_ms, 3),
            stacked(c.prefill_ms_per_prompt_token, 4),
            stacked(c.decode_ms_per_token, 3),
            c.decode_calls,
        )
        for c in a.causal
    )
    found = (
        chart("wallclock-phases", "prefill and decode, ms per token", charts.phases(a.causal, palette)),
        chart(
            "wallclock-first-token",
            "time to first token against prompt length",
            charts.first_token(a.record, a.causal, palette),
        ),
    )
    wc = a.record.wallclock
    return Phases(rows, found, _templates(a), wc.repeats_done if wc else 0)


@dataclass(frozen=True)
class PromptLine:
    """One decoder-only tier's prompt fed token by token against blocks of k and whole."""

    anchor: Md
    tier: Md
    precision: Md
    cells: tuple[Md, ...]
    """Prompt positions whose argmax agrees, per block size."""
    worst: Md
    logits: Md
    rows: Md
    """Golden rows whose prompt has a position whose argmax the blocks move."""


@dataclass(frozen=True)
class PromptFraming:
    """The Framing parity page's prefill section."""

    blocks: tuple[Md, ...]
    lines: tuple[PromptLine, ...]
    charts: tuple[Chart, ...]


def _line(t: FramingTier) -> PromptLine:
    moved = {i for b in t.prefill for i, step in enumerate(b.first_divergent_step) if step is not None}
    rows = max((len(b.first_divergent_step) for b in t.prefill), default=0)
    return PromptLine(
        anchor(row_id("prefill", t.tier)),
        md(t.tier),
        md(t.precision),
        tuple(md(f"{b.argmax_agree}/{b.argmax_total}") for b in t.prefill),
        fmt_sci(max(b.present_max_abs_diff for b in t.prefill)),
        fmt_sci(max(b.logits_max_abs_diff for b in t.prefill)),
        md(f"{len(moved)}/{rows}"),
    )


def prompt_framing(tiers: tuple[FramingTier, ...], palette: charts.Palette) -> PromptFraming | None:
    """None when no tier on the Python leg has prefill facts (a record of encoder-decoder tiers only)."""
    found = [t for t in tiers if t.prefill]
    if not found:
        return None
    layers = charts.layer_diffs(tuple(replace(t, blocks=t.prefill) for t in found), palette)
    title = "present key/value difference per layer, prompt token by token vs in blocks (log)"
    return PromptFraming(
        tuple(md(f"k={b.block}") for b in found[0].prefill),
        tuple(_line(t) for t in found),
        (chart("framing-prefill-layers", title, layers),),
    )
