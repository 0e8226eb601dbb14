"""The parts a run writes, spelled here beside their reader: the suites build a record through these, never by key.

A run fills its record in place and saves it after every case, so the parts are plain dicts at this edge
(``to_dict`` and the small builders below); the key names and their order are the record format's, the
same the reader (:mod:`measure.record.model.read`) takes apart and the JSON Schema describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Part = dict[str, Any]

GREEDY = "greedy"
SPECULATIVE = "speculative"
"""A wall-clock case's ``kind``."""


def document(
    *,
    schema_version: int,
    tool_version: str,
    run_id: str,
    started_at: str,
    suites: Sequence[str],
    environment: Part,
    config: Part,
    golden: Part,
    tiers: Part,
) -> Part:
    """A record as it starts: ids, environment, config, golden rows, tier fingerprints; no suite measured yet."""
    return {
        "schema_version": schema_version,
        "tool": {"name": "measure", "version": tool_version},
        "run_id": run_id,
        "machine_id": environment["machine_id"],
        "started_at": started_at,
        "finished_at": None,
        "complete": False,
        "suites": list(suites),
        "environment": environment,
        "config": config,
        "golden": golden,
        "tiers": tiers,
        "wallclock": None,
        "framing": None,
    }


def golden_part(path: str, sha256: str, rows: int) -> Part:
    return {"path": path, "sha256": sha256, "rows": rows}


def tier_part(role: str, path: str, fingerprint: Part) -> Part:
    """One entry of ``tiers``: the config's role, the artifact's folder and its fingerprint."""
    return {"role": role, "path": path, "fingerprint": fingerprint}


def pairing_part(job: str, side: str, partner_run_id: str, base_first: dict[str, list[bool]]) -> Part:
    """One side of a paired job; ``base_first`` is filled in place, per case, as the repeats run."""
    return {"id": job, "side": side, "partner_run_id": partner_run_id, "order": "alternating", "base_first": base_first}


# ------------------------------------------------------------------ wall-clock


def wallclock_header(warmup: int, warmup_s: float, repeats: int, timed: str, fresh_sessions: bool) -> Part:
    """The wall-clock section as it starts: how it is measured, no case yet."""
    return {
        "warmup": warmup,
        "warmup_s": warmup_s,
        "repeats": repeats,
        "order": "interleaved",
        "timed": timed,
        "fresh_sessions": fresh_sessions,
        "repeats_done": 0,
        "cases": {},
    }


def greedy_facts(tier: str) -> Part:
    """What a greedy case measures (the case's key is the tier's name)."""
    return {"kind": GREEDY, "tier": tier}


def speculative_facts(pair: str, drafter: str, verifier: str, k: int) -> Part:
    """What a speculative case measures (keyed ``<pair>@k<k>``)."""
    return {"kind": SPECULATIVE, "pair": pair, "drafter": drafter, "verifier": verifier, "k": k}


@dataclass(frozen=True)
class SpeculativeCounts:
    """A speculative case's per-row counts of one pass, and its acceptance by draft position (k each)."""

    proposed: list[int]
    accepted: list[int]
    rounds: list[int]
    bonus: list[int]
    drafter_calls: list[int]
    verifier_calls: list[int]
    proposed_by_position: list[int]
    accepted_by_position: list[int]

    def to_dict(self) -> Part:
        return {
            "proposed": self.proposed,
            "accepted": self.accepted,
            "rounds": self.rounds,
            "bonus": self.bonus,
            "drafter_calls": self.drafter_calls,
            "verifier_calls": self.verifier_calls,
            "proposed_by_position": self.proposed_by_position,
            "accepted_by_position": self.accepted_by_position,
        }


@dataclass(frozen=True)
class CasePass:
    """One timed pass of a case over the golden rows: one value per row of each sample.

    ``drafter_run_s`` and ``verifier_run_s`` belong to speculative cases, ``first_token_s`` to greedy ones.
    """

    tokens: list[int]
    calls: list[int]
    wall_s: list[float]
    run_s: list[float]
    cpu_s: list[float]
    tokenize_s: list[float]
    drafter_run_s: list[float] | None = None
    verifier_run_s: list[float] | None = None
    first_token_s: list[float] | None = None

    @property
    def speculative(self) -> bool:
        return self.drafter_run_s is not None


def case_entry(facts: Part, first: CasePass, counts: SpeculativeCounts | None) -> Part:
    """A case's entry as its first pass makes it: what it measures, the per-row counts, empty sample lists."""
    entry = facts | {"tokens": first.tokens, "calls": first.calls, "outputs_stable": True}
    if counts is not None:
        entry |= counts.to_dict()
    entry |= {"wall_s": [], "run_s": [], "cpu_s": [], "tokenize_s": []}
    if first.speculative:
        entry |= {"drafter_run_s": [], "verifier_run_s": []}
    else:
        entry["first_token_s"] = []
    return entry


def append_pass(entry: Part, p: CasePass) -> None:
    """Add one pass's samples to a case's entry; a pass whose token counts differ marks its outputs unstable."""
    if p.tokens != entry["tokens"]:
        entry["outputs_stable"] = False
    for key in ("wall_s", "run_s", "cpu_s", "tokenize_s"):
        entry[key].append(getattr(p, key))
    optional = ("drafter_run_s", "verifier_run_s") if p.speculative else ("first_token_s",)
    for key in optional:
        entry[key].append(getattr(p, key))
