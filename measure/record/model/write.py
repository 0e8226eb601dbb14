"""The parts a run writes, spelled here beside their reader: the suites build a record through these, never by key.

A run fills its record in place and saves it after every case, so the parts are plain dicts at this edge
(``to_dict`` and the small builders below); the key names and their order are the record format's, the
same the reader (:mod:`measure.record.model.read`) takes apart and the JSON Schema describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Part = dict[str, Any]


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


def tier_part(
    role: str,
    path: str,
    kind: str,
    prompt: str | None,
    fingerprint: Part,
    decode_limit: Part | None = None,
    traffic: Part | None = None,
    model: str | None = None,
) -> Part:
    """One entry of ``tiers``: the config's role, the artifact's folder, its model kind (``seq2seq`` or
    ``causal``) with a decoder-only tier's prompt template, and its fingerprint; ``decode_limit``
    (:func:`decode_limit_part`) where the run states it; ``traffic``: what one decode step reads, by part
    (the engine's ``StepTraffic.to_dict()``: ``graph``, ``weights_bytes``, ``embedding_bytes``,
    ``kv_bytes_per_position``, ``cross_bytes_per_source_token``, ``weights``); ``model``: the model it exports, where
    the config or its tier.json names one."""
    part = {"role": role, "path": path, "kind": kind, "prompt": prompt, "fingerprint": fingerprint}
    part |= {"model": model} if model is not None else {}
    part |= {"decode_limit": decode_limit} if decode_limit is not None else {}
    return part | ({"traffic": traffic} if traffic is not None else {})


def decode_limit_part(max_new_tokens: int | None, source: str) -> Part:
    """The output cap the wall-clock suite's decodes of a tier take before the bounds of its positions, and where
    it comes from (``config``, ``generation_config.json``, ``tier.json``, ``default``; None: 4 x source + 8)."""
    return {"max_new_tokens": max_new_tokens, "from": source}


def pairing_part(job: str, side: str, partner_run_id: str, base_first: dict[str, list[bool]]) -> Part:
    """One side of a paired job; ``base_first`` is filled in place, per case, as the repeats run."""
    return {"id": job, "side": side, "partner_run_id": partner_run_id, "order": "alternating", "base_first": base_first}
