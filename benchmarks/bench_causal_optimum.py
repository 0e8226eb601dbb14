"""Decoder-only engine against optimum's ``ORTModelForCausalLM.generate`` and against the leanest loop (issue 27).

One run, side by side, on the bundled causal tiers (one intra-op thread everywhere, warm sessions):

* ``measure``: :func:`causal_greedy_ids` (prompt prefilled in one call, then the tier's lane: for
  optimum's ``causal`` layout the :class:`BoundLane`, one C-level ``run_with_iobinding`` per token);
* ``optimum``: ``ORTModelForCausalLM.generate`` on the same ``model.onnx`` (greedy, ``use_cache=True``,
  ``use_io_binding`` left at optimum's CPU default, which is off: ``session.run`` with numpy feeds),
  fed the same prompt ids (:meth:`CausalTier.source_ids`) with an all-ones ``attention_mask``,
  ``max_new_tokens`` = measure's limit for the row, eos and pad ids from the tier;
* ``floor``: the leanest Python loop over measure's sessions: the prefill through onnxruntime's C++
  ``run`` with one feeds dict, its presents copied into a :class:`BoundCache` (the buffers and step
  bindings measure uses), then one bound C-level call per token with nothing built but the trace
  entry. It must decode exactly what measure decodes (asserted).

Loops are interleaved row by row (measure, optimum, floor; the order reversed every other repeat).
Both sides are timed the same way, prompt ids in -> ids out: from before the first array or tensor
is made to the last token decided (measure's ``trace.ended``; for optimum a streamer's ``put``
of that token, so its last stopping check and return are not counted against it). Time to first
token: to the first output decided (measure's ``first_token_s``; optimum's second ``put``, the
first being the prompt). ms/token: the time after the first token / the model calls after the prefill
(eos counts as decided: one call per step in both loops). Identity is checked against measure on
every golden row; a differing row is named with its first divergent step and the top-2 logit margin
of a plain onnxruntime loop (public ``run``, presents fed back) there, and which side that loop equals.
Then speculative decoding (lm-small-fp32 -> lm-base-fp32, k = 2, 4) against the verifier's greedy.

Needs optimum-onnx, transformers and torch (measure never imports them):
``PYTHONPATH=$PWD /work/lm-venv/bin/python benchmarks/bench_causal_optimum.py [--repeats N] [--tiers ...]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter

import numpy as np
import onnxruntime as ort
import torch
from optimum.onnxruntime import ORTModelForCausalLM
from transformers.generation.streamers import BaseStreamer

from measure import bundled
from measure.engine.causal.bound_lane import BoundCache
from measure.engine.causal.tier import CausalTier
from measure.engine.session import Trace
from measure.engine.speculative import open_pair
from measure.suites.golden import load_golden

DEMO = bundled.GOLDEN.parent
TIERS = ("lm-base-fp32", "lm-base-int8", "lm-base-int4", "lm-small-fp32", "lm-small-int4")
LOOPS = ("measure", "optimum", "floor")
PAIR, KS = ("lm-small-fp32", "lm-base-fp32"), (2, 4)


@dataclass(frozen=True)
class Run:
    """One row decoded by one loop: its ids (eos left out) and its clock."""

    tokens: tuple[int, ...]
    wall_s: float
    """Prompt ids in -> last token decided."""
    first_s: float
    """Prompt ids in -> first token decided."""
    steps: int
    """Model calls after the prefill."""
    run_s: float
    """Seconds inside onnxruntime's run (optimum: around its public ``session.run``)."""
    parts: tuple[float, ...] = ()
    """Outside-run seconds: before the prefill, prefill -> first step, between steps, after the last call."""


def outside_parts(trace: Trace, wall_s: float) -> tuple[float, ...]:
    gaps = trace.outside_s
    return (gaps[0], sum(gaps[1:2]), sum(gaps[2:]), trace.started + wall_s - trace.log[-1][2])


class Stamps(BaseStreamer):
    """generate's streamer: the moment each ``put`` arrives (the prompt first, then one per token decided)."""

    def __init__(self) -> None:
        self.at: list[float] = []
        self.tokens: list[int] = []

    def put(self, value: torch.Tensor) -> None:
        self.at.append(perf_counter())
        self.tokens.append(int(value.reshape(-1)[-1]))

    def end(self) -> None:
        pass


class OptimumLoop:
    """``ORTModelForCausalLM`` on one tier folder, its ``session.run`` timed (two clock reads per call)."""

    def __init__(self, tier: CausalTier) -> None:
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        self.model = ORTModelForCausalLM.from_pretrained(
            tier.path, session_options=so, provider="CPUExecutionProvider", use_cache=True
        )
        self.eos, self.pad = tier.special.eos, tier.special.pad
        self.inside: list[float] = []
        session = self.model.session
        public = session.run

        def timed(*args: object, **kwargs: object) -> list[np.ndarray]:
            start = perf_counter()
            out = public(*args, **kwargs)
            self.inside.append(perf_counter() - start)
            return out

        session.run = timed

    def decode(self, ids: list[int], limit: int) -> Run:
        stamps, self.inside = Stamps(), []
        start = perf_counter()
        input_ids = torch.tensor([ids])
        self.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=limit,
            do_sample=False,
            use_cache=True,
            eos_token_id=self.eos,
            pad_token_id=self.pad,
            streamer=stamps,
        )
        out = stamps.tokens[1:]
        out = out[: out.index(self.eos)] if self.eos in out else out
        return Run(tuple(out), stamps.at[-1] - start, stamps.at[1] - start, len(stamps.at) - 2, sum(self.inside))


def measure_run(tier: CausalTier, ids: list[int], limit: int) -> Run:
    trace = Trace()  # made just before the call, not inside it: the call's frame counts against measure
    d = tier.greedy_ids(ids, max_new_tokens=limit, trace=trace)
    assert d.first_token_s is not None
    return Run(d.tokens, d.wall_s, d.first_token_s, d.calls - 1, d.run_s, outside_parts(trace, d.wall_s))


def floor_run(tier: CausalTier, cache: BoundCache, ids: list[int], limit: int, trace: Trace) -> Run:
    """The least Python between the same calls: no lane, no lending, no methods between calls, no checks.
    ``trace`` is made by the caller, as for :func:`measure_run`: both clocks start before the call's frame."""
    g, eos, log, n = tier.graphs, tier.special.eos, trace.log.append, len(ids)
    session = g.steady
    feeds = {"input_ids": np.array([ids], dtype=g.ids_dtype), "attention_mask": g.masks[n]}
    if g.positions:
        feeds["position_ids"] = g.spans[0, n]
    for i, name in enumerate(g.past):
        feeds[name] = cache.view(0, i, 0)
    label = session.label
    start = perf_counter()
    got = session.session._sess.run(g.names, feeds, None)
    log((label, start, perf_counter()))
    token = int(got[-1][0, -1].argmax())
    first = perf_counter() - trace.started
    out: list[int] = []
    if token != eos:
        for i, present in enumerate(got[:-1]):
            cache.view(1, i, n)[...] = present
        out.append(token)
        run, options, steps = cache.run, cache.options, cache.steps
        slot, place, logits = cache.token, cache.position, cache.logits
        length, side, append = n, 1, out.append
        while len(out) < limit:
            slot[0, 0] = token
            place[0, 0] = length
            binding = steps[length + 1, side]
            start = perf_counter()
            run(binding, options)
            log((label, start, perf_counter()))
            length, side = length + 1, 1 - side
            token = int(logits.argmax())
            if token == eos:
                break
            append(token)
    trace.ended = perf_counter()
    wall = trace.ended - trace.started
    return Run(tuple(out), wall, first, len(trace.log) - 1, trace.run_s(), outside_parts(trace, wall))


def plain_greedy(tier: CausalTier, ids: list[int], limit: int) -> tuple[list[int], list[float]]:
    """The plain onnxruntime loop (public run, presents fed back as returned): ids and top-2 margin per step."""
    g, sess = tier.graphs, tier.graphs.steady.session
    past = {p: np.zeros((1, g.shape.heads, 0, g.shape.head_dim), g.shape.kv_dtype) for p in g.past}
    new, done, out, margins = list(ids), 0, [], []
    for _ in range(limit):
        feeds = {
            "input_ids": np.array([new], g.ids_dtype),
            "attention_mask": np.ones((1, done + len(new)), g.mask_dtype),
        }
        if g.positions:
            feeds["position_ids"] = np.arange(done, done + len(new), dtype=g.pos_dtype)[None]
        got = dict(zip(g.names, sess.run(g.names, feeds | past), strict=True))
        logits = got["logits"][0, -1]
        top = np.sort(logits)[-2:]
        margins.append(float(top[1] - top[0]))
        token, done = int(logits.argmax()), done + len(new)
        if token == tier.special.eos:
            break
        out.append(token)
        past, new = {p: got[q] for p, q in zip(g.past, g.names, strict=False)}, [token]
    return out, margins


def per_token_ms(runs: list[Run]) -> float:
    return 1e3 * sum(r.wall_s - r.first_s for r in runs) / sum(r.steps for r in runs)


def row_median(reps: list[list[Run]], fn: Callable[[Run], float]) -> list[float]:
    """Per row, the median over repeats: a rare pause (a neighbour, the garbage collector) moves no figure."""
    return [statistics.median(fn(rep[i]) for rep in reps) for i in range(len(reps[0]))]


def overhead(reps: list[list[Run]]) -> float:
    """Share of the decode's wall time outside onnxruntime's run: row medians summed."""
    return sum(row_median(reps, lambda r: r.wall_s - r.run_s)) / sum(row_median(reps, lambda r: r.wall_s))


def diverge(a: tuple[int, ...] | list[int], b: tuple[int, ...] | list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


Runs = dict[str, dict[str, list[list[Run]]]]
"""runs[tier][loop][repeat][row]."""


def collect(tiers: dict[str, CausalTier], prompts: dict, limits: dict, repeats: int) -> tuple[Runs, dict]:
    """Every loop on every row, row by row (the order reversed every other repeat), after one warm-up pass."""
    optimum = {n: OptimumLoop(t) for n, t in tiers.items()}
    caches = {n: BoundCache(t.graphs, t.context or 0) for n, t in tiers.items()}

    def loops(name: str) -> dict[str, Callable[[list[int], int], Run]]:
        t, o, c = tiers[name], optimum[name], caches[name]
        return {
            "measure": lambda ids, lim: measure_run(t, ids, lim),
            "optimum": lambda ids, lim: o.decode(ids, lim),
            "floor": lambda ids, lim: floor_run(t, c, ids, lim, Trace()),
        }

    fns = {n: loops(n) for n in tiers}
    for name in tiers:
        for ids, lim in zip(prompts[name], limits[name], strict=True):
            for fn in fns[name].values():
                fn(ids, lim)
    runs: Runs = {n: {lp: [] for lp in LOOPS} for n in tiers}
    for rep in range(repeats):
        order = LOOPS if rep % 2 == 0 else LOOPS[::-1]
        for name in tiers:
            for lp in LOOPS:
                runs[name][lp].append([])
            for ids, lim in zip(prompts[name], limits[name], strict=True):
                for lp in order:
                    runs[name][lp][-1].append(fns[name][lp](ids, lim))
    for name, by in runs.items():  # every loop decodes alike in every repeat; the floor decodes what measure does
        for lp, reps in by.items():
            assert all([r.tokens for r in rep] == [r.tokens for r in reps[0]] for rep in reps), f"{name} {lp}"
        assert [r.tokens for r in by["floor"][0]] == [r.tokens for r in by["measure"][0]], f"{name}: floor differs"
    return runs, {n: o.model.use_io_binding for n, o in optimum.items()}


def identity(
    name: str, tier: CausalTier, by: dict[str, list[list[Run]]], rows: list, prompts: list, limits: list
) -> tuple[int, list[str]]:
    """Rows whose ids equal measure's, and a note per differing row (its divergence and a plain loop's margin)."""
    same, notes = 0, []
    for i, row in enumerate(rows):
        mt, ot = by["measure"][0][i].tokens, by["optimum"][0][i].tokens
        if mt == ot:
            same += 1
            continue
        plain, margins = plain_greedy(tier, prompts[i], limits[i])
        step = diverge(mt, ot)
        side = "measure" if list(mt) == plain else "optimum" if list(ot) == plain else "neither"
        margin = margins[step] if step < len(margins) else float("nan")
        notes.append(
            f"{name} row {i + 1} {row.input!r}: first divergent step {step}, plain top-2 margin {margin:.5f}; "
            f"the plain onnxruntime loop equals {side}"
        )
    return same, notes


def paired(m_reps: list[list[Run]], o_reps: list[list[Run]], fn: Callable[[Run], float]) -> list[float]:
    """Per row: the median over repeats of optimum's figure / measure's (rows where both are defined)."""
    out = []
    for i in range(len(m_reps[0])):
        ratios = [fn(o[i]) / fn(m[i]) for m, o in zip(m_reps, o_reps, strict=True) if m[i].steps and o[i].steps]
        if ratios:
            out.append(statistics.median(ratios))
    return out


def table(runs: Runs, tiers: dict[str, CausalTier], rows: list, prompts: dict, limits: dict) -> None:
    head = (
        f"{'tier':<15}{'measure ms/tok':>15}{'optimum ms/tok':>15}{'ratio':>7}{'row ratio':>16}"
        f"{'TTFT ms m/o':>15}{'TTFT x':>8}{'identical':>10}{'ovh measure':>12}{'ovh floor':>10}{'ovh optimum':>12}"
    )
    print(head + "\n" + "-" * len(head))
    notes: list[str] = []
    for name, by in runs.items():
        m_reps, o_reps = by["measure"], by["optimum"]
        m_ms = statistics.median(per_token_ms(rep) for rep in m_reps)
        o_ms = statistics.median(per_token_ms(rep) for rep in o_reps)
        rows_x = paired(m_reps, o_reps, lambda r: per_token_ms([r]))
        ttft_m = statistics.median(r.first_s for rep in m_reps for r in rep)
        ttft_o = statistics.median(r.first_s for rep in o_reps for r in rep)
        ttft_x = statistics.median(paired(m_reps, o_reps, lambda r: r.first_s))
        same, more = identity(name, tiers[name], by, rows, prompts[name], limits[name])
        notes += more
        ovh = {lp: overhead(by[lp]) for lp in LOOPS}
        cells = (
            f"{m_ms:>15.4f}{o_ms:>15.4f}{o_ms / m_ms:>7.2f}"
            f"{f'{statistics.median(rows_x):.2f} (min {min(rows_x):.2f})':>16}"
            f"{f'{1e3 * ttft_m:.3f}/{1e3 * ttft_o:.3f}':>15}{ttft_x:>8.2f}{f'{same}/{len(rows)}':>10}"
            f"{ovh['measure']:>12.1%}{ovh['floor']:>10.1%}{ovh['optimum']:>12.1%}"
        )
        print(f"{name:<15}{cells}")
    for note in notes:
        print("  differs: " + note)
    if not notes:
        print("  every row token-identical between measure and optimum on every tier")
    print(
        "\nms/tok: (last token decided - first token decided) / model calls after the prefill, summed over the rows,"
        "\n  median over repeats; ratio: optimum / measure; row ratio: per row the median over repeats of the paired"
        "\n  ratio, then the median (and min) over rows; TTFT: prompt ids in -> first token decided, median over rows"
        "\n  and repeats (m/o: measure/optimum); TTFT x: optimum / measure, paired per row as above"
        "\novh: share of the wall time outside onnxruntime's run (per row the median over repeats, summed): measure"
        "\n  and floor time the C-level call, optimum its public session.run; identical: rows whose ids equal measure's"
    )


def harness(runs: Runs) -> None:
    """measure's overhead against the floor's, and where the difference lies (us per row)."""
    print("\nharness overhead, measure - floor (points; target <= 1), and outside-run us per row (per row the median")
    print("over repeats, mean over rows): before the prefill | prefill -> first step | between steps | after the last")
    for name, by in runs.items():
        diff = overhead(by["measure"]) - overhead(by["floor"])
        cells = []
        for lp in ("measure", "floor"):
            parts = [sum(row_median(by[lp], lambda r, j=j: r.parts[j])) / len(by[lp][0]) for j in range(4)]
            cells.append(" | ".join(f"{1e6 * x:5.1f}" for x in parts))
        print(f"  {name:<15}{100 * diff:+6.2f}   measure {cells[0]}   floor {cells[1]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tiers", nargs="*", default=list(TIERS))
    args = ap.parse_args()
    torch.set_num_threads(1)  # generate's own tensor work on one thread too, as onnxruntime's
    rows = load_golden(bundled.GOLDEN).rows
    tiers = {n: CausalTier(DEMO / n) for n in args.tiers}
    prompts = {n: [t.source_ids(r.input) for r in rows] for n, t in tiers.items()}
    limits = {n: [t.default_max_new_tokens(len(i)) for i in prompts[n]] for n, t in tiers.items()}
    started = perf_counter()
    runs, binding = collect(tiers, prompts, limits, args.repeats)
    versions = f"onnxruntime {ort.__version__}, torch {torch.__version__}, python {sys.version.split()[0]}"
    print(f"{len(rows)} golden rows x {args.repeats} repeats in {perf_counter() - started:.0f}s; one intra-op thread")
    print(f"{versions}; optimum use_io_binding = {sorted(set(binding.values()))} (its CPU default)")
    table(runs, tiers, rows, prompts, limits)
    harness(runs)
    speculative(rows, tiers, prompts, limits)


def speculative(rows: list, tiers: dict[str, CausalTier], prompts: dict, limits: dict) -> None:
    """Speculative output against the verifier's greedy on every row (fp32: identical by construction)."""
    if not all(n in tiers for n in PAIR):
        print("\nspeculative: skipped (needs tiers " + " and ".join(PAIR) + ")")
        return
    pair, verifier = open_pair(tiers[PAIR[0]], tiers[PAIR[1]]), PAIR[1]
    print(f"\nspeculative {PAIR[0]} -> {PAIR[1]} (batched verify) against {PAIR[1]}'s greedy:")
    todo = list(zip(prompts[verifier], limits[verifier], strict=True))
    greedy = [tiers[verifier].greedy_ids(i, max_new_tokens=lim) for i, lim in todo]
    for k in KS:
        decoded = [pair.decode_ids(i, k, max_new_tokens=lim) for i, lim in todo]
        same = sum(d.tokens == g.tokens for d, g in zip(decoded, greedy, strict=True))
        proposed, accepted = sum(d.proposed for d in decoded), sum(d.accepted for d in decoded)
        differing = [i + 1 for i, (d, g) in enumerate(zip(decoded, greedy, strict=True)) if d.tokens != g.tokens]
        print(
            f"  k={k}: {same}/{len(rows)} rows identical, acceptance {accepted / proposed:.4f} "
            f"({accepted}/{proposed} drafts)" + (f"; differing rows {differing}" if differing else "")
        )


if __name__ == "__main__":
    main()
