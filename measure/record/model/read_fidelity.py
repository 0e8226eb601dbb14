"""The record's ``fidelity`` block as typed views (:mod:`measure.record.model.fidelity`)."""

from __future__ import annotations

from typing import Any

from measure.record.model.convert import ints, vector
from measure.record.model.fidelity import Fidelity, FidelityReference, PairFidelity, PathFidelity, TierFidelity


def _path(d: dict[str, Any]) -> PathFidelity:
    return PathFidelity(
        kld=vector(d["kld"]),
        same_top1=ints(d["same_top1"]),
        top5=int(d["top5"]),
        dp=float(d["dp"]),
        dp_sq=float(d["dp_sq"]),
        quantiles=tuple(float(x) for x in d.get("quantiles", ())),
        zeros=int(d.get("zeros", 0)),
        hist=tuple((int(b), int(c)) for b, c in d.get("hist", ())),
    )


def fidelity(d: dict[str, Any] | None) -> Fidelity | None:
    """None for records without a fidelity pass (every record before schema v4)."""
    if not d:
        return None
    references = {
        r["name"]: FidelityReference(
            r["name"],
            r["path"],
            r["precision"],
            bool(r["in_run"]),
            r["sha256"],
            ints(r["greedy_positions"]),
            ints(r["golden_positions"]),
            vector(r["golden_nll"]),
        )
        for r in d["references"]
    }
    tiers = tuple(
        TierFidelity(
            t["tier"],
            t["reference"],
            t["source"],
            _path(t["greedy"]),
            float(t["golden_kld"]),
            int(t["golden_same_top1"]),
            vector(t["golden_nll"]),
        )
        for t in d["tiers"]
    )
    pairs = tuple(
        PairFidelity(p["drafter"], p["verifier"], ints(p["positions"]), _path(p["greedy"])) for p in d["pairs"]
    )
    unjudged = tuple((u["tier"], u["reason"]) for u in d.get("unjudged", ()))
    return Fidelity(references, tiers, pairs, unjudged)
