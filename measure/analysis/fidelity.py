"""How faithful each quantized tier is to its full-precision reference, as quantizers judge it: llama.cpp's
``--kl-divergence`` figures from the record's per-row sums.

Per tier, on the reference's greedy path: the mean KL divergence (nats per position) with a 95% interval, its
median, p90, p95, p99, p99.9 and maximum, the share of positions picking the reference's top token with its
interval, RMS Δp of the reference's top token and the top-5 overlap; on the golden outputs: each tier's
perplexity and the ratio PPL_tier / PPL_ref with its interval. The golden rows are the independent unit, so every
interval is a bootstrap over rows (the record's seed and resamples). Per speculative pair, the drafter against
the verifier on the verifier's greedy path, beside the acceptance the framing suite measured: greedy acceptance
is the drafter's same-top-1 on that path, up to framing and the rounds' bonus tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from measure.analysis.resample import resampled_sums
from measure.analysis.stats import Estimate, percentile_interval
from measure.analysis.timings import Bootstrap, bootstrap_of
from measure.analysis.verdict import Verdict, against, ci
from measure.policy import Policy
from measure.record.model import Fidelity, FidelityReference, PathFidelity, Record
from measure.record.model.fidelity import QUANTILES


@dataclass(frozen=True)
class PathFigures:
    """One path's figures (a tier against its reference, or a drafter against its verifier)."""

    positions: int
    kld_mean: Estimate
    """Nats per position, 95% interval over rows."""
    kld_quantiles: dict[float, float]
    """KLD at :data:`~measure.record.model.fidelity.QUANTILES` (1.0: the maximum)."""
    same_top1: Estimate
    """Share of positions where both pick the same top token, 95% interval over rows."""
    top5: float
    """Mean share of the reference's five likeliest tokens among the tier's five."""
    rms_dp: float
    """Root mean square of p_tier - p_ref of the reference's top token."""
    mean_dp: float
    hist: tuple[tuple[int, int], ...]
    zeros: int


@dataclass(frozen=True)
class TierFidelityFigures:
    tier: str
    reference: str
    reference_in_run: bool
    source: str
    greedy: PathFigures
    ppl_ref: float
    ppl_tier: float
    ppl_ratio: Estimate
    """PPL_tier / PPL_ref on the golden outputs, 95% interval over rows."""
    golden_kld_mean: float
    golden_same_top1: float


@dataclass(frozen=True)
class PairFidelityFigures:
    drafter: str
    verifier: str
    greedy: PathFigures
    acceptance: float | None
    """The framing suite's runtime (batched) acceptance of the pair at its probe k, where it measured one."""
    probe_acceptance: float | None


class _Resampled:
    """One bootstrap's resampled sums over rows (a record's seed and resamples), each array's computed once: a
    record's tiers share their reference's positions and NLL."""

    def __init__(self, b: Bootstrap) -> None:
        self.b = b
        self._kept: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def sums(self, v: np.ndarray) -> np.ndarray:
        found = self._kept.get(id(v))
        if found is None or found[0] is not v:  # the array itself is kept beside its sums, so its id stays its own
            found = self._kept[id(v)] = (v, resampled_sums(v, self.b.seed, self.b.resamples))
        return found[1]


def _ratio(num: np.ndarray, den: np.ndarray, draws: _Resampled) -> Estimate:
    """sum(num) / sum(den) with a percentile interval from resampling rows."""
    value = float(num.sum() / den.sum()) if den.sum() else float("nan")
    boot = draws.sums(num) / np.maximum(draws.sums(den), 1e-300)
    lo, hi = percentile_interval(boot)
    return Estimate(value, lo, hi)


def _path(p: PathFidelity, positions: np.ndarray, draws: _Resampled) -> PathFigures:
    n = int(positions.sum())
    same = np.asarray(p.same_top1, dtype=float)
    return PathFigures(
        positions=n,
        kld_mean=_ratio(p.kld, positions, draws),
        kld_quantiles=dict(zip(QUANTILES, p.quantiles, strict=False)),
        same_top1=_ratio(same, positions, draws),
        top5=p.top5 / (5 * n) if n else float("nan"),
        rms_dp=float(np.sqrt(p.dp_sq / n)) if n else float("nan"),
        mean_dp=p.dp / n if n else float("nan"),
        hist=p.hist,
        zeros=p.zeros,
    )


def _ppl_ratio(tier_nll: np.ndarray, ref_nll: np.ndarray, positions: np.ndarray, draws: _Resampled) -> Estimate:
    """exp((sum NLL_tier - sum NLL_ref) / positions), resampled over rows."""
    value = float(np.exp((tier_nll.sum() - ref_nll.sum()) / positions.sum()))
    boot = np.exp((draws.sums(tier_nll) - draws.sums(ref_nll)) / draws.sums(positions))
    lo, hi = percentile_interval(boot)
    return Estimate(value, lo, hi)


def tier_figures(fid: Fidelity, b: Bootstrap) -> tuple[TierFidelityFigures, ...]:
    """Every judged tier's figures from a fidelity block (a record's, or ``measure fidelity``'s own)."""
    out = []
    draws = _Resampled(b)
    positions: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # a reference's, one array each for all its tiers
    for t in fid.tiers:
        ref: FidelityReference = fid.references[t.reference]
        if t.reference not in positions:
            positions[t.reference] = (
                np.asarray(ref.greedy_positions, dtype=float),
                np.asarray(ref.golden_positions, dtype=float),
            )
        greedy_pos, golden_pos = positions[t.reference]
        n_golden = golden_pos.sum()
        out.append(
            TierFidelityFigures(
                tier=t.tier,
                reference=t.reference,
                reference_in_run=ref.in_run,
                source=t.source,
                greedy=_path(t.greedy, greedy_pos, draws),
                ppl_ref=float(np.exp(ref.golden_nll.sum() / n_golden)),
                ppl_tier=float(np.exp(t.golden_nll.sum() / n_golden)),
                ppl_ratio=_ppl_ratio(t.golden_nll, ref.golden_nll, golden_pos, draws),
                golden_kld_mean=t.golden_kld / n_golden,
                golden_same_top1=t.golden_same_top1 / n_golden,
            )
        )
    return tuple(out)


def tier_fidelity(record: Record) -> tuple[TierFidelityFigures, ...]:
    """Every judged tier's figures, in the record's order (its seed and resamples); empty without a pass."""
    return () if record.fidelity is None else tier_figures(record.fidelity, bootstrap_of(record))


def pair_fidelity(record: Record) -> tuple[PairFidelityFigures, ...]:
    """Every pair's drafter against its verifier, beside the acceptance the framing suite measured."""
    fid = record.fidelity
    if fid is None:
        return ()
    b = bootstrap_of(record)
    measured_pairs = record.framing.acceptance if record.framing else ()
    acceptance = {(a.drafter, a.verifier): a for a in measured_pairs if not a.self_pair}
    out = []
    for p in fid.pairs:
        positions = np.asarray(p.positions, dtype=float)
        measured = acceptance.get((p.drafter, p.verifier))
        out.append(
            PairFidelityFigures(
                p.drafter,
                p.verifier,
                _path(p.greedy, positions, _Resampled(b)),
                measured.runtime.ratio if measured else None,
                measured.probe.ratio if measured else None,
            )
        )
    return tuple(out)


def _judge(figures: TierFidelityFigures, policy: Policy, role: str) -> tuple[str, str, str]:
    """Outcome, answer and rule: every figure wholly within its bound is faithful, any wholly past it is not."""
    kld, top1, ppl = (policy.bound(n, role) for n in ("kld_mean_max", "same_top1_min", "ppl_ratio_max"))
    g = figures.greedy
    checks = (  # (outcome, as it holds, as it fails)
        (against(g.kld_mean, kld, want_above=False)[0], "mean KLD {:.3g} {} {:g}", g.kld_mean.value, "≤>", kld),
        (against(g.same_top1, top1, want_above=True)[0], "same top-1 {:.1%} {} {:.0%}", g.same_top1.value, "≥<", top1),
        (
            against(figures.ppl_ratio, ppl, want_above=False)[0],
            "PPL ratio {:.3f} {} {:g}",
            figures.ppl_ratio.value,
            "≤>",
            ppl,
        ),
    )
    said = [(o, form.format(v, signs[o == "failure"], b)) for o, form, v, signs, b in checks]
    outcomes = {o for o, _ in said}
    rule = f"95% intervals: mean KLD ≤ {kld:g}, same top-1 ≥ {top1:.0%}, PPL ratio ≤ {ppl:g} (role {role})"
    if "failure" in outcomes:
        return "failure", "no: " + ", ".join(w for o, w in said if o == "failure"), rule
    if outcomes == {"success"}:
        return "success", "yes: " + ", ".join(w for _, w in said), rule
    unsure = ", ".join(w.split(" ≤")[0].split(" ≥")[0] for o, w in said if o == "inconclusive")
    return "inconclusive", f"inconclusive: {unsure} straddle their bounds", rule


def fidelity_verdicts(
    record: Record, policy: Policy, figures: tuple[TierFidelityFigures, ...] | None = None
) -> list[Verdict]:
    """ "Is the tier faithful to its reference?" for every judged tier (never a gate: a quantization trade-off)."""
    out = []
    for f in tier_fidelity(record) if figures is None else figures:
        role = record.tiers[f.tier].role if f.tier in record.tiers else "default"
        outcome, answer, rule = _judge(f, policy, role)
        g = f.greedy
        measured = (
            f"against {f.reference}: mean KLD {g.kld_mean.value:.3g} [{g.kld_mean.lo:.3g}, {g.kld_mean.hi:.3g}]; "
            f"same top-1 {g.same_top1.value:.2%} [{g.same_top1.lo:.2%}, {g.same_top1.hi:.2%}]; "
            f"PPL ratio {ci(f.ppl_ratio, 3)}"
        )
        question = "Is the tier faithful to its full-precision reference?"
        value = g.kld_mean
        out.append(
            Verdict(
                "fidelity", question, f.tier, f.tier, outcome, answer, rule, measured, value.value, value.lo, value.hi
            )
        )
    return out
