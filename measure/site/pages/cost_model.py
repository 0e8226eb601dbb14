"""The Wall-clock page's cost-model section: timed single calls, what they predict per pair, layout findings.

Renders :class:`~measure.analysis.cost_model.CostModel`; a record without call costs or layouts gets no section.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.cost_model import CostModel
from measure.site import charts
from measure.site.context import Chart, Md, chart, fmt, md, stacked, trusted
from measure.site.evidence import anchor, row_id


@dataclass(frozen=True)
class CostModelLine:
    """One pair at one k in the cost-model table."""

    anchor: Md
    pair: Md
    k: int
    acceptance: Md
    per_round: Md
    """Tokens committed and drafter calls made per round, as the decode did them."""
    cost_ratio: Md
    batch_ratio: Md
    leviathan: Md
    measured: Md
    observed: Md
    efficiency: Md
    spent_anchor: Md
    inside: Md
    """The speedup inside onnxruntime's run alone, with its interval."""
    in_loop: Md
    """inside / measured-cost prediction: the machine's share (calls slower in the loop than alone)."""
    harness: Md
    """observed / inside: measure's share (the time outside onnxruntime, speculative against greedy)."""


@dataclass(frozen=True)
class BatchRow:
    anchor: Md
    tier: Md
    cache: Md
    single_us: Md
    fixed_us: Md
    per_token_us: Md
    ratios: tuple[Md, ...]
    """A call of k + 1 tokens over a single step, for each k of :attr:`CostSection.ks`."""


@dataclass(frozen=True)
class LayoutRow:
    anchor: Md
    name: Md
    finding: Md
    """The sentence: "merged costs X× split per token [lo, hi]"."""
    merged_ms: Md
    split_ms: Md
    call_ratio: Md
    same_outputs: Md


@dataclass(frozen=True)
class CostSection:
    """The measured cost model and the layout findings; a record without them gets none of this."""

    rows: tuple[CostModelLine, ...]
    batch: tuple[BatchRow, ...]
    ratio_headers: tuple[Md, ...]
    """One per k of the cost rows: the batched-call column's heading."""
    charts: tuple[Chart, ...]
    call_rows: int
    repeats: int
    layouts: tuple[LayoutRow, ...]
    fitted: bool
    """Some row's k + 1 call was not timed and is read off the fitted line."""
    split: Md
    """One sentence: measure's share of the shortfall (harness) against the machine's (calls in the loop ÷ alone)."""


def _us(seconds: float | None, digits: int = 1) -> Md:
    return fmt(None if seconds is None else 1e6 * seconds, digits)


def _cost_rows(m: CostModel) -> tuple[CostModelLine, ...]:
    return tuple(
        CostModelLine(
            trusted(anchor(row_id("cost", r.case))),
            md(r.pair),
            r.k,
            fmt(r.prediction.acceptance, 4),
            md(f"{r.prediction.tokens_per_round:.2f} · {r.prediction.draft_calls_per_round:.2f}"),
            fmt(r.prediction.cost_ratio, 2),
            md(f"{r.prediction.batch_ratio:.2f}" + ("*" if r.batched_fitted else "")),
            fmt(r.prediction.leviathan, 2),
            fmt(r.prediction.measured_cost, 2),
            stacked(r.observed, 2, "×"),
            stacked(r.efficiency, 2),
            trusted(anchor(row_id("spent", r.case))),
            stacked(r.inside, 2, "×"),
            fmt(r.in_loop, 2),
            fmt(r.harness, 2),
        )
        for r in m.pairs
    )


def _batch_rows(m: CostModel, ks: tuple[int, ...]) -> tuple[BatchRow, ...]:
    return tuple(
        BatchRow(
            trusted(anchor(row_id("batch", t.tier))),
            md(t.tier),
            fmt(t.cache_tokens, 1),
            stacked(t.call_us[0], 1),
            _us(t.line.fixed_s if t.line else None),
            _us(t.line.per_token_s if t.line else None, 2),
            tuple(stacked(t.ratio(k + 1), 2, "×") for k in ks),
        )
        for t in m.tiers
    )


def _layout_rows(m: CostModel) -> tuple[LayoutRow, ...]:
    return tuple(
        LayoutRow(
            trusted(anchor(row_id("layout", f.name))),
            md(f.name),
            md(f"merged costs {f.ratio.value:.2f}× split per token [{f.ratio.lo:.2f}, {f.ratio.hi:.2f}]"),
            stacked(f.merged_ms_per_token, 3),
            stacked(f.split_ms_per_token, 3),
            fmt(f.call_ratio, 2),
            md("yes" if f.same_outputs else "no: outputs differ"),
        )
        for f in m.layouts
    )


def cost_section(m: CostModel | None, palette: charts.Palette) -> CostSection | None:
    """The section of a record with a measured cost model; None for one without."""
    if m is None:
        return None
    ks = tuple(sorted({r.k for r in m.pairs}))
    figures = (
        (
            chart(
                "wallclock-batch-cost",
                "verifier call cost against tokens per call",
                charts.batch_cost(m.tiers, palette),
            ),
        )
        if m.tiers
        else ()
    )
    headers = tuple(md(f"{k + 1} tokens × single (k = {k})") for k in ks)
    fitted = any(r.batched_fitted for r in m.pairs)
    return CostSection(
        _cost_rows(m), _batch_rows(m, ks), headers, figures, m.rows, m.repeats, _layout_rows(m), fitted, _split(m)
    )


def _split(m: CostModel) -> Md:
    """The answer above the table: how far measure's loop and the machine each fall short, over every pair and k."""
    harness = [r.harness for r in m.pairs if r.harness is not None]
    in_loop = [r.in_loop for r in m.pairs if r.in_loop is not None]
    if not harness or not in_loop:
        return md("")
    return md(
        f"Here measure's own loop keeps {min(harness):.2f}–{max(harness):.2f} of the speedup the calls made inside "
        f"onnxruntime (harness); the calls themselves delivered {min(in_loop):.2f}–{max(in_loop):.2f} of what they "
        "predict when timed alone (calls in the loop ÷ alone)."
    )
