"""``measure show``'s cost sections: the measured cost model, the cost profile, and each tier against the machine's
memory-bandwidth bound (kept apart from :mod:`measure.commands.show` so each stays a page long)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from measure.analysis.profile import TierProfile
    from measure.analysis.record_analysis import Analysis


def _print(text: str = "") -> None:
    """Print a line built from record strings: control characters shown escaped, never sent raw."""
    from measure.terminal import clean

    print("\n".join(clean(part) for part in text.split("\n")))


def _ci(e) -> str:
    short = f" at {e.short_level:.1%}" if e.short_level is not None else ""
    return f"{e.value:.3f} [{e.lo:.3f}, {e.hi:.3f}]{short}"


def _ratio(x: float | None) -> str:
    return "None" if x is None else f"{x:.4f}"


def _est(e, scale: float = 1.0, digits: int = 2) -> str:
    return "-" if e is None else f"{e.value * scale:.{digits}f}"


def print_cost_model(m, w: int) -> None:
    """Single calls timed on their own and what they predict; layout findings. Nothing for older records."""
    if m is None:
        return
    if m.tiers:
        _print(f"\nverifier call of n tokens over a single step (medians over {m.repeats} repeats)")
        for t in m.tiers:
            ratios = " ".join(f"{r.value:.2f}" for r in t.vs_single)
            fit = f", fit {1e6 * t.line.fixed_s:.1f} + {1e6 * t.line.per_token_s:.2f}·n µs" if t.line else ""
            _print(f"  {t.tier:<{w}}single {t.call_us[0].value:.1f} µs{fit}; n = {t.n[0]}..{t.n[-1]}: x {ratios}")
    if m.pairs:
        cw = max([28, *(len(p.case) + 2 for p in m.pairs)])
        _print("\ncost model (predicted speedups from timed calls; efficiency = observed / measured-cost prediction)")
        _print("  inside: speedup within onnxruntime; in loop = inside / measured; harness = observed / inside")
        head = f"{'c':>7}{'batch x':>9}{'Leviathan':>11}{'measured':>10}{'inside':>8}{'in loop':>9}{'harness':>9}"
        _print(f"  {'case':<{cw}}{head}{'observed':>10}  efficiency")
        for row in m.pairs:
            p = row.prediction
            inside = "-" if row.inside is None else f"{row.inside.value:.2f}"
            parts = "".join(f"{'-' if v is None else f'{v:.2f}':>9}" for v in (row.in_loop, row.harness))
            _print(
                f"  {row.case:<{cw}}{p.cost_ratio:>7.2f}{p.batch_ratio:>9.2f}{p.leviathan:>11.2f}"
                f"{p.measured_cost:>10.2f}{inside:>8}{parts}{row.observed.value:>10.2f}  {_ci(row.efficiency)}"
            )
    for f in m.layouts:
        same = "" if f.same_outputs else " (outputs differ)"
        _print(f"\nlayouts {f.name}: merged costs {_ci(f.ratio)}x split per token{same}")


def print_profile(costs: tuple[TierProfile, ...], w: int) -> None:
    """Size, load, memory, first token and percentiles per tier; records from before the profile print sizes only."""
    from measure.terminal import columns

    print("\ncost profile (medians; memory: a one-tier worker's peak over an import-only worker's)")
    head = ["tier", "MB disk", "load cold ms", "warm ms", "memory MB", "peak MB", "1st token ms", "next ms/tok"]
    rows = [[*head, "row ms p50/p90/p99", "threads"]]
    for c in costs:
        pct = "-" if c.row_ms is None else f"{c.row_ms.p50.value:.2f}/{c.row_ms.p90.value:.2f}/{c.row_ms.p99.value:.2f}"
        rows.append(
            [
                c.tier,
                f"{c.bytes / 1e6:.2f}",
                _est(c.load_cold_ms, digits=1),
                _est(c.load_warm_ms, digits=1),
                _est(c.memory_bytes, 1e-6, 1),
                _est(c.peak_rss_bytes, 1e-6, 1),
                _est(c.first_token_ms, digits=3),
                _est(c.next_token_ms, digits=3),
                pct,
                "-" if c.fastest_threads is None else str(c.fastest_threads),
            ]
        )
    for line in columns(rows, right=frozenset(range(1, 10))):
        _print(line)
    sweeps = [c for c in costs if c.threads_ms_per_token]
    if sweeps:
        print("\nintra-op thread sweep (ms/token [95% CI]; * fastest)")
        for c in sweeps:
            cells = "  ".join(
                f"{n}: {_ci(e)}{'*' if n == c.fastest_threads else ''}" for n, e in c.threads_ms_per_token.items()
            )
            print(f"  {c.tier:<{w}}{cells}")


def print_roofline(a: Analysis) -> None:
    """Each tier's bytes per decode step, its memory-bandwidth bound, measured step time and efficiency, with the
    machine's probed bandwidth and caches, then the sentence that says which effect decides."""
    from measure.analysis.roofline import MB, machine_line
    from measure.terminal import columns

    r = a.roofline
    if r is None:
        return
    machine = machine_line(r.bandwidth) if r.bandwidth is not None else "no bandwidth probe in this record"
    _print(f"\nmemory-bandwidth bound ({machine})")
    rows = [
        ["tier", "MB/token", "weights", "embedding", "cache (positions)", "bound ms", "decode ms/token", "efficiency"]
    ]
    for t in r.tiers:
        bound = "-" if t.bound_ms_per_token is None else f"{t.bound_ms_per_token:.3f}"
        eff = "in cache" if t.limit == "cache" else "-" if t.efficiency is None else f"{t.efficiency:.1%}"
        rows.append(
            [
                t.tier,
                f"{t.bytes_per_token / MB:.2f}",
                f"{t.weights_bytes / MB:.2f}",
                f"{t.embedding_bytes / MB:.4f}",
                f"{t.kv_bytes / MB:.3f} ({t.positions:.0f})",
                bound,
                "-" if t.ms_per_token is None else _ci(t.ms_per_token),
                eff,
            ]
        )
    for line in columns(rows, right=frozenset({1, 2, 3, 5, 7})):
        _print(line)
    for t in r.tiers:
        _print(f"  {t.finding}")
    for t in (t for t in r.tiers if t.kernels):
        rates = "; ".join(
            f"{k.label} {k.bytes_per_s / 1e9:.1f} GB/s" + ("" if k.share is None else f" ({k.share:.0%})")
            for k in t.kernels
        )
        at = "" if t.kernel_ms_per_token is None else f"; a step at those rates {t.kernel_ms_per_token:.3f} ms"
        _print(f"  {t.tier} kernels alone (of the bandwidth): {rates}{at}")
