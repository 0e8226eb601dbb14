"""The framing part a run writes: legs, each tier's parity facts, quality and acceptance.

Spelled here beside their reader (:mod:`measure.record.model.read_framing`), in the record's key order. What
another runtime answers (its blocks, timing, execution) arrives from its leg's script already in the record's
shape and is stored as it came.
"""

from __future__ import annotations

from typing import Any

Part = dict[str, Any]

MEASURED = "measured"
"""A leg's or a leg tier's ``status`` when it ran; ``skipped`` or ``failed`` carry a ``reason``."""


def framing_part(blocks: list[int | str], python: Part) -> Part:
    """The framing section as it starts: the block sizes compared, the Python leg first, no acceptance yet."""
    return {"blocks": blocks, "legs": [python], "acceptance": []}


def python_leg(version: str | None) -> Part:
    """The Python onnxruntime leg: always there, at the environment's onnxruntime version."""
    return {"runtime": "onnxruntime", "language": "python", "version": version, "status": MEASURED, "tiers": []}


def runtime_leg(runtime: str, language: str, provider: str | None = None) -> Part:
    """A later leg (onnxruntime-node, -web) as it starts: version and host are filled once it answers.
    ``provider`` names a leg that differs from another of the same runtime only by it (onnxruntime-web's webgpu)."""
    leg: Part = {
        "runtime": runtime,
        "language": language,
        "version": None,
        "host": None,
        "status": MEASURED,
        "tiers": [],
    }
    return leg | ({"provider": provider} if provider else {})


def layer_facts(
    layer: int, key_mean: float, key_max: float, value_mean: float, value_max: float, key_abs: float, value_abs: float
) -> Part:
    """One layer's |single - batched| of present keys and values (mean and max) and their mean magnitude."""
    return {
        "layer": layer,
        "key_mean_abs_diff": key_mean,
        "key_max_abs_diff": key_max,
        "value_mean_abs_diff": value_mean,
        "value_max_abs_diff": value_max,
        "key_mean_abs": key_abs,
        "value_mean_abs": value_abs,
    }


def block_facts(
    block: int | str,
    layers: list[Part],
    present_max: float,
    logits_max: float,
    agree: int,
    total: int,
    first_divergent: list[int | None],
) -> Part:
    """One block size's comparison over the golden rows (``first_divergent``: one step or None per row)."""
    return {
        "block": block,
        "layers": layers,
        "present_max_abs_diff": present_max,
        "logits_max_abs_diff": logits_max,
        "argmax_agree": agree,
        "argmax_total": total,
        "first_divergent_step": first_divergent,
    }


def miss(line: int, source: str, expected: str, output: str) -> Part:
    return {"line": line, "input": source, "expected": expected, "output": output}


def quality_part(rows: int, exact: int, cer_mean: float, cer: list[float], misses: list[Part]) -> Part:
    return {"rows": rows, "exact": exact, "cer_mean": cer_mean, "cer": cer, "misses": misses}


def python_tier(
    tier: str,
    precision: str,
    blocks: list[Part],
    quality: Part,
    outputs: list[str],
    output_ids: list[list[int]],
    prefill: list[Part] | None = None,
) -> Part:
    """One tier on the Python leg: its parity blocks, quality against the golden rows, and its greedy decodes;
    a decoder-only tier adds its prefill blocks (the prompt token by token against blocks and whole)."""
    part = {"tier": tier, "precision": precision, "status": MEASURED, "blocks": blocks}
    if prefill is not None:
        part["prefill"] = prefill
    return part | {"quality": quality, "outputs": outputs, "output_ids": output_ids}


def leg_tier(tier: str, precision: str) -> Part:
    """One tier on a later leg, before it runs (a skip or failure adds ``status`` and ``reason``)."""
    return {"tier": tier, "precision": precision}


def leg_tier_measured(
    entry: Part, blocks: list[Part], output_ids: list[list[int]], outputs: list[str], divergence: list[Part]
) -> Part:
    """A later leg's tier that ran: the runtime's parity blocks, greedy decodes and where they leave Python's."""
    return entry | {
        "status": MEASURED,
        "blocks": blocks,
        "output_ids": output_ids,
        "outputs": outputs,
        "divergence": divergence,
    }


def differing(line: int, source: str, speculative: str, greedy: str) -> Part:
    """A row whose speculative output is not the verifier's greedy one."""
    return {"line": line, "input": source, "speculative": speculative, "greedy": greedy}


def acceptance_part(
    drafter: str,
    verifier: str,
    is_self: bool,
    k: int,
    probe: tuple[int, int],
    runtime: tuple[int, int],
    rows: int,
    differs: list[Part],
) -> Part:
    """One pair's acceptance, (accepted, proposed) by the probe and by the runtime, and its output preservation."""
    return {
        "drafter": drafter,
        "verifier": verifier,
        "self": is_self,
        "k": k,
        "probe": {"accepted": probe[0], "proposed": probe[1]},
        "runtime": {"accepted": runtime[0], "proposed": runtime[1]},
        "rows": rows,
        "preserved": rows - len(differs),
        "differing": differs,
    }


def stopped(status: str, reason: str) -> Part:
    """What a leg or a leg's tier that did not run (``skipped``) or broke (``failed``) adds: why."""
    return {"status": status, "reason": reason}


def divergence(found: Part, line: int, python_margin: float) -> Part:
    """A row where a runtime's decode leaves Python's (as its leg reported it), with the golden line and the
    margin Python onnxruntime had there."""
    return found | {"line": line, "python_margin": python_margin}
