"""What each runtime leg of the framing suite costs on one machine, measured side by side. Prints figures only.

Over a suite config's tiers and golden rows (the bundled demo's unless ``--config``), each tier is
decoded by the Python onnxruntime leg (which the others need: they replay its prefixes), then by
the suite's own onnxruntime-node and onnxruntime-web legs (:class:`measure.suites.framing.NodeLeg`,
``WebLeg``), exactly as ``measure run --suite framing`` runs them. Per tier and leg: wall seconds
and CPU seconds (the leg's processes: Node's per-tier process; the driver, Chromium and its
renderer for the web leg, read from ``/proc`` on Linux), and each JavaScript leg's greedy
ms/token (the median of its timed passes). The web leg's start (Node.js, playwright-core,
Chromium, the loopback server) is timed on its own. Wall time on a shared host counts the time
the leg waits for a core; CPU time does not, so both are printed with the load average.

Target (issue 30): the web leg adds at most 30 s to the demo's main job.

Run: ``python benchmarks/bench_legs.py [--config suite.toml]`` with the npm packages installed
(``npm ci --ignore-scripts``) and Chromium on PATH or at ``[framing] browser``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from pathlib import Path


def _tree_cpu_s(root: int) -> float:
    """CPU seconds of a live process and all its descendants (Linux /proc); 0 elsewhere."""
    proc = Path("/proc")
    if not proc.is_dir():
        return 0.0
    parent, cpu = {}, {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / os.sysconf(
            "SC_CLK_TCK"
        )
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(child for child, up in parent.items() if up == pid)
    return total


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ms_per_token(entry: dict) -> str:
    timing = entry.get("timing")
    if not timing:
        return "-"
    timed = timing["greedy_ms"][1:] or timing["greedy_ms"]
    return f"{statistics.median(timed) / max(1, timing['tokens']):.3f}"


def main() -> None:
    from measure.suites.config import load_config
    from measure.suites.framing import NodeLeg, WebLeg, tier_parity
    from measure.suites.golden import load_golden
    from measure.suites.runner import load_tiers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="a suite config (default: the bundled demo's)")
    args = ap.parse_args()
    config = load_config(args.config)
    golden = load_golden(config.golden)
    tiers = load_tiers(config, {})
    blocks: list[int | str] = [*config.framing.k, *(["whole"] if config.framing.whole_prefix else [])]

    node = NodeLeg(config.framing, blocks)
    t0 = time.perf_counter()
    web = WebLeg(config.framing, blocks, config.session.intra_op_threads)
    start_s = time.perf_counter() - t0
    if web.out["status"] != "measured":
        print(f"the web leg cannot run here: {web.out.get('reason')}")
        return
    driver = web.web._proc.pid
    start_cpu = _tree_cpu_s(driver)
    rows = []
    try:
        for tier in tiers.values():
            t = time.perf_counter()
            python = tier_parity(tier, golden, config.framing)
            python_s = time.perf_counter() - t
            t, c = time.perf_counter(), _children_cpu_s()
            node.add(tier, golden, python)
            node_s, node_cpu = time.perf_counter() - t, _children_cpu_s() - c
            t, c = time.perf_counter(), _tree_cpu_s(driver)
            web.add(tier, golden, python)
            web_s, web_cpu = time.perf_counter() - t, _tree_cpu_s(driver) - c
            entries = [leg.out["tiers"][-1] if leg.out["tiers"] else {} for leg in (node, web)]
            rows.append((tier.name, python_s, node_s, node_cpu, web_s, web_cpu, *entries))
        all_cpu = _tree_cpu_s(driver)  # the page's warm-up ran beside the first Python tier: counted here
    finally:
        web.close()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(golden)} golden rows, {len(rows)} tiers, blocks {blocks}, leg_repeats {config.framing.leg_repeats}")
    print(f"web leg: {web.out['host']}, onnxruntime-web {web.out['version']}, {web.out.get('execution')}")
    print(f"load average {load:.1f}; web leg start {start_s:.1f} s wall, {start_cpu:.1f} s CPU")
    heads = f"{'python s':>9}{'node s':>8}{'node cpu':>9}{'web s':>8}{'web cpu':>9}{'node ms/t':>10}{'web ms/t':>9}"
    print(f"{'tier':<20}{heads}")
    for name, python_s, node_s, node_cpu, web_s, web_cpu, node_entry, web_entry in rows:
        status = "" if web_entry.get("status") == "measured" else f"  web {web_entry.get('status')}"
        print(
            f"{name:<20}{python_s:>9.1f}{node_s:>8.1f}{node_cpu:>9.1f}{web_s:>8.1f}{web_cpu:>9.1f}"
            f"{_ms_per_token(node_entry):>10}{_ms_per_token(web_entry):>9}{status}"
        )
    sums = [sum(r[i] for r in rows) for i in range(1, 6)]
    print(f"{'total':<20}{sums[0]:>9.1f}{sums[1]:>8.1f}{sums[2]:>9.1f}{sums[3]:>8.1f}{sums[4]:>9.1f}")
    wall = sums[3] + start_s
    print(f"the web leg adds {wall:.1f} s wall, its start included ({all_cpu:.1f} s CPU in all); target <= 30 s")


if __name__ == "__main__":
    main()
