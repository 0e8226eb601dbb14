"""What ``measure compare`` calls, simulated from real records' noise and measured on real runs: prints figures.

``simulate`` (the default) draws record pairs from the noise of real records
(``tests/data/record-v*.json`` unless ``--record`` names others) and runs
:func:`measure.analysis.comparison.compare` itself on each:

* the noise of one repeat is a residual of log ms/token per repeat (each
  case's repeats minus their mean, rescaled by sqrt(n / (n - 1))), drawn with
  replacement from the record's pool of all cases' residuals;
* a simulated run has ``--repeats`` repeats of ``--cases`` cases (the
  record's cases, repeated under new names to reach that count, so Holm
  corrects over as many cases as a real suite); ``--drift`` adds one
  run-level shift (normal on the log scale) shared by every case of a run,
  the drift an A/A calibration measures; ``--calibrated`` gives compare that
  drift as a calibration with ``--calibration-pairs`` pairs would;
* A/A: false slower/faster and "same" as shares of all case comparisons;
* power: the share of pairs in which one case (the plain tier), made
  slower by each step of ``--effects``, is called slower; the detectable
  change is the smallest effect called with 80% power (interpolated);
* ``--paired``: BASE and NEW measured in one job, repeats paired: the two
  sides' residuals are two cases of one recorded repeat (what that repeat's
  host state did to both); compared with ``compare(..., paired=True)``.

``paired`` reads a real paired A/A job (``measure ab`` of one config against
itself: ``tests/data/paired-aa-*.json`` unless ``--pair`` names two records) and
prints, per metric: that job's own calls, paired and unpaired (Welch on the same
samples), with each case's per-repeat log SD of the paired differences beside
the unpaired one; then, simulated from that job's noise (each case's own
per-repeat paired differences, centred, and each side's own residuals: each
case's SD times draws from all cases' values in units of their SD), the A/A
false-call and "same" rates and, per tier, the smallest slowdown called with
80% power, paired (one job) and unpaired (two runs with the same noise).

``real`` runs the wall-clock suite of the demo tiers on this machine: A, then
alternately A again and A with small-int4 made 30% slower, compares each later
run with the first, and prints the calls in both metrics (wall and CPU). With
``--paired``, each round is two paired jobs instead: A against A, and A against
A with small-int4 made ``--slowdown`` slower (10% by default).

``instructions`` measures the instruction metric for real, then simulates it:
two separate stages of callgrind counts (as two records' ``measure run
--instructions`` would make them: ``--runs`` child processes per tier, each
tier over the first ``--rows`` golden rows) for ``--tiers``; it prints each
tier's spread within a stage and between the two stages, then draws record
pairs from that noise (normal on the log scale: the pooled sd between runs,
plus a per-record shift of the pooled sd between stages) and runs
:func:`measure.analysis.comparison.compare` on them at the policy's
``instructions_tolerance``: A/A false calls and "same" at that band and at
±5%, and the power to call a 3% and a 5% slowdown of one tier; ``--inflate``
repeats the simulation with the noise that many times larger.

Run: ``python benchmarks/bench_compare.py [simulate] [--pairs 400] [--repeats 7] [--cases 15]``
or ``python benchmarks/bench_compare.py paired [--pair BASE NEW] [--pairs 200] [--repeats 7]``
or ``python benchmarks/bench_compare.py real [--rows N] [--repeats N] [--rounds N] [--paired]``
or ``python benchmarks/bench_compare.py instructions [--tiers base-int8 small-int4] [--rows 8] [--runs 3] [--busy]``
(``--busy``: stage B runs with every core busy, so the two stages' spreads show what load does to the count).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from measure import bundled
from measure.analysis.comparison import CaseSamples, Drift, compare, compare_records, pairing_of
from measure.analysis.stats import summarize
from measure.engine.session import Slowdown
from measure.policy import Policy
from measure.record.io import load
from measure.record.model import Record
from measure.suites.config import load_config
from measure.suites.runner import run

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
EFFECTS = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5)
PAIRED_EFFECTS = (0.05, 0.06, 0.07, 0.08, 0.1, 0.125, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5)
"""Finer near the band: paired, a change just past +5% is already called."""


@dataclass(frozen=True)
class Noise:
    """One record's noise: per-repeat log residuals (repeats x cases), its cases' levels and kinds."""

    name: str
    target: int
    """The case a slowdown is injected into: the plain tier's (the first greedy case when none is named)."""
    cases: tuple[str, ...]
    kinds: tuple[str, ...]
    levels: np.ndarray
    residuals: np.ndarray

    @property
    def pool(self) -> np.ndarray:
        return self.residuals.ravel()


def noise_of(record: Record, name: str, metric: str = "wall") -> Noise:
    cases, kinds, levels, cols = [], [], [], []
    for case_name, c in sorted(record.wallclock.cases.items()):
        ms = c.per_repeat_ms_per_token if metric == "wall" else c.per_repeat_cpu_ms_per_token
        if ms is None or ms.size < 2:
            continue
        logs = np.log(ms)
        cases.append(case_name)
        kinds.append(c.kind)
        levels.append(float(np.exp(logs.mean())))
        cols.append((logs - logs.mean()) * np.sqrt(logs.size / (logs.size - 1)))
    if not cases:
        raise SystemExit(f"{name}: no case with two or more repeats in metric {metric}")
    greedy = [i for i, k in enumerate(kinds) if k == "greedy"] or [0]
    target = cases.index(record.plain) if record.plain in cases else greedy[0]
    return Noise(name, target, tuple(cases), tuple(kinds), np.asarray(levels), np.column_stack(cols))


def _run(
    noise: Noise, rng: np.random.Generator, names: list[str], repeats: int, drift: float, scale: dict[int, float]
) -> dict[str, CaseSamples]:
    shift = rng.normal(0, drift) if drift else 0.0
    out = {}
    for i, name in enumerate(names):
        j = i % len(noise.cases)
        ms = noise.levels[j] * np.exp(rng.choice(noise.pool, repeats) + shift) * scale.get(i, 1.0)
        out[name] = CaseSamples(noise.kinds[j], tuple(ms), summarize(ms))
    return out


def _paired_runs(
    noise: Noise, rng: np.random.Generator, names: list[str], repeats: int, scale: dict[int, float]
) -> tuple[dict[str, CaseSamples], dict[str, CaseSamples]]:
    """One job, repeats paired: both sides' residuals come from one recorded repeat, two of its cases."""
    base, new = {}, {}
    k = noise.residuals.shape[1]
    for i, name in enumerate(names):
        j = i % k
        rows = rng.integers(0, noise.residuals.shape[0], repeats)
        other = (j + 1 + rng.integers(0, k - 1, repeats)) % k if k > 1 else np.full(repeats, j)
        b = noise.levels[j] * np.exp(noise.residuals[rows, j])
        n = noise.levels[j] * np.exp(noise.residuals[rows, other]) * scale.get(i, 1.0)
        base[name] = CaseSamples(noise.kinds[j], tuple(b), summarize(b))
        new[name] = CaseSamples(noise.kinds[j], tuple(n), summarize(n))
    return base, new


def _calls(noise: Noise, args: argparse.Namespace, effect: float, rng: np.random.Generator) -> dict[str, float]:
    policy = Policy(compare_tolerance=args.tolerance)
    names = [f"{noise.cases[i % len(noise.cases)]}#{i // len(noise.cases)}" for i in range(args.cases)]
    target = noise.target
    scale = {target: 1 + effect} if effect else {}
    drift = Drift(args.drift, float(args.calibration_pairs)) if args.calibrated and args.drift else None
    counts = {o: 0 for o in ("slower", "faster", "same", "inconclusive")}
    hit = 0
    for _ in range(args.pairs):
        if args.paired:
            base, new = _paired_runs(noise, rng, names, args.repeats, scale)
            found = compare(base, new, policy, paired=True)
        else:
            base = _run(noise, rng, names, args.repeats, args.drift, {})
            new = _run(noise, rng, names, args.repeats, args.drift, scale)
            found = compare(base, new, policy, drift=drift)
        for c in found:
            counts[c.outcome] += 1
        hit += found[target].outcome == "slower"
    total = sum(counts.values())
    return {o: n / total for o, n in counts.items()} | {"power": hit / args.pairs}


def _detectable(powers: list[tuple[float, float]]) -> str:
    for (e0, p0), (e1, p1) in zip([(0.0, 0.0), *powers], powers, strict=False):
        if p1 >= 0.8:
            e = e0 + (e1 - e0) * (0.8 - p0) / (p1 - p0) if p1 > p0 else e1
            return f"+{e:.0%}"
    return f"more than +{powers[-1][0]:.0%}"


def simulate(args: argparse.Namespace) -> None:
    paths = args.record or sorted(DATA.glob("record-v*.json"))
    rng = np.random.default_rng(args.seed)
    mode = "paired in one job" if args.paired else "unpaired (two runs)"
    drift = f"drift sd {args.drift:.0%}{' (calibrated)' if args.calibrated else ' (not calibrated)'}"
    print(f"{args.metric}, {mode}, {args.repeats} repeats, {args.cases} cases, band ±{args.tolerance:.0%}, {drift}")
    for path in paths:
        noise = noise_of(load(Path(path)), Path(path).name, args.metric)
        sd = float(np.std(noise.pool, ddof=1))
        target = noise.cases[noise.target]
        aa = _calls(noise, args, 0.0, rng)
        print(
            f"{noise.name}: per-repeat sd {sd:.1%}; A/A over {args.pairs} pairs: false slower {aa['slower']:.2%}, "
            f"false faster {aa['faster']:.2%}, same {aa['same']:.1%}, inconclusive {aa['inconclusive']:.1%}"
        )
        powers = []
        for effect in args.effects:
            p = _calls(noise, args, effect, rng)["power"]
            powers.append((effect, p))
            print(f"  +{effect:.0%} on {target}: called slower {p:.0%}")
            if p >= 0.95:
                break
        print(f"  detectable change at 80% power: {_detectable(powers)}")


@dataclass(frozen=True)
class PairedNoise:
    """A real paired A/A job's noise per case: each side's centred log residuals and the centred differences."""

    cases: tuple[str, ...]
    kinds: tuple[str, ...]
    levels: np.ndarray
    base: np.ndarray
    new: np.ndarray
    diff: np.ndarray
    """repeats x cases: log new - log base per repeat, less its mean, rescaled by sqrt(n / (n - 1))."""


def _centred(logs: np.ndarray) -> np.ndarray:
    return (logs - logs.mean(axis=0)) * np.sqrt(logs.shape[0] / (logs.shape[0] - 1))


def paired_noise(base: Record, new: Record, metric: str) -> PairedNoise:
    from measure.analysis.comparison import samples_of

    b, n = samples_of(base, metric), samples_of(new, metric)
    names = [c for c in b if c in n and len(b[c].ms_per_token) == len(n[c].ms_per_token) >= 2]
    x = np.log(np.array([b[c].ms_per_token for c in names])).T
    y = np.log(np.array([n[c].ms_per_token for c in names])).T
    return PairedNoise(
        tuple(names), tuple(b[c].kind for c in names), np.exp(x.mean(axis=0)), _centred(x), _centred(y), _centred(y - x)
    )


def _shape(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each case's SD, and the pool of all cases' values in units of their case's SD.

    Drawing seven values from a case's own seven (with replacement) repeats some, which shrinks the
    sample SD and makes any t-test look surer than it is; drawing from the pooled shape, scaled by the
    case's own SD, keeps each tier's noise level without that artefact (as ``simulate`` pools residuals).
    """
    sd = values.std(axis=0, ddof=1)
    return sd, (values / np.where(sd > 0, sd, 1.0)).ravel()


def _paired_sim(
    noise: PairedNoise, rng: np.random.Generator, repeats: int, paired: bool, scale: dict[int, float]
) -> list:
    base, new = {}, {}
    (sd_b, z_b), (sd_n, z_n), (sd_d, z_d) = _shape(noise.base), _shape(noise.new), _shape(noise.diff)
    for j, name in enumerate(noise.cases):
        b_log = sd_b[j] * rng.choice(z_b, repeats)
        n_log = b_log + sd_d[j] * rng.choice(z_d, repeats) if paired else sd_n[j] * rng.choice(z_n, repeats)
        b = noise.levels[j] * np.exp(b_log)
        m = noise.levels[j] * np.exp(n_log) * scale.get(j, 1.0)
        base[name] = CaseSamples(noise.kinds[j], tuple(b), summarize(b))
        new[name] = CaseSamples(noise.kinds[j], tuple(m), summarize(m))
    return compare(base, new, Policy(), paired=paired)


def paired(args: argparse.Namespace) -> None:
    paths = args.pair or sorted(DATA.glob("paired-aa-*.json"))
    base, new = (load(Path(p)) for p in paths)
    print(f"{paths[0]} and {paths[1]}: {pairing_of(base, new) or 'not paired'}")
    rng = np.random.default_rng(args.seed)
    for metric in args.metric or ["wall", "cpu"]:
        noise = paired_noise(base, new, metric)
        print(f"\n{metric}: the job itself ({len(noise.cases)} cases, band ±5%)")
        for label, flag in (("paired", True), ("unpaired (Welch)", False)):
            calls = [c.outcome for c in compare_records(base, new, metric=metric, paired=flag)]
            false = sum(o in ("slower", "faster") for o in calls)
            print(f"  {label}: same {calls.count('same')}/{len(calls)}, false slower/faster {false}")
        print(f"  {'case':<28}{'sd paired diff':>15}{'sd unpaired diff':>18}")
        for j, name in enumerate(noise.cases):
            sd_d = float(np.std(noise.diff[:, j], ddof=1))
            sd_u = float(np.sqrt(np.var(noise.base[:, j], ddof=1) + np.var(noise.new[:, j], ddof=1)))
            print(f"  {name:<28}{sd_d:>15.1%}{sd_u:>18.1%}")
        print(f"  simulated, {args.repeats} repeats, {args.pairs} jobs each:")
        for label, flag in (("paired", True), ("unpaired", False)):
            outcomes = [c.outcome for _ in range(args.pairs) for c in _paired_sim(noise, rng, args.repeats, flag, {})]
            print(
                f"  A/A {label}: false slower {outcomes.count('slower') / len(outcomes):.2%}, "
                f"false faster {outcomes.count('faster') / len(outcomes):.2%}, "
                f"same {outcomes.count('same') / len(outcomes):.1%}"
            )
        print(f"  {'tier':<28}{'detectable paired':>18}{'unpaired':>12}")
        for j, name in enumerate(noise.cases):
            if noise.kinds[j] != "greedy" and not args.all_cases:
                continue
            found = []
            for flag in (True, False):
                powers = []
                for effect in args.effects:
                    runs = [_paired_sim(noise, rng, args.repeats, flag, {j: 1 + effect}) for _ in range(args.pairs)]
                    powers.append((effect, sum(r[j].outcome == "slower" for r in runs) / args.pairs))
                    if powers[-1][1] >= 0.95:
                        break
                found.append(_detectable(powers))
            print(f"  {name:<28}{found[0]:>18}{found[1]:>12}")


CONFIG = """
golden = "rows.jsonl"
[session]
intra_op_threads = 1
inter_op_threads = 1
[[tiers]]
name = "base-fp32"
path = "{demo}/base-fp32"
role = "reference"
[[tiers]]
name = "base-int8"
path = "{demo}/base-int8"
role = "plain"
[[tiers]]
name = "small-int4"
path = "{demo}/small-int4"
role = "lite"
[[pairs]]
drafter = "small-int4"
verifier = "base-int8"
[wallclock]
repeats = {repeats}
k = [4]
"""


def real(args: argparse.Namespace) -> None:

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        lines = bundled.GOLDEN.read_text(encoding="utf-8").splitlines(keepends=True)[: args.rows]
        (folder / "rows.jsonl").write_text("".join(lines), encoding="utf-8")
        path = folder / "suite.toml"
        path.write_text(CONFIG.format(demo=bundled.DEMO_DIR.as_posix(), repeats=args.repeats), encoding="utf-8")
        config = load_config(path)
        if args.paired:
            real_paired(config, folder, args)
            return
        first = load(run(config, ["wallclock"], folder / "results", argv=["bench"]))
        print(f"{'comparison':<16}{'metric':<7}{'case':<28}{'new/base':>9}  {'95% CI':<16}{'p change':>9}  outcome")
        for i in range(args.rounds):
            for label, hooks in (("A/A", None), ("slowed 30%", {"small-int4": Slowdown(0.3)})):
                new = load(run(config, ["wallclock"], folder / "results", argv=["bench"], after_run=hooks))
                for metric in ("wall", "cpu"):
                    for c in compare_records(first, new, metric=metric):
                        ci = f"[{c.ratio.lo:.3f}, {c.ratio.hi:.3f}]"
                        print(
                            f"{label + f' #{i + 1}':<16}{metric:<7}{c.case:<28}{c.ratio.value:>9.3f}  {ci:<16}"
                            f"{c.p_change:>9.4f}  {c.outcome}"
                        )


def real_paired(config, folder: Path, args: argparse.Namespace) -> None:
    """Paired jobs (``measure ab``): the config against itself, then against itself with small-int4 slowed."""
    from measure.suites.paired import run_paired

    slowed = f"slowed {args.slowdown:.0%}"
    print(f"{'job':<16}{'metric':<7}{'case':<28}{'new/base':>9}  {'95% CI':<16}{'p change':>9}  outcome")
    for i in range(args.rounds):
        for label, hooks in (("A/A", None), (slowed, {"small-int4": Slowdown(args.slowdown)})):
            paths = run_paired(config, config, folder / "ab", argv=["bench"], after_run=hooks)
            base, new = (load(p) for p in paths)
            for metric in ("wall", "cpu"):
                for c in compare_records(base, new, metric=metric):
                    ci = f"[{c.ratio.lo:.3f}, {c.ratio.hi:.3f}]"
                    print(
                        f"{label + f' #{i + 1}':<16}{metric:<7}{c.case:<28}{c.ratio.value:>9.3f}  {ci:<16}"
                        f"{c.p_change:>9.4f}  {c.outcome}"
                    )


def _stage(tiers: list[str], rows: int, runs: int) -> dict[str, np.ndarray]:
    """One record's worth of counts: per tier, instructions per token of ``runs`` separate callgrind runs."""
    from measure.suites.callgrind import count

    out = {}
    for name in tiers:
        found = [count(bundled.DEMO_DIR / name, bundled.GOLDEN, rows) for _ in range(runs)]
        out[name] = np.array([c.per_token for c in found])
    return out


def _simulated(
    levels: dict[str, float], sd_run: float, sd_record: float, args: argparse.Namespace, rng: np.random.Generator
) -> None:
    """A/A calls and power of ``compare(..., metric="instructions")`` on record pairs drawn from this noise."""
    policy = Policy()
    names = list(levels)

    def record(scale: dict[str, float]) -> dict[str, CaseSamples]:
        out = {}
        for name in names:
            shift = rng.normal(0, sd_record) if sd_record else 0.0
            per_token = levels[name] * np.exp(rng.normal(0, sd_run, args.runs) + shift) * scale.get(name, 1.0)
            out[name] = CaseSamples("greedy", tuple(per_token), summarize(per_token))
        return out

    for band in (None, 0.05):
        counts = {o: 0 for o in ("slower", "faster", "same", "inconclusive")}
        for _ in range(args.pairs):
            for c in compare(record({}), record({}), policy, tolerance=band, metric="instructions"):
                counts[c.outcome] += 1
        total = sum(counts.values())
        tol = max(policy.instructions_tolerance, band or 0.0)
        print(
            f"    A/A at ±{tol:.0%} over {args.pairs} pairs x {len(names)} tiers: false slower "
            f"{counts['slower'] / total:.2%}, false faster {counts['faster'] / total:.2%}, "
            f"same {counts['same'] / total:.1%}, inconclusive {counts['inconclusive'] / total:.1%}"
        )
    target = names[0]
    for effect in (0.02, 0.03, 0.05):
        hit = sum(
            next(
                c
                for c in compare(record({}), record({target: 1 + effect}), policy, metric="instructions")
                if c.case == target
            ).outcome
            == "slower"
            for _ in range(args.pairs)
        )
        print(f"    +{effect:.0%} on {target}: called slower in {hit / args.pairs:.0%} of {args.pairs} pairs")


@contextlib.contextmanager
def _busy(on: bool) -> Iterator[None]:
    """With ``on``, every core kept busy (``yes > /dev/null`` per core) while the block runs: a loaded runner."""
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(os.cpu_count() or 1 if on else 0)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def instructions(args: argparse.Namespace) -> None:
    print(f"callgrind instructions per token, {len(args.tiers)} tiers, first {args.rows} rows, {args.runs} runs")
    a = _stage(args.tiers, args.rows, args.runs)
    with _busy(args.busy):
        b = _stage(args.tiers, args.rows, args.runs)
    if args.busy:
        print(f"stage A: machine idle; stage B: every core busy ({os.cpu_count()} x 'yes > /dev/null')")
    within, between = [], []
    print(f"{'tier':<20}{'per token (A)':>16}{'spread A':>10}{'spread B':>10}{'B/A':>10}")
    for name in args.tiers:
        x, y = np.log(a[name]), np.log(b[name])
        within += [*(x - x.mean()) * np.sqrt(x.size / (x.size - 1)), *(y - y.mean()) * np.sqrt(y.size / (y.size - 1))]
        between.append(float(y.mean() - x.mean()))
        spread = [float((v.max() - v.min()) / v.min()) for v in (a[name], b[name])]
        ratio = float(np.median(b[name]) / np.median(a[name]))
        print(f"{name:<20}{np.median(a[name]):>16,.0f}{spread[0]:>10.4%}{spread[1]:>10.4%}{ratio:>10.5f}")
        print(f"{'':<20}A: {', '.join(f'{v:,.0f}' for v in a[name])}; B: {', '.join(f'{v:,.0f}' for v in b[name])}")
    sd_run = float(np.sqrt(np.mean(np.square(within))))
    # between stages: E[D^2] = 2 sd_record^2 + 2 sd_run^2 / runs (method of moments, never below zero)
    excess = float(np.mean(np.square(between))) - 2 * sd_run**2 / args.runs
    sd_record = float(np.sqrt(max(0.0, excess) / 2))
    worst = max(abs(np.exp(d) - 1) for d in between)
    print(f"sd between runs {sd_run:.4%}; drift between stages {sd_record:.4%}; worst A/A ratio off by {worst:.4%}")
    rng = np.random.default_rng(args.seed)
    levels = {name: float(np.median(a[name])) for name in args.tiers}
    for factor in (1.0, *args.inflate):
        print(
            f"  simulated, noise x{factor:g} (sd {sd_run * factor:.4%} per run, {sd_record * factor:.4%} per record):"
        )
        _simulated(levels, sd_run * factor, sd_record * factor, args, rng)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode")
    sim = sub.add_parser("simulate", help="draw record pairs from real records' noise (default)")
    sim.add_argument("--record", action="append", type=Path, help="a record whose noise to draw (repeatable)")
    sim.add_argument("--metric", choices=["wall", "cpu"], default="wall")
    sim.add_argument("--pairs", type=int, default=400)
    sim.add_argument("--repeats", type=int, default=7)
    sim.add_argument("--cases", type=int, default=15)
    sim.add_argument("--tolerance", type=float, default=0.05)
    sim.add_argument("--drift", type=float, default=0.0, help="run-level drift sd on the log scale (0.05 = 5%%)")
    sim.add_argument("--calibrated", action="store_true", help="compare knows the drift (an A/A calibration)")
    sim.add_argument("--calibration-pairs", type=int, default=3)
    sim.add_argument("--paired", action="store_true", help="BASE and NEW in one job, repeats paired")
    sim.add_argument("--effects", type=float, nargs="+", default=list(EFFECTS))
    sim.add_argument("--seed", type=int, default=17)
    pa = sub.add_parser("paired", help="a real paired A/A job's calls, and simulations from its noise")
    pa.add_argument("--pair", nargs=2, type=Path, metavar=("BASE", "NEW"), help="the job's two records")
    pa.add_argument("--metric", action="append", choices=["wall", "cpu"])
    pa.add_argument("--pairs", type=int, default=200)
    pa.add_argument("--repeats", type=int, default=7)
    pa.add_argument("--effects", type=float, nargs="+", default=list(PAIRED_EFFECTS))
    pa.add_argument("--all-cases", action="store_true", help="detectable change of speculative cases too")
    pa.add_argument("--seed", type=int, default=17)
    rl = sub.add_parser("real", help="real A/A runs and a real 30%% slowdown on this machine")
    rl.add_argument("--rows", type=int, default=32)
    rl.add_argument("--repeats", type=int, default=9)
    rl.add_argument("--rounds", type=int, default=2, help="A/A and slowed runs each (default 2)")
    rl.add_argument("--paired", action="store_true", help="paired jobs (measure ab) instead of separate runs")
    rl.add_argument("--slowdown", type=float, default=0.1, help="with --paired: small-int4's slowdown (default 0.1)")
    ins = sub.add_parser("instructions", help="the instruction metric: real A/A spread, then simulated calls")
    ins.add_argument("--tiers", nargs="+", default=["base-int8", "small-int4", "base-fp32"])
    ins.add_argument("--rows", type=int, default=8)
    ins.add_argument("--runs", type=int, default=3, help="callgrind runs per tier per stage (a record's runs)")
    ins.add_argument("--pairs", type=int, default=400)
    ins.add_argument("--inflate", type=float, nargs="*", default=[10.0, 30.0], help="also simulate noisier runs")
    ins.add_argument("--seed", type=int, default=17)
    ins.add_argument("--busy", action="store_true", help="run stage B with every core busy (a loaded runner)")
    args = ap.parse_args()
    if args.mode == "instructions":
        instructions(args)
    elif args.mode == "real":
        real(args)
    elif args.mode == "paired":
        paired(args)
    else:
        if args.mode is None:
            args = sim.parse_args([])
        simulate(args)


if __name__ == "__main__":
    main()
