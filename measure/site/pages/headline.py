"""The Overview's opening sentence: where and on what its figures were measured. What the figures decide is the
decision block's (:mod:`measure.site.pages.decision`); the summary table and summary.csv read the same headline
figures (:mod:`measure.analysis.headline`)."""

from __future__ import annotations

from measure.analysis.record_analysis import Analysis
from measure.site.context import Md
from measure.site.escape import md, trusted


def lead(a: Analysis, sources: Md | None = None) -> Md:
    """``sources``: each part's run and date; without it, the record's own date."""
    r = a.record
    m = r.environment.machine
    when = f": {sources}" if sources is not None else f" {md(r.started_at[:10])}"
    return trusted(
        f"Measured on machine {md(r.machine_id)} ({md(m.cpu)}, {m.cores} cores) with onnxruntime "
        f"{md(r.environment.onnxruntime)}, over {r.golden.rows} golden rows{when}."
    )
