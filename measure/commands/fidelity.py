"""Judge tiers against a full-precision reference as quantizers do: KL divergence, same top token, perplexity.

Teacher-forced on the reference's greedy continuation of each golden row and on the row's expected output, both
tiers fed the same token ids in one batched call a row; llama.cpp's ``--kl-divergence`` figures per tier. Any two
tiers of one kind and one vocabulary, bare folders too (an optimum export with no tier.json).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from measure.analysis.fidelity import TierFidelityFigures
    from measure.analysis.stats import Estimate
    from measure.policy import Policy


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("reference", type=Path, metavar="REFERENCE", help="the full-precision tier folder")
    p.add_argument("tiers", type=Path, nargs="+", metavar="TIER", help="tier folders judged against it")
    p.add_argument("--golden", type=Path, help="golden rows (JSONL with input and output; default: the demo's)")
    p.add_argument("--prompt", help="decoder-only prompt template with {input} (default: each tier.json's)")
    p.add_argument("--rows", type=int, help="the first N golden rows only")
    p.add_argument("--json", action="store_true", help="one JSON object per tier, one line each")


def run(args: argparse.Namespace) -> int:
    from measure import bundled
    from measure.analysis.fidelity import tier_figures
    from measure.analysis.timings import Bootstrap
    from measure.engine.kind import detect_kind
    from measure.engine.load import load_tier
    from measure.errors import MeasureError
    from measure.record.model.fidelity import Fidelity
    from measure.suites.config import WallclockConfig
    from measure.suites.fidelity import judge
    from measure.suites.golden import load_golden
    from measure.suites.steps import release
    from measure.terminal import clean, strict_json

    if args.rows is not None and args.rows < 1:
        raise MeasureError(f"--rows {args.rows}: expected at least one row")
    golden = load_golden(args.golden or bundled.GOLDEN)
    if args.rows is not None:
        golden = type(golden)(golden.path, golden.sha256, golden.rows[: args.rows])

    def load(folder: Path, label: str, name: str | None = None):
        prompt = args.prompt if args.prompt is not None and detect_kind(folder) == "causal" else None
        return load_tier(folder, label=label, name=name or folder.name, prompt=prompt)

    tiers = []
    for i, folder in enumerate(args.tiers):  # each let go of once read: its facts are what the checks need
        tier = load(folder, f"tier{i}")
        release(tier)
        tiers.append(tier)
    reference = load(args.reference, "reference")
    names = [t.name for t in tiers]
    for i, t in enumerate(tiers):  # two folders of one name (a/int8, b/int8) stay apart
        if names.count(t.name) > 1:
            t.name = f"{t.name}#{i + 1}"
    # each tier loaded again for its own pass, after the reference is let go of: one model's sessions at a time
    part = judge(reference, tiers, golden, reload=lambda t: load(t.path, t.label, t.name))
    wc = WallclockConfig()
    judged = Fidelity.from_dict(part)
    assert judged is not None, "judge writes a fidelity part"
    figures = tier_figures(judged, Bootstrap(wc.bootstrap, wc.seed))
    if args.json:
        lines = [strict_json(figures_json(f)) for f in figures]  # all checked before the first is printed
        print("\n".join(lines))
        return 0
    for line in table(reference.name, reference.fingerprint().precision, len(golden), figures).splitlines():
        print(clean(line))
    return 0


def _row(label: str, value: str) -> str:
    return f"{label:<22}{value}"


def table(
    reference: str, precision: str, rows: int, figures: tuple[TierFidelityFigures, ...], policy: Policy | None = None
) -> str:
    """The figures as llama.cpp's ``--kl-divergence`` prints them, one block per tier, each judged by the policy's
    rule as the Overview judges it (``policy``: the default one; a run's config may set its own)."""
    from measure.analysis.fidelity import judge_figures
    from measure.policy import Policy

    policy = policy or Policy()
    out = [f"reference {reference} ({precision}); {rows} golden rows, teacher-forced, float64 log-softmax"]
    for f in figures:
        g, q = f.greedy, f.greedy.kld_quantiles
        kld = g.kld_mean
        out += [
            "",
            f"====== {f.tier} against {f.reference} ======",
            _row("positions", f"{g.positions} (the reference's greedy path and end-of-sequence)"),
            _row("Mean    KLD", f"{kld.value:10.6f}   95% interval [{kld.lo:.6f}, {kld.hi:.6f}] (over rows)"),
            *(_row(f"{label} KLD", f"{q[at]:10.6f}") for label, at in _QUANTILE_ROWS if at in q),
            _row(
                "Same top p",
                f"{100 * g.same_top1.value:8.3f} %   [{100 * g.same_top1.lo:.3f}, {100 * g.same_top1.hi:.3f}]",
            ),
            _row("Rows flipped", f"{g.flipped_rows} of {g.rows} (a top-1 decision changes at least once on the path)"),
            _row("Top-5 overlap", f"{100 * g.top5:8.3f} %"),
            _row("RMS Δp", f"{100 * g.rms_dp:8.3f} %   (mean Δp {100 * g.mean_dp:+.3f} %)"),
            _row("PPL(ref), PPL(tier)", f"{f.ppl_ref:.4f}, {f.ppl_tier:.4f} on the golden outputs"),
            _row("PPL ratio", f"{f.ppl_ratio.value:10.6f}   95% interval [{f.ppl_ratio.lo:.6f}, {f.ppl_ratio.hi:.6f}]"),
            _row("Faithful?", f"{_MARK[(v := judge_figures(f, policy, 'default'))[0]]} {v[1]}"),
            _row("", f"(the default policy: {v[2]})"),
        ]
    return "\n".join(out)


_MARK = {"success": "✓", "failure": "✗", "inconclusive": "?"}
"""How a verdict's outcome reads in a terminal (the pages' badges)."""

_QUANTILE_ROWS = (
    ("Maximum", 1.0),
    ("99.9%  ", 0.999),
    ("99.0%  ", 0.99),
    ("95.0%  ", 0.95),
    ("90.0%  ", 0.9),
    ("Median ", 0.5),
)


def figures_json(f: TierFidelityFigures) -> dict[str, object]:
    """One tier's summary as ``--json`` prints it."""
    g = f.greedy

    def est(e: Estimate) -> dict[str, float]:
        return {"value": e.value, "lo": e.lo, "hi": e.hi}

    from measure.analysis.fidelity import judge_figures
    from measure.policy import Policy

    outcome, answer, rule = judge_figures(f, Policy(), "default")
    return {
        "tier": f.tier,
        "reference": f.reference,
        "faithful": {"outcome": outcome, "answer": answer, "rule": rule},
        "positions": g.positions,
        "rows": g.rows,
        "rows_flipped": g.flipped_rows,
        "kld_mean": est(g.kld_mean),
        "kld_quantiles": {str(q): v for q, v in g.kld_quantiles.items()},
        "same_top1": est(g.same_top1),
        "top5_overlap": g.top5,
        "rms_dp": g.rms_dp,
        "ppl_ref": f.ppl_ref,
        "ppl_tier": f.ppl_tier,
        "ppl_ratio": est(f.ppl_ratio),
        "golden_kld_mean": f.golden_kld_mean,
        "golden_same_top1": f.golden_same_top1,
    }
