"""The cost profile of each tier: load time and peak memory in worker processes, and an intra-op thread sweep;
first, the machine's memory read bandwidth (:mod:`measure.suites.bandwidth`), which each tier's bound divides by.

Part of the wall-clock suite (its ``profile`` section); first-token latency
comes from the suite's own greedy passes. Each worker process loads and
decodes one tier only, so the peak it reports is that tier's alone; its
first load is *cold* (first in a fresh process; the OS file cache is warm
after the suite's own loads), its later loads *warm*. Workers of every tier
and of the baseline (imports only) run interleaved, one at a time, so drift
on a shared machine hits them alike. Only raw samples are stored.
"""

from __future__ import annotations

import gc
from dataclasses import replace
from typing import Any

from measure.engine.load import load_tier
from measure.record.model.cost_profile import (
    add_baseline_worker,
    add_tier_worker,
    profile_part,
    thread_sweep_part,
    thread_sweep_tier,
)
from measure.suites import Progress, Save, no_progress, us
from measure.suites.bandwidth import run_probe, threads_of
from measure.suites.child import ask_child
from measure.suites.config import SuiteConfig

WORKER = "measure.suites.profile_worker"
BASELINE_IMPORTS = "measure.engine.seq2seq.tier, measure.engine.greedy (onnxruntime, numpy, tokenizers); no tier loaded"
WORKER_TIMEOUT_S = 600


def _worker(request: dict[str, Any]) -> dict[str, Any]:
    """One fresh worker process; a failure is one line naming the tier and onnxruntime's last words."""
    who = request.get("tier") or "the baseline"
    answer: dict[str, Any] = ask_child(WORKER, request, f"profile worker for {who}", WORKER_TIMEOUT_S)
    return answer


def run_memory_and_load(
    config: SuiteConfig, texts: list[str], out: dict[str, Any], save: Save, progress: Progress = no_progress
) -> None:
    wc = config.wallclock
    rows = texts[: wc.profile_rows]
    out.update(
        profile_part(wc.profile_workers, wc.warm_loads, len(rows), BASELINE_IMPORTS, [t.name for t in config.tiers])
    )
    out["bandwidth"] = run_probe(threads_of(config.session.intra_op_threads))  # the bound's denominator, ~1 s
    save()
    session = config.session.to_dict()
    total = wc.profile_workers * (len(config.tiers) + 1)
    done = 0
    for _ in range(wc.profile_workers):
        add_baseline_worker(out, _worker({"tier": None})["peak_rss"])
        done += 1
        progress("profile baseline worker", done, total)
        for spec in config.tiers:
            request = {"tier": str(spec.path), "session": session, "texts": rows, "warm_loads": wc.warm_loads}
            request |= {"prompt": spec.prompt} if spec.prompt is not None else {}
            limit = config.new_tokens("wallclock", spec.name)
            answer = _worker(request | ({"max_new_tokens": limit} if limit is not None else {}))
            warm = [us(x) for x in answer["load_warm_s"]]
            add_tier_worker(out, spec.name, us(answer["load_cold_s"]), warm, answer["peak_rss"]["bytes"])
            done += 1
            progress(f"profile worker {spec.name}", done, total)
        save()


def run_thread_sweep(
    config: SuiteConfig, texts: list[str], out: dict[str, Any], save: Save, progress: Progress = no_progress
) -> None:
    """Every greedy tier at each intra-op thread count, repeats interleaved across counts; which is fastest.

    Each timed pass gets a session of its own, dropped before the next count's: a live session's
    intra-op pool keeps spinning after each call, and on a 2-core host that made the one-thread
    session interleaved with a two-thread one 3x slower than alone (226 vs 70 ms over 8 rows).
    """
    wc = config.wallclock
    rows = texts[: wc.profile_rows]
    out.update(thread_sweep_part(list(wc.threads), wc.repeats, len(rows)))
    total = len(config.tiers) * wc.repeats
    done = 0
    sessions = {n: replace(config.session, intra_op_threads=n) for n in wc.threads}
    for spec in config.tiers:
        runs: dict[int, list[list[float]]] = {n: [] for n in wc.threads}
        tokens: list[int] = []
        for rep in range(wc.repeats):
            for n, session in sessions.items():
                limit = config.new_tokens("wallclock", spec.name)
                tier = load_tier(spec.path, session, label=spec.name, prompt=spec.prompt, max_new_tokens=limit)
                tier.greedy(rows[0])  # untimed: the first call of a new session pays its allocations
                results = [tier.greedy(text) for text in rows]
                del tier
                gc.collect()  # the session and its thread pool go before the next count is timed
                runs[n].append([us(d.wall_s) for d in results])
                tokens = [len(d.tokens) for d in results]
            done += 1
            progress(f"profile threads {spec.name} repeat {rep + 1}", done, total)
        totals = {n: sorted(sum(r) for r in samples)[len(samples) // 2] for n, samples in runs.items()}
        out["tiers"][spec.name] = thread_sweep_tier(tokens, runs, min(totals, key=lambda n: totals[n]))
        save()
