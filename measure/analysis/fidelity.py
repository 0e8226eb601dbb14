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

from collections.abc import Callable, Sized
from dataclasses import dataclass

import numpy as np

from measure.analysis.resample import resample_indices, resampled_sums
from measure.analysis.stats import Estimate, percentile_interval
from measure.analysis.timings import Bootstrap, bootstrap_of
from measure.analysis.verdict import Verdict, against, ci
from measure.policy import Policy
from measure.record.model import Fidelity, FidelityReference, PathFidelity, Record
from measure.record.model.fidelity import QUANTILES

MIN_ROWS = 5
"""Rows below which a bootstrap over rows is no interval (2 rows resample to 3 sums; 4 to 35): the figures are
stated, the verdict is inconclusive, and no page prints a width that is not there."""


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
    rows: int = 0
    """Golden rows the figures rest on (the bootstrap's unit)."""
    flipped_rows: int = 0
    """Rows in which the tier's top-1 departs from the reference's at least once along the path: the rows whose
    greedy output the tier would change (the "flips" of Dutta et al., 2024, at the row, not the answer)."""

    @property
    def flip_rate(self) -> float:
        """Share of rows with at least one flipped top-1 decision."""
        return self.flipped_rows / self.rows if self.rows else float("nan")

    @property
    def interval(self) -> bool:
        """Whether the rows are enough for the intervals to be intervals (:data:`MIN_ROWS`)."""
        return self.rows >= MIN_ROWS


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


def _shares(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """sum(num) / sum(den) along the last axis. Where the plain sum overflows (rows of huge finite sums, such as a
    record's 1e308s), each row is divided by the total before the sum: a mean of finite values is finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        num_sums, den_sums = num.sum(axis=-1), den.sum(axis=-1)
    return _shares_of_sums(num_sums, den_sums, lambda: num)


def _shares_of_sums(num_sums: np.ndarray, den_sums: np.ndarray, num: Callable[[], np.ndarray]) -> np.ndarray:
    """:func:`_shares` from the sums along the last axis; ``num`` gives the values summed, needed only where a
    plain sum overflowed."""
    total = np.maximum(den_sums, 1e-300)
    with np.errstate(over="ignore", invalid="ignore"):
        plain = np.atleast_1d(num_sums / total)
    over = ~np.isfinite(plain)
    if over.any():
        plain[over] = (num().reshape(plain.size, -1)[over] / total.reshape(-1)[over, None]).sum(axis=-1)
    return plain


@dataclass(frozen=True)
class _Draws:
    """The bootstrap over ``rows`` golden rows (the record's seed and resamples)."""

    seed: int
    resamples: int
    rows: int

    @property
    def idx(self) -> np.ndarray:
        return resample_indices(self.seed, self.resamples, self.rows)

    def gathered(self, v: np.ndarray) -> np.ndarray:
        return v[self.idx]

    def sums(self, v: np.ndarray) -> np.ndarray:
        """``v[idx].sum(axis=-1)`` as one product with the draw counts (:func:`resampled_sums`): whole numbers
        (positions, counts) exactly below 2**53, other floats up to the order of the additions (their last bits);
        a row that is not finite is gathered, so it spoils only the resamples that drew it."""
        with np.errstate(over="ignore", invalid="ignore"):  # a sum past a float's range is infinite, as before
            return resampled_sums(v, self.seed, self.resamples)


def _ratio(num: np.ndarray, den: np.ndarray, draws: _Draws, den_sums: np.ndarray | None = None) -> Estimate:
    """sum(num) / sum(den) with a percentile interval from resampling rows; NaN throughout over no position.
    ``den_sums``: ``den``'s resampled sums, when the caller has them."""
    if not den.sum():
        return Estimate(float("nan"), float("nan"), float("nan"))
    value = float(_shares(num, den)[0])
    den_sums = draws.sums(den) if den_sums is None else den_sums
    boot = _shares_of_sums(draws.sums(num), den_sums, lambda: draws.gathered(num))
    lo, hi = percentile_interval(boot)
    return Estimate(value, lo, hi)


def _path(p: PathFidelity, positions: np.ndarray, draws: _Draws, sums: np.ndarray | None = None) -> PathFigures:
    """``sums``: ``positions``' resampled sums, when the caller has them (a reference's, shared by its tiers)."""
    n = int(positions.sum())
    same = np.asarray(p.same_top1[: positions.size], dtype=float)
    position_sums = (draws.sums(positions) if sums is None else sums) if n else None
    return PathFigures(
        positions=n,
        kld_mean=_ratio(np.asarray(p.kld[: positions.size]), positions, draws, position_sums),
        kld_quantiles=dict(zip(QUANTILES, p.quantiles, strict=False)),
        same_top1=_ratio(same, positions, draws, position_sums),
        top5=p.top5 / (5 * n) if n else float("nan"),
        rms_dp=float(np.sqrt(p.dp_sq / n)) if n else float("nan"),
        mean_dp=p.dp / n if n else float("nan"),
        hist=p.hist,
        zeros=p.zeros,
        rows=int(positions.size),
        flipped_rows=int(np.sum(same < positions)),
    )


def _log_ratio(tier_nll: np.ndarray, ref_nll: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """(sum NLL_tier - sum NLL_ref) / positions along the last axis; where a sum overflows, from each row's
    difference (finite for finite NLLs) instead."""
    with np.errstate(over="ignore", invalid="ignore"):
        sums = tier_nll.sum(axis=-1), ref_nll.sum(axis=-1), positions.sum(axis=-1)
    return _log_ratio_of_sums(*sums, lambda: (tier_nll, ref_nll, positions))


def _log_ratio_of_sums(
    tier_sums: np.ndarray,
    ref_sums: np.ndarray,
    position_sums: np.ndarray,
    rows: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> np.ndarray:
    """:func:`_log_ratio` from the sums; ``rows`` gives the values summed, needed only where a sum overflowed."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        plain = np.atleast_1d((tier_sums - ref_sums) / position_sums)
    over = ~np.isfinite(plain)
    if over.any():
        tier_nll, ref_nll, positions = rows()
        shape = (plain.size, -1)
        plain[over] = _shares((tier_nll - ref_nll).reshape(shape)[over], positions.reshape(shape)[over])
    return plain


def _ppl_ratio(
    tier_nll: np.ndarray,
    ref_nll: np.ndarray,
    positions: np.ndarray,
    draws: _Draws,
    ref_sums: np.ndarray,
    position_sums: np.ndarray,
) -> Estimate:
    """exp((sum NLL_tier - sum NLL_ref) / positions), resampled over rows; past a float's range, infinite; NaN
    throughout over no position. ``ref_sums``, ``position_sums``: the reference's resampled NLL and position sums
    (shared by its tiers)."""
    if not positions.sum():
        return Estimate(float("nan"), float("nan"), float("nan"))
    with np.errstate(over="ignore"):
        value = float(np.exp(_log_ratio(tier_nll, ref_nll, positions)[0]))
        boot = np.exp(
            _log_ratio_of_sums(
                draws.sums(tier_nll),
                ref_sums,
                position_sums,
                lambda: (draws.gathered(tier_nll), draws.gathered(ref_nll), draws.gathered(positions)),
            )
        )
    lo, hi = percentile_interval(boot)
    return Estimate(value, lo, hi)


def _perplexity(nll: np.ndarray, positions: np.ndarray) -> float:
    """exp(mean NLL per position); infinite past a float's range, NaN where no position was scored."""
    if not positions.sum():
        return float("nan")
    with np.errstate(over="ignore"):
        return float(np.exp(_shares(nll, positions)[0]))


def _per_position(total: float, positions: float) -> float:
    """A golden-output total per position: NaN where no position was scored."""
    return total / positions if positions else float("nan")


def _rows(path: PathFidelity, *per_row: Sized) -> int:
    """The rows every per-row array holds: a run stopped during the pass leaves the tier it was judging (and the
    reference it was scoring beside it) a row or more short."""
    return min(len(path.kld), len(path.same_top1), *map(len, per_row))


def tier_figures(fid: Fidelity, b: Bootstrap) -> tuple[TierFidelityFigures, ...]:
    """Every judged tier's figures from a fidelity block (a record's, or ``measure fidelity``'s own)."""
    out = []
    shared: dict[tuple[str, int], tuple[np.ndarray, ...]] = {}  # a reference's resampled sums, for all its tiers
    for t in fid.tiers:
        ref: FidelityReference = fid.references[t.reference]
        rows = _rows(t.greedy, t.golden_nll, ref.greedy_positions, ref.golden_positions, ref.golden_nll)
        greedy_pos = np.asarray(ref.greedy_positions[:rows], dtype=float)
        golden_pos = np.asarray(ref.golden_positions[:rows], dtype=float)
        ref_nll, tier_nll = np.asarray(ref.golden_nll[:rows]), np.asarray(t.golden_nll[:rows])
        draws = _Draws(b.seed, b.resamples, rows)
        if (t.reference, rows) not in shared:
            shared[t.reference, rows] = tuple(map(draws.sums, (ref_nll, greedy_pos, golden_pos)))
        ref_sums, greedy_sums, golden_sums = shared[t.reference, rows]
        n_golden = golden_pos.sum()
        out.append(
            TierFidelityFigures(
                tier=t.tier,
                reference=t.reference,
                reference_in_run=ref.in_run,
                source=t.source,
                greedy=_path(t.greedy, greedy_pos, draws, greedy_sums),
                ppl_ref=_perplexity(ref_nll, golden_pos),
                ppl_tier=_perplexity(tier_nll, golden_pos),
                ppl_ratio=_ppl_ratio(tier_nll, ref_nll, golden_pos, draws, ref_sums, golden_sums),
                golden_kld_mean=_per_position(t.golden_kld, n_golden),
                golden_same_top1=_per_position(t.golden_same_top1, n_golden),
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
        positions = np.asarray(p.positions[: _rows(p.greedy, p.positions)], dtype=float)
        measured = acceptance.get((p.drafter, p.verifier))
        out.append(
            PairFidelityFigures(
                p.drafter,
                p.verifier,
                _path(p.greedy, positions, _Draws(b.seed, b.resamples, positions.size)),
                measured.runtime.ratio if measured else None,
            )
        )
    return tuple(out)


def judge_figures(figures: TierFidelityFigures, policy: Policy, role: str) -> tuple[str, str, str]:
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
    if not g.interval:
        rule += f"; at least {MIN_ROWS} golden rows for an interval"
        return "inconclusive", f"inconclusive: {g.rows} rows are too few for an interval", rule
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
    figures = tier_fidelity(record) if figures is None else figures  # computed once: the unjudged read them too
    for f in figures:
        role = record.tiers[f.tier].role if f.tier in record.tiers else "default"
        outcome, answer, rule = judge_figures(f, policy, role)
        g = f.greedy
        measured = (
            f"against {f.reference}: mean KLD {g.kld_mean.value:.3g} [{g.kld_mean.lo:.3g}, {g.kld_mean.hi:.3g}]; "
            f"same top-1 {g.same_top1.value:.2%} [{g.same_top1.lo:.2%}, {g.same_top1.hi:.2%}]; "
            f"PPL ratio {ci(f.ppl_ratio, 3)}"
        )
        question = QUESTION
        value = g.kld_mean
        out.append(
            Verdict(
                "fidelity", question, f.tier, f.tier, outcome, answer, rule, measured, value.value, value.lo, value.hi
            )
        )
    return out + unjudged_verdicts(record, {f.tier for f in figures})


FULL_PRECISION = ("fp32", "fp16")
QUESTION = "Is the tier faithful to its full-precision reference?"


def unjudged_why(record: Record, tier: str) -> str | None:
    """Why a quantized tier of a run that measured framing carries no fidelity figures (None: it is full precision,
    judged, or the framing suite did not run): the reference the run could not find, or the pass switched off."""
    entry = record.tiers.get(tier)
    if entry is None or entry.precision in FULL_PRECISION or record.framing is None:
        return None
    if record.fidelity is not None and record.fidelity.tier(tier) is not None:
        return None
    if record.fidelity is None:
        return "the run had no fidelity pass (`[framing] fidelity = false`, or a record from before schema v4)"
    said = dict(record.fidelity.unjudged)
    return said.get(tier) or "no reference: it was not judged"


def unjudged_verdicts(record: Record, judged: set[str]) -> list[Verdict]:
    """An unjudged quantized tier is said to be unjudged, never left to read as faithful by silence."""
    out = []
    for name in record.tiers:
        why = None if name in judged else unjudged_why(record, name)
        if why is None:
            continue
        rule = 'a quantized tier is judged against its full-precision reference: `reference = "TIER"` on its [[tiers]]'
        out.append(
            Verdict("fidelity", QUESTION, name, name, "inconclusive", f"not judged: {why}", rule, "not measured")
        )
    return out
