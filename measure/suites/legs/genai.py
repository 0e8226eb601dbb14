"""The onnxruntime-genai leg: decoder-only tiers and pairs under og's compiled loop.

A runtime beside Python onnxruntime, Node and the browser, driven through
:mod:`measure.suites.legs.genai_driver`: per tier og's greedy decodes against the Python leg's,
its timed passes, and measure's loop over og's per decode step; per decoder-only pair og's
draft-model speculative decoding beside measure's. A missing runtime skips the leg with the
reason; a tier og cannot load is failed with og's message.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, cast

from measure.engine.causal.tier import CausalTier
from measure.engine.speculative import Pair
from measure.engine.tier import Tier
from measure.record.model.framing_tier import leg_tier
from measure.record.model.genai import RUNTIME, SEQ2SEQ_SKIP, genai_leg_part, genai_pair_part, genai_tier_part
from measure.record.model.status import MEASURED, stopped
from measure.suites.config import FramingConfig
from measure.suites.golden import GoldenRows
from measure.suites.legs.contract import LegSetup
from measure.suites.legs.cost import LegCost
from measure.suites.legs.genai_driver import og_import, run_genai_speculative, run_genai_tier

GENAI_REPEATS_MIN = 3
"""Paired passes per tier at least: the ratio's range needs more than the one pass the other legs may time."""


class GenaiLeg:
    """The onnxruntime-genai leg of one run: in this process, beside Python's sessions (its loop and measure's,
    row by row)."""

    key: ClassVar[str] = "genai"
    runtime: ClassVar[str] = RUNTIME
    label = RUNTIME
    beside: ClassVar[bool] = True
    cost: ClassVar[LegCost] = LegCost("genai", frozenset({"causal"}), "loop", repeats_min=GENAI_REPEATS_MIN, pairs=True)

    @classmethod
    def ready(cls, config: FramingConfig) -> str | None:
        found = importlib.util.find_spec("onnxruntime_genai") is not None
        return None if found else "onnxruntime_genai is not importable (the genai extra)"

    def __init__(self, setup: LegSetup) -> None:
        config = setup.config
        self.og, reason = og_import()
        self.repeats = max(config.leg_repeats, GENAI_REPEATS_MIN)
        self.out: dict[str, Any] = genai_leg_part(getattr(self.og, "__version__", None) if self.og else None)
        if self.og is None:
            self.out.update(stopped("skipped", reason or "onnxruntime_genai is not importable"))
        self.available = self.og is not None
        """og imports: every tier is tried (one og cannot load fails alone), whatever ``finish`` said so far."""

    def add(
        self,
        tier: Tier,
        golden: GoldenRows,
        python: dict[str, Any],
        described: dict[str, Any] | None = None,
        reopen: Callable[[], Tier] | None = None,
        prefill_rows: int | None = None,
    ) -> None:
        """Decode ``tier`` under og beside measure's loop, its tokens held against the Python leg's (og's own
        loop frames nothing, so a budget's cut of the prompt framings does not apply)."""
        if not self.available:
            return
        if tier.kind != "causal":  # onnxruntime-genai runs decoder-only models
            self.out["tiers"].append(leg_tier(tier.name, python["precision"]) | stopped("skipped", SEQ2SEQ_SKIP))
            return
        texts = [row.input for row in golden.rows]
        causal = cast(CausalTier, tier)  # its kind says so: onnxruntime-genai's folders are decoder-only
        answer = run_genai_tier(self.og, causal, texts, python.get("output_ids"), self.repeats)
        outputs = [tier.tokenizer.decode(r["tokens"]) for r in answer.get("rows", ())]
        lines = [row.line for row in golden.rows]
        self.out["tiers"].append(genai_tier_part(tier.name, python["precision"], answer, outputs, lines))

    def add_pairs(self, pairs: Iterable[Pair], golden: GoldenRows, k: int) -> bool:
        """og's draft-model speculative decoding for each decoder-only pair, at the acceptance suite's k."""
        if not self.available:
            return True
        texts = [row.input for row in golden.rows]
        for pair in pairs:
            if pair.kind != "causal":
                continue
            verifier, drafter = cast(CausalTier, pair.verifier), cast(CausalTier, pair.drafter)  # a causal pair
            answer = run_genai_speculative(verifier, drafter, texts, draft_tokens=k)
            self.out["speculative"].append(genai_pair_part(pair.drafter.name, pair.verifier.name, k, answer))
        return True

    def finish(self) -> dict[str, Any]:
        """The leg fails while every tier it ran so far failed (the first one's reason); measured once one ran."""
        if not self.available:
            return self.out
        tiers = [t for t in self.out["tiers"] if t["status"] != "skipped"]
        if tiers and all(t["status"] == "failed" for t in tiers):
            self.out.update(stopped("failed", tiers[0]["reason"]))
        else:
            self.out["status"] = MEASURED
            self.out.pop("reason", None)
        return self.out

    def close(self) -> None:
        """og's models live only as long as a tier's or a pair's run."""
