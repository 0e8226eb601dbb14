"""The onnxruntime-node leg: every tier decoded under Node.js on the Python leg's prefixes
(:mod:`~measure.suites.legs.node_driver` runs ``node/framing.mjs``)."""

from __future__ import annotations

import shutil
from typing import Any

from measure.engine.tier import Tier
from measure.suites.config import FramingConfig
from measure.suites.legs import node_driver
from measure.suites.legs.cost import LegCost
from measure.suites.legs.process import PROCESS_S, ProcessLeg


class NodeLeg(ProcessLeg):
    key = "node"
    runtime = node_driver.RUNTIME
    language = "node"
    cost = LegCost("node", frozenset({"seq2seq", "causal"}), "replay", factor=1.5, start_s=PROCESS_S)

    @classmethod
    def ready(cls, config: FramingConfig) -> str | None:
        return None if shutil.which(config.node) else f"Node.js ({config.node!r}) was not found on PATH"

    def _run(
        self,
        tier: Tier,
        rows: list[node_driver.NodeRow],
        described: dict[str, Any] | None,
        prefill_rows: int | None,
    ) -> dict[str, Any]:
        return node_driver.run_tier(
            tier,
            rows,
            self.blocks,
            node=self.node,
            timing_repeats=self.repeats,
            described=described,
            prefill_rows=prefill_rows,
        )

    def _measured(self, answer: dict[str, Any]) -> None:
        self.out.update(version=answer.get("version"), host=answer.get("node") and f"Node.js {answer['node']}")
