"""History change-point benchmark: measure's detector beside Apache Otava on synthetic histories. Prints figures.

The histories are drawn from a real demo record's own noise: one greedy case's (the plain tier's unless
``--case``) row effects (each golden row's time), its repeat effects and its row-by-repeat residuals, resampled
per run and rescaled so one repeat's ms/token spreads by ``--repeat-sd`` (the record's own spread is printed;
``--repeat-sd 0`` keeps it). Each run adds a stated run-to-run drift (normal on the log scale), and one run in 30
is on a loaded runner, 15% slower throughout. A commit has ``--runs`` runs (the publish job measures each merge
twice: its A/A pair); each history is 200 commits with planted steps (three, at least 25 commits apart) or a creep.

measure gets each run's repeats and the stated drift as its calibration, exactly as the site does
(:func:`measure.analysis.commit_series.runs_of`, :func:`measure.analysis.change_fit.search`); Apache Otava 0.8.0
(installed by this benchmark into a temporary folder, never a dependency of measure) gets one number per
commit, the geometric mean of its runs' ms/token, through ``compute_change_points``: with its defaults, and with
the setting of a grid that finds most 5% steps at 3% drift with at most 2 false alarms per 1,000 commits (tuned on
histories of their own). A step is *found* when a change in its direction is placed within one commit of it;
any change further than three commits from every planted one is a *false alarm*. The *bound* is what placing
each step by its likelihood, knowing both levels and which runs were loaded, achieves on the same runs: no method
places more but by chance (each figure is a share of 900 steps: about ±1% at 90%).

Run: ``python benchmarks/bench_history.py [--record FILE] [--histories 300] [--runs 1 2] [--repeat-sd 0.01]``.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from measure.analysis.change_fit import search
from measure.analysis.commit_series import runs_of
from measure.analysis.comparison import CaseSamples
from measure.analysis.history_changes import find_changes
from measure.analysis.summary import summarize_record
from measure.record.io import load
from measure.record.tree import record_paths

ROOT = Path(__file__).resolve().parent.parent
COMMITS = 200
LOADED = (1 / 30, 0.15)
"""One run in 30 is on a loaded runner, 15% slower."""
OTAVA = "apache-otava==0.8.0"
GRID = [(w, p, m) for w in (20, 30, 50, 80) for p in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6) for m in (0.0, 0.02)]
"""Otava settings tried: window_len, max_pvalue, min_magnitude."""


@dataclass(frozen=True)
class Noise:
    """One case of a real record, as residuals to draw synthetic runs from."""

    case: str
    row_log: np.ndarray
    """Each golden row's mean log wall time (the row effects)."""
    repeat: np.ndarray
    """Each repeat's effect on the log, centred."""
    cells: np.ndarray
    """Row-by-repeat residuals of the log."""
    tokens: float
    scale: float
    own_sd: float
    """The record's own spread of log ms/token over its repeats."""


def noise_of(path: Path, case: str | None, repeat_sd: float) -> Noise:
    record = load(path)
    wc = record.wallclock
    name = case or record.plain
    if wc is None or name not in wc.cases or not wc.cases[name].measured:
        sys.exit(f"{path}: no measured wall-clock case {name!r}")
    c = wc.cases[name]
    logs = np.log(np.asarray(c.wall_s, dtype=float))
    row = logs.mean(axis=0)
    repeat = (logs - row).mean(axis=1)
    cells = (logs - row - repeat[:, None]).ravel()
    tokens = float(np.sum(c.tokens))
    own = float(np.log(np.asarray(c.wall_s).sum(axis=1)).std(ddof=1))
    return Noise(name, row, repeat - repeat.mean(), cells, tokens, repeat_sd / own if repeat_sd else 1.0, own)


@dataclass(frozen=True)
class History:
    points: list[tuple[int, tuple[float, ...]]]
    loaded: np.ndarray
    level: np.ndarray
    """Each commit's true log level."""
    planted: list[tuple[int, int, int]]
    """(first commit, last commit, sign) of each planted change: a step has first == last."""


def draw(noise: Noise, rng: np.random.Generator, level: np.ndarray, runs: int, drift: float) -> History:
    """Runs of every commit: ms/token per repeat from the record's residuals, the drift and loaded runners."""
    commit = np.repeat(np.arange(level.size), runs)
    loaded = rng.random(commit.size) < LOADED[0]
    shift = level[commit] + rng.normal(0, drift, commit.size) + np.where(loaded, math.log1p(LOADED[1]), 0.0)
    reps, rows = noise.repeat.size, noise.row_log.size
    rep = rng.choice(noise.repeat, (commit.size, reps)) * noise.scale
    cell = rng.choice(noise.cells, (commit.size, reps, rows)) * noise.scale
    wall = np.exp(noise.row_log[None, None, :] + shift[:, None, None] + rep[:, :, None] + cell)
    ms = 1000 * wall.sum(axis=2) / noise.tokens
    return History([(int(c), tuple(m)) for c, m in zip(commit, ms, strict=True)], loaded, level, [])


def plant(rng: np.random.Generator, sizes: list[float], n: int = COMMITS) -> tuple[np.ndarray, list]:
    while True:
        at = np.sort(rng.choice(np.arange(20, n - 20), 3, replace=False))
        if np.min(np.diff(at)) >= 25:
            break
    level, planted = np.zeros(n), []
    for k in at:
        size = float(rng.choice(sizes)) * float(rng.choice((-1, 1)))
        level[k:] += math.log1p(size)
        planted.append((int(k), int(k), 1 if size > 0 else -1))
    return level, planted


def creep(per: float = 0.005, commits: int = 10, start: int = 100, n: int = COMMITS) -> tuple[np.ndarray, list]:
    level = np.zeros(n)
    for i in range(commits):
        level[start + i :] += math.log1p(per)
    return level, [(start, start + commits - 1, 1)]


def ours(h: History, drift: float, seed: int) -> tuple[list[tuple[int, int, int, int, float, bool]], float]:
    """measure's changes (at, sign, first, last, ratio, creep) and the false alarms it states for the history."""
    runs, used, _, _ = runs_of(h.points, drift)
    found = search(runs, seed)
    out = [
        (used[c.at], 1 if c.log_ratio > 0 else -1, used[c.first], used[c.last], math.exp(c.log_ratio), c.creep)
        for c in found.changes
    ]
    return out, found.false_alarms


def per_commit(h: History) -> list[float]:
    logs: dict[int, list[float]] = {}
    for c, samples in h.points:
        logs.setdefault(c, []).append(float(np.mean(np.log(samples))))
    return [math.exp(float(np.mean(logs[c]))) for c in sorted(logs)]


def otava(compute, h: History, setting: tuple[int, float, float]) -> list[tuple[int, int]]:
    """Otava's change points (first commit of the new segment, sign) on one number per commit."""
    window, p, magnitude = setting
    found, _ = compute(per_commit(h), window_len=window, max_pvalue=p, min_magnitude=magnitude)
    return [(int(cp.index), 1 if cp.stats.forward_rel_change() > 0 else -1) for cp in found]


def score(found: list[tuple[int, int]], planted: list[tuple[int, int, int]]) -> tuple[int, int]:
    """(planted steps found within one commit in their direction, changes further than 3 commits from all)."""
    hits = sum(any(abs(at - a) <= 1 and sign == s for at, sign in found) for a, b, s in planted if a == b)
    alarms = sum(all(at < a - 3 or at > b + 3 for a, b, _ in planted) for at, _ in found)
    return hits, alarms


def bound(h: History, drift: float, noise_var: float) -> int:
    """Steps placed within one commit by their likelihood with both levels and the loaded runs known."""
    c = np.array([p[0] for p in h.points])
    m = np.array([float(np.mean(np.log(p[1]))) for p in h.points])
    keep, hits = ~h.loaded, 0
    m -= float(np.median(m[keep] - h.level[c[keep]]))  # the record's own level: the drift's centre
    edges = [0] + [a for a, _, _ in h.planted] + [h.level.size]
    for i, (a, _, _) in enumerate(h.planted):
        lo, hi = edges[i], edges[i + 2]
        sel = keep & (c >= lo) & (c < hi)
        before, after = h.level[a - 1], h.level[a]
        d = ((m[sel] - before) ** 2 - (m[sel] - after) ** 2) / (drift**2 + noise_var)
        cost = np.concatenate([[0.0], np.cumsum(np.bincount(c[sel] - lo, d, hi - lo))])
        k = lo + 1 + int(np.argmin(cost[1 : hi - lo]))
        hits += abs(k - a) <= 1
    return hits


def install_otava() -> tuple[object, str]:
    folder = tempfile.mkdtemp(prefix="otava-")
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--target", folder, OTAVA]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        return None, f"not installed ({done.stderr.strip().splitlines()[-1:]})"
    sys.path.append(folder)  # after measure's own numpy
    from otava.analysis import compute_change_points

    return compute_change_points, folder


def histories(noise, rng, n, runs, drift, sizes=None, level_of=None) -> list[History]:
    out = []
    for _ in range(n):
        level, planted = level_of(rng) if level_of else plant(rng, sizes)
        out.append(replace(draw(noise, rng, level, runs, drift), planted=planted))
    return out


def rates(found: list[list[tuple[int, int]]], hs: list[History]) -> tuple[float, float]:
    hits = alarms = steps = 0
    for f, h in zip(found, hs, strict=True):
        a, b = score(f, h.planted)
        hits, alarms, steps = hits + a, alarms + b, steps + sum(x == y for x, y, _ in h.planted)
    return hits / max(1, steps), 1000 * alarms / (len(hs) * COMMITS)


def tune(compute, hs: list[History]) -> tuple[tuple[int, float, float], float, float]:
    """The grid's setting that finds most steps with at most 2 false alarms per 1,000 commits (else fewest alarms)."""
    scored = []
    for setting in GRID:
        hit, alarms = rates([otava(compute, h, setting) for h in hs], hs)
        scored.append((alarms <= 2, hit if alarms <= 2 else -alarms, setting, hit, alarms))
    _, _, setting, hit, alarms = max(scored, key=lambda s: (s[0], s[1]))
    return setting, hit, alarms


def found_by_us(hs: list[History], drift: float) -> tuple[list, float]:
    out, stated = [], 0.0
    for i, h in enumerate(hs):
        found, expected = ours(h, drift, i)
        out.append(found)
        stated += expected
    return out, stated


def steps_table(noise, rng, args, compute, best) -> None:
    print(f"\nsteps found within ±1 commit, and false alarms per 1,000 commits ({args.histories} histories each)")
    print(
        f"{'runs/commit':>11}{'drift':>7}{'steps':>7}{'measure':>17}{'bound':>7}{'Otava default':>19}{'Otava best':>17}"
    )
    for runs in args.runs:
        for drift, sizes in ((0.03, [0.05]), (0.01, [0.03]), (0.03, [0.03]), (0.03, [0.10])):
            hs = histories(noise, rng, args.histories, runs, drift, sizes)
            ours_found, _ = found_by_us(hs, drift)
            hit, fa = rates([[(f[0], f[1]) for f in found] for found in ours_found], hs)
            var = float(np.mean([np.var(np.log(p[1]), ddof=1) / len(p[1]) for p in hs[0].points]))
            top = sum(bound(h, drift, var) for h in hs) / (3 * len(hs))
            row = f"{runs:>11}{drift:>7.0%}{'±' + format(sizes[0], '.0%'):>7}{hit:>10.1%}{fa:>5.1f}/k{top:>7.1%}"
            if compute is not None:
                for setting in ((50, 0.001, 0.0), best[runs]):
                    o_hit, o_fa = rates([otava(compute, h, setting) for h in hs], hs)
                    row += f"{o_hit:>12.1%}{o_fa:>5.1f}/k"
            print(row)


def false_alarm_table(noise, rng, args, compute, best) -> None:
    n = args.histories * 2
    print(f"\nstep-free histories ({n} of {COMMITS} commits, loaded runners included): false alarms per 1,000 commits")
    print(f"{'runs/commit':>11}{'drift':>7}{'measure states':>16}{'measured':>10}{'ratio':>7}{'Otava default':>15}")
    for runs in args.runs:
        for drift in (0.03, 0.01):
            hs = histories(noise, rng, n, runs, drift, level_of=lambda _: (np.zeros(COMMITS), []))
            found, stated = found_by_us(hs, drift)
            measured = 1000 * sum(len(f) for f in found) / (n * COMMITS)
            stated = 1000 * stated / (n * COMMITS)
            row = f"{runs:>11}{drift:>7.0%}{stated:>16.2f}{measured:>10.2f}{measured / stated if stated else 0:>7.2f}"
            if compute is not None:
                row += f"{rates([otava(compute, h, (50, 0.001, 0.0)) for h in hs], hs)[1]:>15.2f}"
            print(row)


def creep_table(noise, rng, args, compute) -> None:
    print(f"\na creep of 0.5% a commit over commits 100-109 ({args.histories} histories each)")
    head = f"{'one change':>12}{'size (median)':>15}{'range (median)':>18}{'creep':>7}{'Otava':>7}"
    print(f"{'runs/commit':>11}{'drift':>7}{head}")
    for runs in args.runs:
        for drift in (0.03, 0.01):
            hs = histories(noise, rng, args.histories, runs, drift, level_of=lambda _: creep())
            found, _ = found_by_us(hs, drift)
            near = [[f for f in fs if 90 <= f[0] <= 120] for fs in found]
            one = [n[0] for n in near if len(n) == 1]
            size = float(np.median([f[4] for f in one])) - 1 if one else math.nan
            last_good = int(np.median([f[2] - 1 for f in one])) if one else -1
            first_bad = int(np.median([f[3] for f in one])) if one else -1
            crept = sum(f[5] for f in one) / max(1, len(one))
            row = f"{runs:>11}{drift:>7.0%}{len(one) / len(hs):>12.0%}{size:>+15.1%}{f'{last_good} -> {first_bad}':>18}"
            row += f"{crept:>7.0%}"
            if compute is not None:
                o = [[f for f in otava(compute, h, (50, 0.001, 0.0)) if 90 <= f[0] <= 120] for h in hs]
                row += f"{sum(len(x) == 1 for x in o) / len(hs):>7.0%}"
            print(row)


def scale(path: Path, records: int, rng: np.random.Generator) -> None:
    """measure's search over one machine's year: ``records`` cached summaries, two runs a commit."""
    base = summarize_record(load(path), "0" * 64)

    def scaled(found: dict[str, CaseSamples], f: float) -> dict[str, CaseSamples]:
        return {n: CaseSamples(c.kind, tuple(v * f for v in c.ms_per_token), c.estimate) for n, c in found.items()}

    summaries, commits = [], records // 2
    steps = {int(k): rng.choice((0.95, 1.05)) for k in rng.choice(commits, 10, replace=False)}
    level = 1.0
    start = datetime(2026, 1, 1)
    for i in range(records):
        if i % 2 == 0:
            level *= steps.pop(i // 2, 1.0)
        f = level * math.exp(rng.normal(0, 0.03))
        when = start + timedelta(minutes=52 * i)  # a year
        summaries.append(
            replace(
                base,
                sha256=f"{i:064x}",
                run_id=when.strftime("%Y%m%dT%H%M%SZ") + f"-{i:06x}",
                started_at=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                commit=f"{i // 2:040x}",
                dirty=False,
                samples=scaled(base.samples, f),
                cpu_samples=scaled(base.cpu_samples, f),
                profile_samples={m: scaled(t, f) for m, t in base.profile_samples.items()},
            )
        )
    started = time.perf_counter()
    found = find_changes(summaries, {})
    took = time.perf_counter() - started
    print(
        f"\n{records:,} records ({commits:,} commits x 2 runs, one machine, {len(found.searched)} series): "
        f"searched in {took:.1f} s; {len(found.changes)} change points, "
        f"expected false alarms {found.expected_false_alarms:.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, default=None)
    ap.add_argument("--case", default=None, help="the greedy case whose noise is drawn (default: the plain tier)")
    ap.add_argument("--repeat-sd", type=float, default=0.01, help="one repeat's spread (0: the record's own)")
    ap.add_argument("--histories", type=int, default=300)
    ap.add_argument("--runs", type=int, nargs="+", default=[1, 2], help="runs per commit")
    ap.add_argument("--records", type=int, default=10_000, help="records of the timed search (0: skip)")
    ap.add_argument("--no-otava", action="store_true")
    args = ap.parse_args()
    path = args.record or (record_paths(ROOT / "results") or [None])[-1]
    if path is None:
        sys.exit("no record: run `measure run` first or pass --record")
    noise = noise_of(Path(path), args.case, args.repeat_sd)
    rng = np.random.default_rng(20261205)
    print(
        f"record {path}: {noise.case}, {noise.repeat.size} repeats x {noise.row_log.size} rows; its repeats spread "
        f"{noise.own_sd:.1%} (sd of log ms/token), drawn at {noise.own_sd * noise.scale:.1%}; "
        f"one run in {round(1 / LOADED[0])} {LOADED[1]:.0%} slower"
    )
    compute, where = (None, "skipped") if args.no_otava else install_otava()
    print(f"Apache Otava: {OTAVA} in {where}")
    best = {}
    if compute is not None:
        for runs in args.runs:
            tuning = histories(noise, rng, max(30, args.histories // 5), runs, 0.03, [0.05])
            best[runs], hit, alarms = tune(compute, tuning)
            said = f"{best[runs]}: {hit:.0%} of 5% steps at 3%, {alarms:.1f} false alarms/k"
            print(f"  Otava's best at {runs} run(s) a commit (window, p, magnitude): {said}")
    steps_table(noise, rng, args, compute, best)
    false_alarm_table(noise, rng, args, compute, best)
    creep_table(noise, rng, args, compute)
    if args.records:
        scale(Path(path), args.records, rng)


if __name__ == "__main__":
    main()
