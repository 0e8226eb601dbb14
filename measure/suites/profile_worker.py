"""One worker process of the cost profile: load one tier cold, decode a few rows, read the peak, load it warm.

Run as ``python -m measure.suites.profile_worker`` with a JSON request on
stdin; answers one JSON object on stdout. A worker holds one tier only, so
the peak resident set it reports is that tier's and no other's arena. With
no ``tier`` in the request it only imports what a tier worker imports (the
baseline every tier's increase is taken over).
"""

from __future__ import annotations

import gc
import json
import sys
from time import perf_counter
from typing import Any

from measure.engine.load import load_tier  # imported before any timing: the baseline imports the same
from measure.engine.session import SessionConfig
from measure.suites.resources import peak_rss


def work(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("tier") is None:
        return {"peak_rss": peak_rss().to_dict()}
    config = SessionConfig(**{**request["session"], "providers": tuple(request["session"]["providers"])})
    start = perf_counter()
    limit = request.get("max_new_tokens")
    tier = load_tier(request["tier"], config, prompt=request.get("prompt"), max_new_tokens=limit)
    cold = perf_counter() - start
    for text in request["texts"]:
        tier.greedy(text)
    peak = peak_rss()  # before the warm loads: a second copy alive would not be this tier's footprint
    del tier
    gc.collect()
    warm = []
    for _ in range(int(request["warm_loads"])):
        start = perf_counter()
        tier = load_tier(request["tier"], config, prompt=request.get("prompt"), max_new_tokens=limit)
        warm.append(perf_counter() - start)
        del tier
        gc.collect()
    return {"load_cold_s": cold, "load_warm_s": warm, "peak_rss": peak.to_dict()}


def main() -> int:
    request = json.loads(sys.stdin.read())
    json.dump(work(request), sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
