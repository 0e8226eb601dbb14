"""measure's decode loop beside onnxruntime-genai's compiled one, on the same graph: prints figures, asserts nothing.

Per tier (the genai demo folders as they are, the optimum decoder-only tiers through a
generated ``genai_config.json``), over the golden rows, warm, both under measure's session options
(one intra-op thread, all graph optimizations; :func:`og_model` overlays them on og's config): every row is
decoded by both loops back to back, the order alternating per repeat, so drift hits both:

* decode ms per step, per row: the time after the first token / the calls after the prefill (measure:
  :func:`causal_greedy_ids`'s wall after ``first_token_s``; og: between the first and the last
  ``get_next_tokens``, :func:`measure.suites.legs.genai_driver.og_decode`);
* time to first token: prompt ids in -> first token decided (og: ``append_tokens`` to the first
  ``get_next_tokens``), median over rows and repeats;
* measure/og per step: the median over rows and repeats of the two loops' per-step ratio on the same
  row, decoded back to back (pairs cancel the load of a shared machine); the target is <= 1.10x;
* greedy rows equal: measure's tokens against og's; rows that differ are named (expected only
  under int8/int4, where the two runtimes' kernels or graph options may differ);
* then onnxruntime-genai's draft-model speculative decoding, lm-small-fp32 drafting for lm-base-fp32,
  beside measure's pair: acceptance, speedup over each runtime's greedy, rows equal to greedy.

Run: ``python benchmarks/bench_genai.py [--repeats N] [--rows N]`` (needs the ``genai`` extra).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import ExitStack
from dataclasses import dataclass, field

from measure import bundled
from measure.engine.causal.genai_export import genai_folder
from measure.engine.causal.tier import CausalTier
from measure.engine.load import load_tier
from measure.suites.golden import load_golden
from measure.suites.legs.genai_driver import og_decode, og_model, run_genai_speculative

DEMO = bundled.GOLDEN.parent
TIERS = ("genai-base-fp32", "genai-base-int4", "lm-base-fp32", "lm-base-int8", "lm-base-int4")


@dataclass
class Side:
    """One loop's samples on one tier, one per row and repeat: first-token seconds, decode seconds, steps."""

    ttft: list[float] = field(default_factory=list)
    decode_s: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)

    def per_step_ms(self) -> list[float]:
        return [1e3 * d / n for d, n in zip(self.decode_s, self.steps, strict=True) if n]


def one_row(og, model, tier: CausalTier, ids: list[int], mine: Side, theirs: Side, og_first: bool) -> tuple:
    limit = tier.default_max_new_tokens(len(ids))
    for side in ("og", "measure") if og_first else ("measure", "og"):
        if side == "og":
            got = og_decode(og, model, ids, limit, tier.special.eos)
            theirs.ttft.append(got["first_token_s"])
            theirs.decode_s.append(sum(got["steps_s"]))
            theirs.steps.append(len(got["steps_s"]))
            og_tokens = got["tokens"]
        else:
            d = tier.greedy_ids(ids, max_new_tokens=limit)
            mine.ttft.append(d.first_token_s or 0.0)
            mine.decode_s.append(d.wall_s - (d.first_token_s or 0.0))
            mine.steps.append(d.calls - 1)
            our_tokens = list(d.tokens)
    return our_tokens, og_tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rows", type=int, default=0, help="first N golden rows (0: all)")
    args = ap.parse_args()
    try:
        import onnxruntime_genai as og
    except ImportError as exc:
        sys.exit(f"bench_genai: onnxruntime_genai is not importable ({exc}); install the genai extra")
    rows = load_golden(bundled.GOLDEN).rows
    rows = rows[: args.rows] if args.rows else rows
    tiers = {n: load_tier(DEMO / n) for n in TIERS}
    prompts = {n: [t.source_ids(r.input) for r in rows] for n, t in tiers.items()}
    sides = {n: (Side(), Side()) for n in tiers}
    differ: dict[str, list[int]] = {n: [] for n in tiers}
    with ExitStack() as stack:
        models = {}
        for name, tier in tiers.items():
            longest = max(len(i) + tier.default_max_new_tokens(len(i)) for i in prompts[name])
            models[name] = og_model(og, stack.enter_context(genai_folder(tier, longest)), tier)
            for ids in prompts[name][:8]:  # warm-up: both runtimes' first calls pay lazy setup
                one_row(og, models[name], tier, ids, Side(), Side(), False)
        for k in range(args.repeats):
            for name, tier in tiers.items():
                for i, ids in enumerate(prompts[name]):
                    ours, theirs = one_row(og, models[name], tier, ids, *sides[name], og_first=(k + i) % 2 == 1)
                    if k == 0 and ours != theirs:
                        differ[name].append(i)
    report(tiers, sides, differ, rows, args.repeats, og.__version__)
    drafter = load_tier(DEMO / "lm-small-fp32")
    speculative = run_genai_speculative(tiers["lm-base-fp32"], drafter, [r.input for r in rows])
    if speculative["status"] != "ok":
        print(f"\nspeculative lm-small-fp32 -> lm-base-fp32: {speculative['status']}: {speculative}")
        return
    print(
        f"\nspeculative lm-small-fp32 -> lm-base-fp32, k {speculative['max_draft_tokens']} (one sample per row):"
        f" og acceptance {speculative['acceptance']:.3f}, speedup over og greedy {speculative['speedup']:.2f}x;"
        f" measure acceptance {speculative['measure_acceptance']:.3f}, speedup {speculative['measure_speedup']:.2f}x;"
        f" og equals greedy on {speculative['equal_greedy_rows']}/{len(rows)} rows"
    )


def report(tiers, sides, differ, rows, repeats: int, version: str) -> None:
    print(f"onnxruntime-genai {version}; {len(rows)} golden rows x {repeats} repeats, warm, one intra-op thread each")
    print(
        f"{'tier':<18}{'measure ms/step':>16}{'og ms/step':>12}{'measure/og':>12}{'TTFT measure':>14}{'TTFT og':>9}"
        f"{'rows equal':>12}  differing rows"
    )
    for name in tiers:
        mine, theirs = sides[name]
        ours_ms, og_ms = mine.per_step_ms(), theirs.per_step_ms()
        ratio = statistics.median(a / b for a, b in zip(ours_ms, og_ms, strict=True))  # rows paired
        ttft_ours, ttft_og = statistics.median(mine.ttft) * 1e3, statistics.median(theirs.ttft) * 1e3
        equal = f"{len(rows) - len(differ[name])}/{len(rows)}"
        named = ", ".join(f"{i} ({rows[i].input})" for i in differ[name]) or "-"
        print(
            f"{name:<18}{statistics.median(ours_ms):>16.4f}{statistics.median(og_ms):>12.4f}{ratio:>11.3f}x"
            f"{ttft_ours:>13.3f} {ttft_og:>8.3f}{equal:>12}  {named}"
        )
    print(
        "\nms/step: decode time after the first token / calls after the prefill, median over rows and repeats"
        "\nmeasure/og: median of the paired ratio (one row decoded by both loops back to back; robust to the"
        "\n  bursts of a shared machine), target <= 1.10x; TTFT: ms, median over rows and repeats"
        "\nrows equal: measure's greedy tokens against onnxruntime-genai's (first repeat), eos left out of both"
    )


if __name__ == "__main__":
    main()
