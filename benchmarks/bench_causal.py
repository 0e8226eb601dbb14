"""Decoder-only engine benchmark on the bundled causal LMs: prints figures, asserts nothing.

Per tier, over the golden rows, warm sessions, repeats interleaved across tiers
(A B C A B C ...) so machine drift hits all alike; the timed region is measure's,
prompt ids in -> ids out (:func:`causal_greedy_ids`):

* prefill ms per prompt token (the one prefill call / prompt tokens);
* time to first token (prefill and its argmax), median per row;
* decode ms per token after the first (wall after the first token / the calls after the prefill);
* the share of wall time inside ``session.run`` (the rest is the harness's own) and the median
  gap between two decode calls (the loop's own work per token: argmax, refilling the feeds);
* the fitted exponent b of one decode step's cost ~ context^b, from single steps fed on one
  cache from the prompt up to the model's context (median per length over repeats): attention
  over the cache grows with the context, the rest of a step does not, so b stays well under 1
  at the demo's size, and a cache re-fed per step (the O(T^2) trap) would show b near 1.

Run: ``python benchmarks/bench_causal.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict

import numpy as np

from measure import bundled
from measure.engine.causal.tier import CausalTier
from measure.engine.session import Trace
from measure.suites.golden import load_golden

DEMO = bundled.GOLDEN.parent
TIERS = (
    "lm-small-fp32",
    "lm-small-fp32-split",
    "lm-small-fp32-merged",
    "lm-small-int4",
    "lm-base-fp32",
    "lm-base-int8",
    "lm-base-int4",
)


def step_costs(tier: CausalTier, ids: list[int], costs: dict[int, list[float]]) -> None:
    """Single steps on one cache from the prompt to the context's end: seconds per call by context length."""
    trace = Trace()
    lane = tier.begin()
    lane.feed(ids, trace)
    end = (tier.context or 128) - 1
    token = ids[-1]
    while lane.length < end:
        context = lane.length + 1
        token = int(lane.feed([token], trace)[-1].argmax())
        _, start, stop = trace.log[-1]
        costs[context].append(stop - start)


def exponent(costs: dict[int, list[float]]) -> float:
    lengths = sorted(costs)
    medians = [statistics.median(costs[n]) for n in lengths]
    slope, _ = np.polyfit(np.log(lengths), np.log(medians), 1)
    return float(slope)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    rows = load_golden(bundled.GOLDEN).rows
    tiers = {n: CausalTier(DEMO / n) for n in TIERS}
    prompts = {n: [t.source_ids(r.input) for r in rows] for n, t in tiers.items()}
    for name, tier in tiers.items():  # warm-up: first calls pay onnxruntime's lazy setup
        for ids in prompts[name][:8]:
            tier.greedy_ids(ids)
    results: dict[str, list] = defaultdict(list)
    steps: dict[str, dict[int, list[float]]] = {n: defaultdict(list) for n in tiers}
    for _ in range(args.repeats):
        for name, tier in tiers.items():
            for ids in prompts[name]:
                trace = Trace()
                results[name].append((len(ids), tier.greedy_ids(ids, trace=trace), trace))
            step_costs(tier, prompts[name][0], steps[name])

    print(f"{len(rows)} golden rows x {args.repeats} repeats, one thread, warm sessions; medians over rows")
    print(
        f"{'tier':<24}{'prefill ms/tok':>15}{'TTFT ms':>9}{'decode ms/tok':>15}{'inside run':>12}{'us/gap':>8}"
        f"{'step exp':>10}"
    )
    for name, runs in results.items():
        prefill = statistics.median((tr.log[0][2] - tr.log[0][1]) / n for n, _, tr in runs)
        ttft = statistics.median(d.first_token_s for _, d, _ in runs)
        after = sum(d.wall_s - d.first_token_s for _, d, _ in runs)
        decode = after / sum(len(tr.log) - 1 for _, _, tr in runs)
        inside = sum(d.run_s for _, d, _ in runs) / sum(d.wall_s for _, d, _ in runs)
        gap = statistics.median(g for _, _, tr in runs for g in tr.outside_s[2:])
        cells = (
            f"{1e3 * prefill:>15.4f}{1e3 * ttft:>9.3f}{1e3 * decode:>15.4f}{inside:>12.1%}{1e6 * gap:>8.1f}"
            f"{exponent(steps[name]):>10.3f}"
        )
        print(f"{name:<24}{cells}")
    print(
        "\nprefill ms/tok: the prefill call's time inside session.run / prompt tokens (<s> and the template included)"
        "\nTTFT: prompt ids in -> first token decided; decode ms/tok: the rest of the wall time / the calls after"
        "\n  the prefill; inside run: share of wall time inside session.run over every row and repeat"
        "\nus/gap: median time between two decode calls of one row (the loop's own work per token)"
        "\nstep exp: slope of log(one decode step's time) on log(context length), steps fed from the prompt to"
        "\n  the context's end on one carried cache; O(T) decoding keeps it well under 1"
    )


if __name__ == "__main__":
    main()
