"""Decode-engine benchmark on the bundled demo: prints figures, asserts nothing.

For each tier, over the golden rows, warm sessions, repeats interleaved across
tiers (A B C A B C ...) so machine drift hits all alike:

* ms per output token (median over repeats of total wall / total tokens);
* the share of wall time inside ``session.run`` (harness overhead = the rest;
  target: overhead <= 10% on base int8);
* the fitted exponent b of per-row time ~ T^b against output length T
  (target <= 1.15, i.e. O(T)); the uncached reference decode is fitted too, as
  the O(T^2)-shaped contrast;
* speculative decoding (lite int4 drafter -> plain int8 verifier) for k = 2, 4, 8.

Run: ``python benchmarks/bench_decode.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from measure import bundled
from measure.artifacts import load_tier
from measure.decode import Decoded, greedy, greedy_uncached
from measure.golden import load_golden
from measure.speculative import SpeculativePair


def exponent(lengths: list[int], seconds: list[float]) -> float:
    slope, _ = np.polyfit(np.log(lengths), np.log(seconds), 1)
    return float(slope)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    golden = load_golden(bundled.GOLDEN)
    texts = [r.input for r in golden.rows]
    tiers = {f.name: load_tier(f) for f in (bundled.REFERENCE, bundled.PLAIN, bundled.LITE, bundled.SMALL_INT8)}
    pairs = {
        k: SpeculativePair(load_tier(bundled.LITE, label="drafter"), load_tier(bundled.PLAIN, label="verifier"))
        for k in (2, 4, 8)
    }
    cases: dict[str, Callable[[str], Decoded]] = {
        name: (lambda t, tier=tier: greedy(tier, t)) for name, tier in tiers.items()
    }
    cases["base-fp32 uncached"] = lambda t: greedy_uncached(tiers["base-fp32"], t)
    for k, pair in pairs.items():
        cases[f"speculative k={k}"] = lambda t, pair=pair, k=k: pair.decode(t, k)

    for fn in cases.values():  # warm-up: one full pass
        for t in texts:
            fn(t)
    samples: dict[str, list[list[Decoded]]] = {name: [] for name in cases}
    started = time.perf_counter()
    for _ in range(args.repeats):
        for name, fn in cases.items():  # interleaved
            samples[name].append([fn(t) for t in texts])
    elapsed = time.perf_counter() - started

    print(
        f"golden rows: {len(texts)} (sha256 {golden.sha256[:12]}), repeats {args.repeats}, "
        f"measured in {elapsed:.1f}s; 1 intra-op thread"
    )
    head = f"{'case':<22}{'ms/token':>10}{'x plain':>9}{'inside run':>12}{'overhead':>10}{'exponent':>10}{'accept':>9}"
    print(head)
    print("-" * len(head))
    plain_ms = None
    rows = []
    for name, reps in samples.items():
        per_rep_ms = [1000 * sum(d.wall_s for d in rep) / sum(len(d.tokens) + 1 for d in rep) for rep in reps]
        ms = statistics.median(per_rep_ms)
        wall = sum(d.wall_s for rep in reps for d in rep)
        inside = sum(d.run_s for rep in reps for d in rep) / wall
        lengths = [len(d.tokens) + 1 for d in reps[0]]
        per_row = [statistics.median(rep[i].wall_s for rep in reps) for i in range(len(texts))]
        acc = ""
        if hasattr(reps[0][0], "proposed"):
            proposed = sum(d.proposed for d in reps[0])
            acc = f"{sum(d.accepted for d in reps[0]) / proposed:.4f}" if proposed else "-"
        rows.append((name, ms, inside, exponent(lengths, per_row), acc))
        if name == "base-int8":
            plain_ms = ms
    for name, ms, inside, b, acc in rows:
        ratio = f"{ms / plain_ms:.2f}" if plain_ms else "-"
        print(f"{name:<22}{ms:>10.3f}{ratio:>9}{inside:>11.1%}{1 - inside:>10.1%}{b:>10.3f}{acc:>9}")
    print("\nexponent: slope of log(row wall time) on log(output tokens + 1); O(T) decoding gives <= 1.15")
    print("x plain: ms/token relative to base-int8 (plain), measured side by side in this run")


if __name__ == "__main__":
    main()
