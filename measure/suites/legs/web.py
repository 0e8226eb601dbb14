"""The onnxruntime-web leg (issue 30): every tier decoded in a Chromium page under the wasm execution provider."""

from __future__ import annotations

from measure.suites.legs.browser import BROWSER_S, BrowserLeg
from measure.suites.legs.cost import LegCost
from measure.suites.legs.process import PROCESS_S


class WebLeg(BrowserLeg):
    key = "web"
    cost = LegCost("web", frozenset({"seq2seq", "causal"}), "replay", factor=3.0, start_s=PROCESS_S + BROWSER_S)
