"""The fidelity block as a run writes it: references, tiers and pairs, filled row by row (see
:mod:`measure.record.model.fidelity` for what each field means)."""

from __future__ import annotations

from typing import Any

import numpy as np

from measure.record.model.fidelity import HIST_LOW, HIST_PER_DECADE, QUANTILES

Part = dict[str, Any]

DIGITS = 7
"""Significant digits every stored float keeps: a float32's worth, printed short."""


def _short(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def fidelity_part() -> Part:
    return {"references": [], "tiers": [], "pairs": []}


def unjudged_part(tier: str, reason: str) -> Part:
    """A quantized tier the run found no reference for (``fidelity.unjudged``)."""
    return {"tier": tier, "reason": reason}


def reference_part(name: str, path: str, precision: str, in_run: bool, sha256: str) -> Part:
    return {
        "name": name,
        "path": path,
        "precision": precision,
        "in_run": in_run,
        "sha256": sha256,
        "greedy_positions": [],
        "golden_positions": [],
        "golden_nll": [],
    }


def add_reference_row(part: Part, greedy_positions: int, golden_positions: int, golden_nll: float) -> None:
    part["greedy_positions"].append(int(greedy_positions))
    part["golden_positions"].append(int(golden_positions))
    part["golden_nll"].append(_short(golden_nll))


def divergence_part() -> Part:
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
