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

With ``--webgpu`` the WebGPU leg (issue 44) runs too, in a browser of its own: on a machine without a GPU its
adapter is SwiftShader's (software), so its seconds are the price of checking WebGPU's numerics here, never a
speed. Each leg's rows decoded token for token as Python onnxruntime does are printed beside its cost.

Target (issue 30): the web leg adds at most 30 s to the demo's main job.

Run: ``python benchmarks/bench_legs.py [--config suite.toml] [--webgpu] [--rows N] [--tiers a b]`` with the npm
packages installed (``npm ci --ignore-scripts``) and Chromium on PATH or at ``[framing] browser``.
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


def _leg_cpu(leg: object) -> float:
    """CPU seconds the leg's processes have used so far: Node's per-tier processes (children of this one), or
    the web leg's driver, Chromium and its renderer and GPU process."""
    web = getattr(leg, "web", None)
    return _tree_cpu_s(web._proc.pid) if web is not None else _children_cpu_s()


def _parity(python: dict, entry: dict) -> str:
    """Rows the leg decodes token for token as Python onnxruntime does."""
    ids = entry.get("output_ids")
    if entry.get("status") != "measured" or ids is None:
        return entry.get("status", "-")
    return f"{sum(a == b for a, b in zip(python['output_ids'], ids, strict=False))}/{len(python['output_ids'])}"


def main() -> None:
    from measure.suites.config import load_config
    from measure.suites.framing import NodeLeg, WebGpuLeg, WebLeg, tier_parity
    from measure.suites.golden import head, load_golden
    from measure.suites.runner import load_tiers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="a suite config (default: the bundled demo's)")
    ap.add_argument("--webgpu", action="store_true", help="also the WebGPU leg (a software adapter is slow)")
    ap.add_argument("--rows", type=int, default=None, help="the first N golden rows only (default: all)")
    ap.add_argument("--tiers", nargs="*", default=None, help="these tiers only (default: the config's)")
    args = ap.parse_args()
    config = load_config(args.config)
    golden = load_golden(config.golden)
    golden = head(golden, args.rows) if args.rows else golden
    tiers = load_tiers(config, {})
    tiers = {n: t for n, t in tiers.items() if args.tiers is None or n in args.tiers}
    blocks: list[int | str] = [*config.framing.k, *(["whole"] if config.framing.whole_prefix else [])]

    legs: list[tuple[str, NodeLeg]] = [("node", NodeLeg(config.framing, blocks))]
    starts = {}
    kinds = [("web", WebLeg, (config.session.intra_op_threads,))] + ([("webgpu", WebGpuLeg, ())] if args.webgpu else [])
    for label, kind, extra in kinds:
        t0 = time.perf_counter()
        leg = kind(config.framing, blocks, *extra)
        starts[label] = time.perf_counter() - t0
        if leg.out["status"] != "measured" and not leg.out["tiers"] and leg.out.get("reason"):
            print(f"the {label} leg cannot run here: {leg.out.get('reason')}")
            leg.close()
            continue
        legs.append((label, leg))
    rows = []
    try:
        for tier in tiers.values():
            t = time.perf_counter()
            python = tier_parity(tier, golden, config.framing)
            cells = [(time.perf_counter() - t, None, "", "")]
            for _, leg in legs:
                t, c = time.perf_counter(), _leg_cpu(leg)
                leg.add(tier, golden, python)
                leg.finish()
                entry = leg.out["tiers"][-1] if leg.out["tiers"] and leg.out["tiers"][-1]["tier"] == tier.name else {}
                cells.append((time.perf_counter() - t, _leg_cpu(leg) - c, _ms_per_token(entry), _parity(python, entry)))
            rows.append((tier.name, tier.kind, cells))
        all_cpu = {label: _leg_cpu(leg) for label, leg in legs if label != "node"}  # page warm-ups counted here
    finally:
        for _, leg in legs:
            leg.close()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(golden)} golden rows, {len(rows)} tiers, blocks {blocks}, leg_repeats {config.framing.leg_repeats}")
    for label, leg in legs[1:]:
        print(
            f"{label} leg: {leg.out.get('host')}, onnxruntime-web {leg.out.get('version')}, {leg.out.get('execution')}"
        )
    print(f"load average {load:.1f}; " + ", ".join(f"{k} leg start {v:.1f} s wall" for k, v in starts.items()))
    names = [label for label, _ in legs]
    heads = f"{'python s':>9}" + "".join(
        f"{n + ' s':>10}{n + ' cpu':>12}{n + ' ms/t':>13}{n + ' =py':>12}" for n in names
    )
    print(f"{'tier':<20}{'kind':<8}{heads}")
    for name, kind, cells in rows:
        line = f"{name:<20}{kind:<8}{cells[0][0]:>9.1f}"
        for wall, cpu, ms, same in cells[1:]:
            line += f"{wall:>10.1f}{cpu:>12.1f}{ms:>13}{same:>12}"
        print(line)
    total = f"{'total':<28}{sum(c[0][0] for _, _, c in rows):>9.1f}"
    for i in range(1, len(names) + 1):
        total += f"{sum(c[i][0] for _, _, c in rows):>10.1f}{sum(c[i][1] for _, _, c in rows):>12.1f}{'':>25}"
    print(total)
    python_s = sum(c[0][0] for _, _, c in rows)
    for i, label in enumerate(names[1:], start=2):
        wall = sum(c[i][0] for _, _, c in rows) + starts[label]
        print(
            f"the {label} leg adds {wall:.1f} s wall, its start included ({all_cpu[label]:.1f} s CPU in all), "
            f"{wall / python_s:.2f}x the Python leg's {python_s:.1f} s" + ("; target <= 30 s" if label == "web" else "")
        )


if __name__ == "__main__":
    main()
