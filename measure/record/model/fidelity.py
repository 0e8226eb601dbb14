"""The fidelity pass as the record stores it: per row, how far each quantized tier's next-token distribution lies
from its full-precision reference's, teacher-forced on the same token streams.

Two streams per row: the reference's own greedy continuation (plus end-of-sequence: what the tier would be asked
to reproduce) and the golden row's expected output (absolute quality). Per row the sums a bootstrap over rows
needs; per tier the KL divergence's distribution over every position as exact order statistics at
:data:`QUANTILES` and a histogram of log10 KLD (:data:`HIST_PER_DECADE` bins a decade from 10^:data:`HIST_LOW`;
bin 0 holds what lies below, zeros apart). What they add up to is :mod:`measure.analysis.fidelity`'s.

Each class reads (``from_dict``) and writes (``to_dict``) its part; the run fills the parts row by row through the
builders below (:func:`fidelity_part` and the rest), so a figure is added to the record in this one module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from measure.record.model.convert import ints, vector

Part = dict[str, Any]

QUANTILES = (0.5, 0.9, 0.95, 0.99, 0.999, 1.0)
"""The KLD quantiles every tier's and pair's record keeps (numpy's linear interpolation): median, p90, p95, p99,
p99.9 and the maximum, as llama.cpp's ``--kl-divergence`` prints them."""
HIST_PER_DECADE = 4
HIST_LOW = -12
"""log10 of the histogram's lowest edge (bin 0 also holds every positive KLD below it)."""
DIGITS = 7
"""Significant digits every stored float keeps: a float32's worth, printed short."""


def _short(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def _floats(a: np.ndarray) -> list[float]:
    return [float(x) for x in a]


@dataclass(frozen=True)
class FidelityReference:
    """A full-precision tier other tiers are judged against: its streams' positions and its own NLL."""

    name: str
    path: str
    precision: str
    in_run: bool
    """A tier of the run itself (its fingerprint is in ``tiers``), or loaded for this pass only."""
    sha256: str
    """Over its files' names and sha256, so two records can tell whether they judged against the same artifact."""
    greedy_positions: tuple[int, ...]
    """Per golden row: positions scored on its own greedy path (its tokens and end-of-sequence)."""
    golden_positions: tuple[int, ...]
    """Per golden row: positions scored on the expected output (its tokens and end-of-sequence)."""
    golden_nll: np.ndarray
    """Per golden row: -log p of the expected output's tokens (and end-of-sequence) under the reference."""

    @classmethod
    def from_dict(cls, r: Part) -> FidelityReference:
        return cls(
            r["name"],
            r["path"],
            r["precision"],
            bool(r["in_run"]),
            r["sha256"],
            ints(r["greedy_positions"]),
            ints(r["golden_positions"]),
            vector(r["golden_nll"]),
        )

    def to_dict(self) -> Part:
        return {
            "name": self.name,
            "path": self.path,
            "precision": self.precision,
            "in_run": self.in_run,
            "sha256": self.sha256,
            "greedy_positions": list(self.greedy_positions),
            "golden_positions": list(self.golden_positions),
            "golden_nll": _floats(self.golden_nll),
        }


@dataclass(frozen=True)
class PathFidelity:
    """One tier (or drafter) against its reference (or verifier) on a stream: per-row sums and the distribution."""

    kld: np.ndarray
    """Per row: the sum over its positions of KL(P_ref || P_tier), nats."""
    same_top1: tuple[int, ...]
    """Per row: positions where both pick the same top token."""
    top5: int
    """Over every position: the reference's five likeliest tokens found among the tier's five, summed."""
    dp: float
    dp_sq: float
    """Over every position: sum of p_tier - p_ref of the reference's top token, and of its square."""
    quantiles: tuple[float, ...] = ()
    """KLD at :data:`QUANTILES` over every position (empty: no position)."""
    zeros: int = 0
    """Positions whose KLD is exactly 0 (identical distributions)."""
    hist: tuple[tuple[int, int], ...] = ()
    """(bin, count) of the positive KLDs' log10 histogram, bins with a count only."""

    @classmethod
    def from_dict(cls, d: Part) -> PathFidelity:
        return cls(
            kld=vector(d["kld"]),
            same_top1=ints(d["same_top1"]),
            top5=int(d["top5"]),
            dp=float(d["dp"]),
            dp_sq=float(d["dp_sq"]),
            quantiles=tuple(float(x) for x in d.get("quantiles", ())),
            zeros=int(d.get("zeros", 0)),
            hist=tuple((int(b), int(c)) for b, c in d.get("hist", ())),
        )

    def to_dict(self) -> Part:
        return {
            "kld": _floats(self.kld),
            "same_top1": list(self.same_top1),
            "top5": self.top5,
            "dp": self.dp,
            "dp_sq": self.dp_sq,
            "quantiles": list(self.quantiles),
            "zeros": self.zeros,
            "hist": [[b, c] for b, c in self.hist],
        }


@dataclass(frozen=True)
class TierFidelity:
    tier: str
    reference: str
    source: str
    """How the reference was found: ``config`` (the tier's ``reference`` key), ``quantization.from`` (tier.json) or
    ``graph`` (the run's full-precision tier whose weights the tier's graphs hold)."""
    greedy: PathFidelity
    """On the reference's greedy path."""
    golden_kld: float
    golden_same_top1: int
    golden_nll: np.ndarray
    """Per golden row: -log p of the expected output under this tier (the reference's is on its FidelityReference)."""

    @classmethod
    def from_dict(cls, t: Part) -> TierFidelity:
        return cls(
            t["tier"],
            t["reference"],
            t["source"],
            PathFidelity.from_dict(t["greedy"]),
            float(t["golden_kld"]),
            int(t["golden_same_top1"]),
            vector(t["golden_nll"]),
        )

    def to_dict(self) -> Part:
        return {
            "tier": self.tier,
            "reference": self.reference,
            "source": self.source,
            "greedy": self.greedy.to_dict(),
            "golden_kld": self.golden_kld,
            "golden_same_top1": self.golden_same_top1,
            "golden_nll": _floats(self.golden_nll),
        }


@dataclass(frozen=True)
class PairFidelity:
    """A speculative pair's drafter against its verifier, on the verifier's greedy path."""

    drafter: str
    verifier: str
    positions: tuple[int, ...]
    greedy: PathFidelity

    @classmethod
    def from_dict(cls, p: Part) -> PairFidelity:
        return cls(p["drafter"], p["verifier"], ints(p["positions"]), PathFidelity.from_dict(p["greedy"]))

    def to_dict(self) -> Part:
        return {
            "drafter": self.drafter,
            "verifier": self.verifier,
            "positions": list(self.positions),
            "greedy": self.greedy.to_dict(),
        }


@dataclass(frozen=True)
class Fidelity:
    references: dict[str, FidelityReference]
    """By name (the record lists them)."""
    tiers: tuple[TierFidelity, ...]
    pairs: tuple[PairFidelity, ...]
    unjudged: tuple[tuple[str, str], ...] = ()
    """(tier, why) for each quantized tier the run found no reference for (the record's ``tier``, ``reason``)."""

    def tier(self, name: str) -> TierFidelity | None:
        return next((t for t in self.tiers if t.tier == name), None)

    @classmethod
    def from_dict(cls, d: Part | None) -> Fidelity | None:
        """None for records without a fidelity pass (every record before schema v4)."""
        if not d:
            return None
        references = {r["name"]: FidelityReference.from_dict(r) for r in d["references"]}
        return cls(
            references,
            tuple(TierFidelity.from_dict(t) for t in d["tiers"]),
            tuple(PairFidelity.from_dict(p) for p in d["pairs"]),
            tuple((u["tier"], u["reason"]) for u in d.get("unjudged", ())),
        )

    def to_dict(self) -> Part:
        part: Part = {
            "references": [r.to_dict() for r in self.references.values()],
            "tiers": [t.to_dict() for t in self.tiers],
            "pairs": [p.to_dict() for p in self.pairs],
        }
        return part | ({"unjudged": [unjudged_part(t, why) for t, why in self.unjudged]} if self.unjudged else {})


# ------------------------------------------------------------------ the parts a run fills row by row


def fidelity_part() -> Part:
    return {"references": [], "tiers": [], "pairs": []}


def unjudged_part(tier: str, reason: str) -> Part:
    """A quantized tier the run found no reference for (``fidelity.unjudged``)."""
    return {"tier": tier, "reason": reason}


def reference_part(name: str, path: str, precision: str, in_run: bool, sha256: str) -> Part:
    """A reference as it starts: what it is, no row scored yet (:func:`add_reference_row` adds them)."""
    return FidelityReference(name, path, precision, in_run, sha256, (), (), vector([])).to_dict()


def add_reference_row(part: Part, greedy_positions: int, golden_positions: int, golden_nll: float) -> None:
    part["greedy_positions"].append(int(greedy_positions))
    part["golden_positions"].append(int(golden_positions))
    part["golden_nll"].append(_short(golden_nll))


def divergence_part() -> Part:
    """A stream's sums as they start; :func:`close_divergence` adds the distribution once every row is in."""
    return {"kld": [], "same_top1": [], "top5": 0, "dp": 0.0, "dp_sq": 0.0}


def add_divergence_row(part: Part, kld: np.ndarray, same_top1: np.ndarray, top5: np.ndarray, dp: np.ndarray) -> None:
    """One row's positions (arrays of its length) into the per-row sums and the running totals."""
    part["kld"].append(_short(float(kld.sum())))
    part["same_top1"].append(int(same_top1.sum()))
    part["top5"] += int(top5.sum())
    part["dp"] = _short(part["dp"] + float(dp.sum()))
    part["dp_sq"] = _short(part["dp_sq"] + float(np.square(dp).sum()))


def close_divergence(part: Part, kld: np.ndarray) -> None:
    """The distribution of every position's KLD: exact quantiles, the zeros, a log10 histogram."""
    positive = kld[kld > 0]
    part["quantiles"] = [_short(float(v)) for v in np.quantile(kld, QUANTILES)] if kld.size else []
    part["zeros"] = int(kld.size - positive.size)
    bins = np.maximum(0, np.floor((np.log10(positive) - HIST_LOW) * HIST_PER_DECADE)).astype(np.int64)
    found, counts = np.unique(bins, return_counts=True)
    part["hist"] = [[int(b), int(c)] for b, c in zip(found, counts, strict=True)]


def tier_fidelity_part(tier: str, reference: str, source: str) -> Part:
    return {
        "tier": tier,
        "reference": reference,
        "source": source,
        "greedy": divergence_part(),
        "golden_kld": 0.0,
        "golden_same_top1": 0,
        "golden_nll": [],
    }


def add_golden_row(part: Part, kld: np.ndarray, same_top1: np.ndarray, nll: np.ndarray) -> None:
    part["golden_kld"] = _short(part["golden_kld"] + float(kld.sum()))
    part["golden_same_top1"] += int(same_top1.sum())
    part["golden_nll"].append(_short(float(nll.sum())))


def pair_fidelity_part(drafter: str, verifier: str) -> Part:
    return {"drafter": drafter, "verifier": verifier, "positions": [], "greedy": divergence_part()}
