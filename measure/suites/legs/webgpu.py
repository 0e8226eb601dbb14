"""onnxruntime-web's WebGPU execution provider (issue 44): the web leg's page in a browser with WebGPU enabled.

Without an adapter the leg is skipped with the page's reason; on a software adapter (SwiftShader, no GPU)
the page times nothing: its numerics are WebGPU's kernels, its speed is CPU emulation.
"""

from __future__ import annotations

from measure.suites.legs.browser import BROWSER_S, BrowserLeg
from measure.suites.legs.cost import LegCost
from measure.suites.legs.process import PROCESS_S


class WebGpuLeg(BrowserLeg):
    key = "webgpu"
    provider = "webgpu"
    uses_threads = False
    cost = LegCost("webgpu", frozenset({"seq2seq", "causal"}), "replay", factor=3.0, start_s=PROCESS_S + BROWSER_S)
