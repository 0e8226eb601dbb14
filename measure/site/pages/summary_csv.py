"""The Overview's summary table as ``summary.csv``: plain numbers (no markup) for a spreadsheet, a row per tier,
from the same headline the page's table is built from."""

from __future__ import annotations

import csv
import io

from measure.analysis.current import Current
from measure.analysis.headline import Headline, TierLine
from measure.site.pages.verdicts import RANK


def _fidelity_cells(t: TierLine) -> tuple[object, ...]:
    f = t.fidelity
    if f is None:
        return ("",) * 6
    k = f.greedy.kld_mean
    return (f.reference, k.value, k.lo, k.hi, f.greedy.same_top1.value, f.ppl_ratio.value)


def _bound_cells(t: TierLine) -> tuple[object, ...]:
    """Bytes per decode step, the memory-bandwidth bound and efficiency (blank where not computed or in cache)."""
    b = t.bound
    if b is None:
        return ("",) * 3
    return (
        round(b.bytes_per_token),
        "" if b.bound_ms_per_token is None else b.bound_ms_per_token,
        "" if b.efficiency is None else b.efficiency,
    )


def summary_csv(h: Headline, state: Current | None = None) -> str:
    """The summary table as CSV, plain numbers (no markup), for a spreadsheet; with ``state``, the run each
    tier's wall-clock and framing numbers come from."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    legs = [name for name, _ in (h.tiers[0].runtimes if h.tiers else ())]
    w.writerow(
        [
            *("tier", "model", "role", "precision", "size_bytes", "ms_per_token", "ms_per_token_lo", "ms_per_token_hi"),
            *("speed_reference", "vs_reference", "vs_reference_lo", "vs_reference_hi"),
            *("kind_reference", "vs_kind_reference", "vs_kind_reference_lo", "vs_kind_reference_hi"),
            *("exact", "rows", "same_as_reference"),
            *("framing_changed", "framing_decisions", *(f"greedy_parity {leg}" for leg in legs), "worst_outcome"),
            *("fidelity_reference", "kld_mean", "kld_mean_lo", "kld_mean_hi", "same_top1", "ppl_ratio"),
            *("bytes_per_token", "bound_ms_per_token", "bandwidth_efficiency"),
            *(("wallclock_run", "framing_run") if state is not None else ()),
        ]
    )
    runs = [] if state is None else [(r.run_id if (r := state.source(p)) else "") for p in ("wallclock", "framing")]
    for t in h.tiers:
        ms, vs, kind = t.ms_per_token, t.vs_reference, t.vs_kind_reference
        judged = [v.outcome for v in t.verdicts if v.outcome != "info"]
        w.writerow(
            [
                *(t.tier, t.model or "", t.role, t.precision, t.size_bytes),
                *((ms.value, ms.lo, ms.hi) if ms else ("", "", "")),
                t.reference or "",
                *((vs.value, vs.lo, vs.hi) if vs else ("", "", "")),
                t.kind_reference or "",
                *((kind.value, kind.lo, kind.hi) if kind else ("", "", "")),
                *(t.exact, t.rows, t.same_as_reference, t.framing_changed, t.framing_total),
                *(cell for _, cell in t.runtimes),
                min(judged, key=lambda o: RANK[o]) if judged else "",
                *_fidelity_cells(t),
                *_bound_cells(t),
                *runs,
            ]
        )
    return out.getvalue()
