"""The onnxruntime-node leg's driver: the same tier folders and framings, decoded by another runtime.

A decode that is stable under Python onnxruntime can flip under onnxruntime-node
on the same artifacts, because the runtimes' kernel paths differ. This module
describes a loaded tier to ``node/framing.mjs`` (graph files and the input and
output names :mod:`measure.engine.seq2seq.layouts` discovered, so layouts are understood in one
place), runs it in a ``node`` subprocess and returns its facts. A missing Node.js
or onnxruntime-node is a :class:`LegUnavailable` with the reason, never a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.tier import Tier
from measure.suites.legs.contract import LegFailed, LegSkipped, LegUnavailable

RUNTIME = "onnxruntime-node"
SCRIPT = Path(__file__).resolve().parent / "node" / "framing.mjs"
_NOT_INSTALLED = 3
"""framing.mjs's exit status when onnxruntime-node cannot be found."""


@dataclass(frozen=True)
class NodeRow:
    """One golden row as the Node leg needs it: source ids, the Python leg's prefix, the decode cap.

    The prefix is ``[start, *output ids]``: a seq2seq tier's decoder start token, or a decoder-only tier's
    prompt place (:func:`prefix`), where the whole prompt is fed as one call.
    """

    source_ids: list[int]
    prefix: list[int]
    max_new_tokens: int
    line: int = 0
    """The golden row's line and source text: the browser page shows them (as text) while it decodes."""
    source: str = ""


def prefix(tier: Tier, source_ids: list[int], output_ids: list[int]) -> list[int]:
    """The prefix a leg replays: the decoder start (seq2seq) or the prompt's last id (decoder-only: the prompt's
    place, fed whole in one call) before the Python leg's output ids."""
    start = source_ids[-1] if tier.kind == "causal" else tier.special.decoder_start
    return [start, *output_ids]


def graph_files(described: dict[str, Any]) -> list[str]:
    """Every graph file a described tier (:func:`describe`) opens, encoder first."""
    encoder = [described["encoder"]["file"]] if "encoder" in described else []
    return [*encoder, *described["decoder"]["files"]]


def find_node(executable: str = "node") -> str:
    """The Node.js executable's path, or :class:`LegSkipped` saying it is not on PATH."""
    found = shutil.which(executable)
    if found is None:
        raise LegUnavailable(f"Node.js ({executable!r}) was not found on PATH")
    return found


def describe(tier: Tier) -> dict[str, Any]:
    """What framing.mjs needs to call the tier's graphs: each graph describes itself; shape, special ids."""
    shape = tier.shape
    if shape.kv_dtype is not np.float32:
        raise LegSkipped(
            f"{tier.name}: the node leg reads float32 caches; this tier's cache is {shape.kv_dtype.__name__}"
        )
    if tier.kind == "causal":  # one decoder (its graphs in call order), the prompt fed as the first call
        return {
            "kind": "causal",
            "folder": str(tier.path.resolve()),
            "session": tier.config.to_dict(),
            "decoder": tier.describe_graphs()["decoder"],
            "shape": {"layers": shape.layers, "heads": shape.heads, "head_dim": shape.head_dim},
            "special": {"eos": tier.special.eos, "decoder_start": None},
        }
    return {
        "kind": "seq2seq",
        "folder": str(tier.path.resolve()),
        "session": tier.config.to_dict(),
        **tier.describe_graphs(),
        "shape": {"layers": shape.layers, "heads": shape.heads, "head_dim": shape.head_dim},
        "special": {"eos": tier.special.eos, "decoder_start": tier.special.decoder_start},
    }


def request_rows(
    rows: list[NodeRow], blocks: list[int | str], timing_repeats: int, prefill_rows: int | None = None
) -> dict[str, Any]:
    """The part of a request framing-core.mjs reads besides the tier: rows, blocks, timed passes; ``prefill_rows``:
    a decoder-only tier's prompt framings on the first rows only (a budget's cut; all rows where None)."""
    limit = {} if prefill_rows is None else {"prefill_rows": prefill_rows}
    return limit | {
        "blocks": blocks,
        "rows": [
            {
                "source_ids": r.source_ids,
                "prefix": r.prefix,
                "max_new_tokens": r.max_new_tokens,
                "line": r.line,
                "source": r.source,
            }
            for r in rows
        ],
        "timing_repeats": timing_repeats,
    }


def run_tier(
    tier: Tier,
    rows: list[NodeRow],
    blocks: list[int | str],
    *,
    node: str = "node",
    timeout_s: float = 900.0,
    first_row_logits: bool = False,
    timing_repeats: int = 0,
    described: dict[str, Any] | None = None,
    prefill_rows: int | None = None,
) -> dict[str, Any]:
    """Framing facts and greedy decodes of one tier under onnxruntime-node.

    ``first_row_logits`` also returns the single-step logits of the first row, the
    figure a test holds against Python onnxruntime's; ``timing_repeats`` times that many
    greedy passes over the rows after the one that records the decodes. ``described``: :func:`describe`'s answer
    taken while the tier's sessions were loaded (Python may have let go of them since).
    """
    executable = find_node(node)
    request = (described or describe(tier)) | request_rows(rows, blocks, timing_repeats, prefill_rows)
    request["return_first_row_logits"] = first_row_logits
    try:
        done = subprocess.run(
            [executable, str(SCRIPT)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=os.environ.copy(),
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise LegFailed(f"{tier.name}: the node leg took longer than {timeout_s:g} s") from exc
    except OSError as exc:
        raise LegUnavailable(f"Node.js ({executable}) cannot be started: {exc.strerror}") from exc
    if done.returncode == _NOT_INSTALLED:
        raise LegUnavailable(_answer(done.stdout, tier).get("reason", "onnxruntime-node is not installed"))
    if done.returncode != 0:
        try:
            reason = _answer(done.stdout, tier).get("reason")
        except LegFailed:
            reason = None
        tail = reason or " | ".join(done.stderr.strip().splitlines()[-3:]) or f"exit status {done.returncode}"
        raise LegFailed(f"{tier.name}: {RUNTIME} failed: {tail}")
    answer = _answer(done.stdout, tier)
    if len(answer.get("output_ids", ())) != len(rows) or len(answer.get("blocks", ())) != len(blocks):
        raise LegFailed(
            f"{tier.name}: node {SCRIPT.name} answered {len(answer.get('output_ids', ()))} rows and "
            f"{len(answer.get('blocks', ()))} blocks; expected {len(rows)} and {len(blocks)}"
        )
    return answer


def _answer(stdout: str, tier: Tier) -> dict[str, Any]:
    try:
        answer = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else None
    except json.JSONDecodeError as exc:
        raise LegFailed(f"{tier.name}: node {SCRIPT.name} wrote something that is not JSON ({exc.msg})") from exc
    if not isinstance(answer, dict):
        raise LegFailed(f"{tier.name}: node {SCRIPT.name} wrote no answer; expected one JSON object on stdout")
    return answer
