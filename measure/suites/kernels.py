"""The cost profile's kernel step: each tier's matrix kernels timed alone (:mod:`measure.engine.kernel`).

Only tiers whose bytes per step exceed the last-level cache are timed (a tier that fits in cache is not bound
by memory, so no kernel rate against memory's explains it), each at the run's intra-op threads, in one fresh
process for all of them: the copies' weights (4 x the last-level cache per kernel, at least 256 MiB) never count
in the run's own memory. Raw seconds per call only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from measure.suites.child import ask_child

LEAST_BYTES = 256 * 2**20
"""As the bandwidth probe's buffer: at 128 MiB (4 x the 32 MiB this host's L3 reports) an fp32 MatMul's copies
read at 22 and 78 GB/s on alternate passes, partly from cache."""
TIMEOUT_S = 600


def kernel_bytes(last_level_bytes: int | None) -> int:
    """Weights each kernel's copies hold together: 4 x the last-level cache, at least :data:`LEAST_BYTES`."""
    return max(LEAST_BYTES, 4 * (last_level_bytes or 0))


def time_tiers(graphs: dict[str, str], threads: int, least_bytes: int, passes: int = 7) -> dict[str, Any]:
    """In this process: per tier, each kernel shape of its step graph with its copies and seconds per call."""
    from measure.engine.kernel import copies_for, kernel_shapes, time_kernel

    out: dict[str, Any] = {}
    for name, graph in graphs.items():
        found = []
        for shape in kernel_shapes(Path(graph)):
            copies = copies_for(shape, least_bytes)
            found.append(shape.to_dict() | {"copies": copies, "call_s": time_kernel(shape, copies, threads, passes)})
        out[name] = found
    return out


def run_kernels(graphs: dict[str, str], threads: int, least_bytes: int, passes: int = 7) -> dict[str, Any]:
    """:func:`time_tiers` in a fresh process; a failure is one line."""
    return ask_child(
        __name__,
        {"graphs": graphs, "threads": threads, "least_bytes": least_bytes, "passes": passes},
        "kernel timing",
        TIMEOUT_S,
    )


def kernels_part(tiers: dict[str, Any], bandwidth: dict[str, Any], threads: int) -> dict[str, Any] | None:
    """The profile's ``kernels`` part for the tiers of a record's ``tiers`` beyond the probe's last-level cache
    (their step graph beside their folder); None where no tier is."""
    llc = bandwidth["caches"].get("last_level_bytes")
    graphs = {
        name: str(Path(t["path"]) / t["traffic"]["graph"])
        for name, t in tiers.items()
        if t.get("traffic") and (llc is None or t["traffic"]["weights_bytes"] > llc)
    }
    if not graphs:
        return None
    return {"threads": threads, "tiers": run_kernels(graphs, threads, kernel_bytes(llc))}


if __name__ == "__main__":
    asked = json.loads(sys.stdin.read())
    json.dump(
        time_tiers(asked["graphs"], int(asked["threads"]), int(asked["least_bytes"]), int(asked["passes"])), sys.stdout
    )
