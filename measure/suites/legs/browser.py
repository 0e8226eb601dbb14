"""What the two onnxruntime-web legs share (:mod:`~measure.suites.legs.web`: wasm,
:mod:`~measure.suites.legs.webgpu`): a browser, a loopback server and a page, started with the leg and kept while
tiers are small; closed after a large tier (:data:`KEEP_BROWSER_BYTES`) and started again for the next. Not a leg."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import Any, ClassVar

from measure.engine.tier import Tier
from measure.suites.config import FramingConfig
from measure.suites.legs import node_driver, web_driver
from measure.suites.legs.contract import LegFailed, LegSetup, LegSkipped, NotStarted
from measure.suites.legs.process import ProcessLeg

KEEP_BROWSER_BYTES = 64 * 2**20
"""After a tier folder of at most this size the browser stays up for the next tier: starting Chromium (about 2 s)
would be most of a small tier's turn. After a larger one it is closed, since the wasm memory a page grew is never
given back (about 2 GB for a 650 MB fp32 graph) and would be held while the other legs and tiers run. Before a
large first tier the browser is not started early either: its ~0.8 GB would sit beside Python's decodes."""
FULL_MAX_BYTES = 256 * 2**20
"""A full-precision tier folder above this is not decoded in the browser legs (said as the tier's skip, in the
record): onnxruntime-web holds a graph's weights twice in the page's wasm heap while it makes a session, so a 135M
model's 540 MB fp32 tier took Chromium to 1.7 GB, and its numerics are the reference's anyway. The quantized
tiers, whose kernels are what differs between runtimes, run at every size."""
BROWSER_S = 5.0
"""Starting Chromium and its page for a tier (the planner's figure)."""


def folder_bytes(folder: Path | None) -> int:
    if folder is None or not folder.is_dir():
        return 0
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


class BrowserLeg(ProcessLeg):
    """onnxruntime-web in a Chromium page, under the execution provider the subclass names."""

    runtime = web_driver.RUNTIME
    language = "browser"
    uses_threads: ClassVar[bool] = True
    """The page's wasm threads follow the sessions' intra-op threads (WebGPU's page sets none)."""

    def __init__(self, setup: LegSetup) -> None:
        self.threads = setup.threads if self.uses_threads else 0
        """The sessions' intra-op threads: the page's wasm threads (0: onnxruntime-web's default)."""
        self.browser = setup.config.browser
        self.web: web_driver.WebRuntime | None = None
        self.early = folder_bytes(setup.first) <= KEEP_BROWSER_BYTES
        """Whether the browser starts with the leg (``first``: the folder of the tier reached first)."""
        super().__init__(setup)

    @classmethod
    def ready(cls, config: FramingConfig) -> str | None:
        if not shutil.which(config.node):
            return f"Node.js ({config.node!r}) was not found on PATH"
        if not (shutil.which(config.browser) or Path(config.browser).is_file()):
            return f"the browser ({config.browser!r}) was not found"
        return None

    def _open(self, setup: LegSetup) -> None:
        web_driver.find_browser(setup.config.browser)  # what is missing skips the leg now
        node_driver.find_node(setup.config.node)
        # started now, so its page loads onnxruntime-web while Python decodes the first tier (unless that tier is
        # large); a browser that will not start is said as the first tier's failure, when that tier starts it again
        if self.early:
            with contextlib.suppress(LegFailed):
                self._start()

    def _start(self) -> web_driver.WebRuntime:
        if self.web is None:
            provider = self.provider or "wasm"
            self.web = web_driver.WebRuntime(self.browser, node=self.node, threads=self.threads, provider=provider)
        return self.web

    def _run(
        self,
        tier: Tier,
        rows: list[node_driver.NodeRow],
        described: dict[str, Any] | None,
        prefill_rows: int | None,
    ) -> dict[str, Any]:
        size = folder_bytes(tier.path)
        precision = tier.fingerprint().precision
        if size > FULL_MAX_BYTES and precision in ("fp32", "fp16"):
            raise LegSkipped(
                f"{tier.name}: an {precision} tier of {size / 2**20:.0f} MB is not decoded in the browser (above "
                f"{FULL_MAX_BYTES // 2**20} MB onnxruntime-web would hold its weights twice in the page's memory); "
                "its quantized tiers are"
            )
        try:
            web = self._start()
        except LegFailed as exc:  # the browser is there and would not start: a failure, not a skip
            if not self.out["tiers"]:
                raise NotStarted(str(exc)) from exc
            raise
        self.out["host"] = web.host
        try:
            return web.run_tier(
                tier, rows, self.blocks, timing_repeats=self.repeats, described=described, prefill_rows=prefill_rows
            )
        finally:
            if folder_bytes(tier.path) > KEEP_BROWSER_BYTES:
                self.close()

    def _measured(self, answer: dict[str, Any]) -> None:
        self.out.update(version=answer.get("version"), execution=answer["execution"])

    def close(self) -> None:
        if self.web is not None:
            self.web.close()
            self.web = None
