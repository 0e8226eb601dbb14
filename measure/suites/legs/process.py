"""What the legs whose runtime runs in a process of its own share: trying each tier, failing a tier alone, and
the rows where that runtime's decode leaves Python's, with Python's own margin there.

Not a leg: :mod:`~measure.suites.legs.node`, :mod:`~measure.suites.legs.web` and
:mod:`~measure.suites.legs.webgpu` build on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from measure.engine.speculative import Pair
from measure.engine.tier import Tier
from measure.record.model.framing_leg import runtime_leg
from measure.record.model.framing_tier import divergence, leg_tier, leg_tier_measured
from measure.record.model.status import MEASURED, stopped
from measure.suites.golden import GoldenRows
from measure.suites.legs import node_driver
from measure.suites.legs.contract import LegFailed, LegSetup, LegSkipped, LegUnavailable, NotStarted
from measure.suites.legs.cost import LegCost
from measure.suites.steps import release

PROCESS_S = 0.5
"""Starting the leg's process and its runtime for a tier (the planner's figure)."""


class ProcessLeg:
    """A leg run in another process (Node.js, a browser): tries each tier, stops trying once the runtime is
    missing; subclasses say how a tier runs (``_run``) and what leg-wide facts its answer carries."""

    key: ClassVar[str]
    runtime: ClassVar[str]
    language: ClassVar[str]
    provider: ClassVar[str | None] = None
    """Set where a runtime runs as two legs (onnxruntime-web: wasm, and webgpu as its own leg)."""
    beside: ClassVar[bool] = False
    cost: ClassVar[LegCost]

    def __init__(self, setup: LegSetup) -> None:
        self.node = setup.config.node
        self.blocks = list(setup.blocks)
        self.repeats = setup.config.leg_repeats
        self.out: dict[str, Any] = runtime_leg(self.runtime, self.language, self.provider)
        try:
            self._open(setup)
        except LegSkipped as exc:
            self._skip(str(exc))

    @property
    def label(self) -> str:
        """The leg in progress lines: its runtime, and its provider where the runtime runs as two legs."""
        return f"{self.runtime}, {self.provider}" if self.provider else self.runtime

    def _open(self, setup: LegSetup) -> None:
        node_driver.find_node(setup.config.node)

    def _run(
        self,
        tier: Tier,
        rows: list[node_driver.NodeRow],
        described: dict[str, Any] | None,
        prefill_rows: int | None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _measured(self, answer: dict[str, Any]) -> None:
        """The leg-wide facts of a tier's answer (version, host)."""

    def _skip(self, reason: str) -> None:
        self.out.update(stopped("skipped", reason))

    def add(
        self,
        tier: Tier,
        golden: GoldenRows,
        python: dict[str, Any],
        described: dict[str, Any] | None = None,
        reopen: Callable[[], Tier] | None = None,
        prefill_rows: int | None = None,
    ) -> None:
        """Decode ``tier`` under this runtime on the Python leg's prefixes; a tier that cannot run says why.

        ``described``: the tier as :func:`~measure.suites.legs.node_driver.describe` gave it while its sessions
        were loaded, where Python has let go of them since (the leg's process loads its own copy); ``reopen`` then
        loads them again (and the caller's :func:`~measure.suites.steps.release` lets go), only where a row left
        Python's decode and Python's margin there is needed. ``prefill_rows``: the prompt framings on the first
        rows only (a budget's cut)."""
        started = self.out["status"] == MEASURED or (self.out["tiers"] and self.out["status"] == "failed")
        if not started:  # skipped, or failed before its first tier (the browser did not start)
            return
        rows = []
        for row, out_ids in zip(golden.rows, python["output_ids"], strict=True):
            ids = tier.source_ids(row.input)
            prefix = node_driver.prefix(tier, ids, out_ids)
            rows.append(node_driver.NodeRow(ids, prefix, tier.default_max_new_tokens(len(ids)), row.line, row.input))
        entry = leg_tier(tier.name, python["precision"])
        try:
            answer = self._run(tier, rows, described, prefill_rows)
        except LegUnavailable as exc:
            self._skip(str(exc))
            return
        except NotStarted as exc:  # before any tier: the leg fails with the reason, and no tier tries again
            self.out.update(stopped("failed", str(exc)))
            return
        except (LegSkipped, LegFailed) as exc:
            status = "skipped" if isinstance(exc, LegSkipped) else "failed"
            self.out["tiers"].append(entry | stopped(status, str(exc)))
            return
        self._measured(answer)
        ids = answer["output_ids"]
        outputs = [tier.tokenizer.decode(i) for i in ids]
        found = divergences(tier, rows, golden, answer.get("divergence", []), reopen)
        entry = leg_tier_measured(entry, answer["blocks"], ids, outputs, found)
        if answer.get("prefill"):  # a decoder-only tier: the prompt's framings too
            entry["prefill"] = answer["prefill"]
        if answer.get("timing"):
            entry["timing"] = answer["timing"]
        self.out["tiers"].append(entry)

    def add_pairs(self, pairs: Iterable[Pair], golden: GoldenRows, k: int) -> bool:
        """These runtimes replay the tiers' framings; speculative pairs are Python's and onnxruntime-genai's."""
        return False

    def finish(self) -> dict[str, Any]:
        """The leg as it stands after a tier: failed while every tier so far failed, measured again once one
        runs (a failed tier never stops the next one from trying)."""
        tiers = self.out["tiers"]
        if self.out["status"] == "skipped" or (self.out.get("reason") and not tiers):
            return self.out  # the leg never started: skipped, or failed before any tier
        if tiers and all(t["status"] == "failed" for t in tiers):
            self.out.update(stopped("failed", tiers[0]["reason"]))
        elif self.out["status"] == "failed":
            self.out["status"] = MEASURED
            self.out.pop("reason", None)
        return self.out

    def close(self) -> None:
        """Nothing outlives a tier here; the browser legs hold a browser."""


def divergences(
    tier: Tier,
    rows: list[node_driver.NodeRow],
    golden: GoldenRows,
    found: list[dict[str, Any]],
    reopen: Callable[[], Tier] | None = None,
) -> list[dict[str, Any]]:
    """Each row where another runtime's argmax leaves the Python leg's decode, with Python's own margin there.

    The runtime's margin is its logit of its token over that of Python's; Python's margin, the
    reverse under Python onnxruntime at the same step: two near-zero margins are a near-tie, one
    large margin a kernel that moved the logits.
    """
    if found and reopen is not None:  # Python let go of the tier's sessions while the leg ran: load them again
        again = reopen()
        try:
            return divergences(again, rows, golden, found)
        finally:
            release(again)
    out = []
    for d in found:
        row = rows[d["row"]]
        if tier.kind == "causal":  # row 0 is the prompt's prefill; the prefix's first place is the prompt's
            logits, _ = tier.feed_prefix(row.source_ids, row.prefix[1 : d["step"] + 1], 1)
        else:
            logits, _ = tier.feed_prefix(row.source_ids, row.prefix[: d["step"] + 1], 1)
        step = logits[d["step"]]
        python_margin = float(step[d["expected"]]) - float(step[d["token"]])
        out.append(divergence(d, golden.rows[d["row"]].line, python_margin))
    return out
