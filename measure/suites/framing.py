"""Framing-parity suite: does feeding k tokens per call decode like feeding one?

For each tier and golden row: decode single-step, then replay the very same
token prefix in blocks of k (and the whole prefix in one call) and compare
present keys/values per layer, logits and argmax. Then acceptance three ways
for each speculative pair and self-pair (probe, runtime, self), output
preservation, and quality against the golden outputs. What is measured is
recorded; nothing is assumed about which precision should differ.

Each runtime is a *leg*: Python onnxruntime always; onnxruntime-node too
(:mod:`measure.node_leg`) on the very prefixes the Python leg decoded, plus
its own greedy decodes, so the page can set runtime against precision.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from measure import node_leg
from measure.artifacts import Tier
from measure.config import FramingConfig
from measure.decode import feed_prefix, greedy
from measure.golden import GoldenRows
from measure.graphs import Cache
from measure.speculative import SpeculativePair
from measure.stats import char_error_rate
from measure.suites import Progress, Save, no_progress


class _Diff:
    """Running sums for one block size of one tier: per-layer |single - batched| and magnitudes."""

    def __init__(self, layers: int) -> None:
        self.sum = np.zeros((layers, 2))
        self.max = np.zeros((layers, 2))
        self.mag = np.zeros((layers, 2))
        self.count = np.zeros(layers)
        self.logits_max = 0.0
        self.agree = 0
        self.total = 0
        self.first_divergent: list[int | None] = []

    def add(self, single: tuple[np.ndarray, Cache], batched: tuple[np.ndarray, Cache]) -> None:
        (ls, cs), (lb, cb) = single, batched
        for layer in range(len(self.count)):
            for part in (0, 1):  # key, value
                s, b = cs.self_kv[2 * layer + part], cb.self_kv[2 * layer + part]
                d = np.abs(s.astype(np.float64) - b)
                self.sum[layer, part] += d.sum()
                self.max[layer, part] = max(self.max[layer, part], float(d.max()))
                self.mag[layer, part] += np.abs(s).sum(dtype=np.float64)
            self.count[layer] += cs.self_kv[2 * layer].size
        self.logits_max = max(self.logits_max, float(np.abs(ls - lb).max()))
        same = ls.argmax(-1) == lb.argmax(-1)
        self.agree += int(same.sum())
        self.total += int(same.size)
        self.first_divergent.append(None if same.all() else int(np.argmin(same)))

    def facts(self, block: int | str) -> dict[str, Any]:
        layers = [
            {
                "layer": i,
                "key_mean_abs_diff": float(self.sum[i, 0] / self.count[i]),
                "key_max_abs_diff": float(self.max[i, 0]),
                "value_mean_abs_diff": float(self.sum[i, 1] / self.count[i]),
                "value_max_abs_diff": float(self.max[i, 1]),
                "key_mean_abs": float(self.mag[i, 0] / self.count[i]),
                "value_mean_abs": float(self.mag[i, 1] / self.count[i]),
            }
            for i in range(len(self.count))
        ]
        return {
            "block": block,
            "layers": layers,
            "present_max_abs_diff": float(self.max.max()),
            "logits_max_abs_diff": self.logits_max,
            "argmax_agree": self.agree,
            "argmax_total": self.total,
            "first_divergent_step": self.first_divergent,
        }


def tier_parity(tier: Tier, golden: GoldenRows, config: FramingConfig) -> dict[str, Any]:
    blocks: list[int | str] = [*config.k, *(["whole"] if config.whole_prefix else [])]
    diffs = {b: _Diff(tier.shape.layers) for b in blocks}
    outputs, output_ids = [], []
    for row in golden.rows:
        decoded = greedy(tier, row.input)
        outputs.append(decoded.text)
        output_ids.append([int(t) for t in decoded.tokens])
        ids = tier.source_ids(row.input)
        prefix = [tier.special.decoder_start, *decoded.tokens]
        single = feed_prefix(tier, ids, prefix, 1)
        for b in blocks:
            diffs[b].add(single, feed_prefix(tier, ids, prefix, len(prefix) if b == "whole" else int(b)))
    exact = sum(o == r.output for o, r in zip(outputs, golden.rows, strict=True))
    cer = [char_error_rate(o, r.output) for o, r in zip(outputs, golden.rows, strict=True)]
    misses = [
        {"line": r.line, "input": r.input, "expected": r.output, "output": o}
        for o, r in zip(outputs, golden.rows, strict=True)
        if o != r.output
    ]
    return {
        "tier": tier.name,
        "precision": tier.fingerprint().precision,
        "status": "measured",
        "blocks": [diffs[b].facts(b) for b in blocks],
        "quality": {"rows": len(golden), "exact": exact, "cer_mean": float(np.mean(cer)), "cer": cer, "misses": misses},
        "outputs": outputs,
        "output_ids": output_ids,
    }


class NodeLeg:
    """The onnxruntime-node leg of one run: tries each tier, stops trying once the runtime is missing."""

    def __init__(self, config: FramingConfig, blocks: list[int | str]) -> None:
        self.node = config.node
        self.blocks = blocks
        self.out: dict[str, Any] = {
            "runtime": node_leg.RUNTIME,
            "language": "node",
            "version": None,
            "host": None,
            "status": "measured",
            "tiers": [],
        }
        try:
            node_leg.find_node(self.node)
        except node_leg.LegSkipped as exc:
            self._skip(str(exc))

    def _skip(self, reason: str) -> None:
        self.out.update(status="skipped", reason=reason)

    def add(self, tier: Tier, golden: GoldenRows, python: dict[str, Any]) -> None:
        """Decode ``tier`` under Node on the Python leg's prefixes; a tier that cannot run says why."""
        if self.out["status"] == "skipped":
            return
        rows = []
        for row, out_ids in zip(golden.rows, python["output_ids"], strict=True):
            ids = tier.source_ids(row.input)
            rows.append(
                node_leg.NodeRow(ids, [tier.special.decoder_start, *out_ids], tier.default_max_new_tokens(len(ids)))
            )
        entry: dict[str, Any] = {"tier": tier.name, "precision": python["precision"]}
        try:
            answer = node_leg.run_tier(tier, rows, self.blocks, node=self.node)
        except node_leg.LegUnavailable as exc:
            self._skip(str(exc))
            return
        except (node_leg.LegSkipped, node_leg.LegFailed) as exc:
            status = "skipped" if isinstance(exc, node_leg.LegSkipped) else "failed"
            self.out["tiers"].append(entry | {"status": status, "reason": str(exc)})
            return
        self.out.update(version=answer.get("version"), host=answer.get("node") and f"Node.js {answer['node']}")
        ids = answer["output_ids"]
        self.out["tiers"].append(
            entry
            | {
                "status": "measured",
                "blocks": answer["blocks"],
                "output_ids": ids,
                "outputs": [tier.tokenizer.decode(i) for i in ids],
            }
        )

    def finish(self) -> dict[str, Any]:
        tiers = self.out["tiers"]
        if self.out["status"] == "measured" and tiers and all(t["status"] == "failed" for t in tiers):
            self.out.update(status="failed", reason=tiers[0]["reason"])
        return self.out


def pair_acceptance(pair: SpeculativePair, golden: GoldenRows, k: int, is_self: bool) -> dict[str, Any]:
    """Probe (uniform single-step framing) vs runtime (batched verifier) acceptance, and output preservation."""
    probe = [0, 0]
    runtime = [0, 0]
    differing = []
    for row in golden.rows:
        p = pair.decode(row.input, k, verify="single")
        r = pair.decode(row.input, k)
        plain = greedy(pair.verifier, row.input)
        probe[0] += p.accepted
        probe[1] += p.proposed
        runtime[0] += r.accepted
        runtime[1] += r.proposed
        if r.tokens != plain.tokens:
            differing.append({"line": row.line, "input": row.input, "speculative": r.text, "greedy": plain.text})
    return {
        "drafter": pair.drafter.name,
        "verifier": pair.verifier.name,
        "self": is_self,
        "k": k,
        "probe": {"accepted": probe[0], "proposed": probe[1]},
        "runtime": {"accepted": runtime[0], "proposed": runtime[1]},
        "rows": len(golden),
        "preserved": len(golden) - len(differing),
        "differing": differing,
    }


def run_framing(
    tiers: dict[str, Tier],
    pairs: dict[str, SpeculativePair],
    self_pairs: dict[str, SpeculativePair],
    golden: GoldenRows,
    config: FramingConfig,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
    runtime_version: str | None = None,
) -> dict[str, Any]:
    """Fill ``out`` (the record's ``framing`` section) in place, saving after every tier and pair.

    ``runtime_version`` is the onnxruntime version from the run's environment fingerprint,
    the one place it is read.
    """
    blocks: list[int | str] = [*config.k, *(["whole"] if config.whole_prefix else [])]
    python = {"runtime": "onnxruntime", "language": "python", "version": runtime_version, "status": "measured"}
    python["tiers"] = []
    out.update({"blocks": blocks, "legs": [python], "acceptance": []})
    node = NodeLeg(config, blocks) if config.node_leg else None
    if node:
        out["legs"].append(node.out)
    total = len(tiers) * (2 if node else 1) + len(pairs) + len(self_pairs)
    done = 0
    for tier in tiers.values():
        python["tiers"].append(tier_parity(tier, golden, config))
        done += 1
        progress(f"framing {tier.name}", done, total)
        save()
        if node:
            node.add(tier, golden, python["tiers"][-1])
            node.finish()
            done += 1
            progress(f"framing {tier.name} ({node_leg.RUNTIME})", done, total)
            save()
    for is_self, group in ((False, pairs), (True, self_pairs)):
        for name, pair in group.items():
            out["acceptance"].append(pair_acceptance(pair, golden, config.probe_k, is_self))
            done += 1
            progress(f"acceptance {name}", done, total)
            save()
    return out
