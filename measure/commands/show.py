"""Summarise one run record: per-tier timings, speculative pairs, framing parity and verdicts."""

from __future__ import annotations

import argparse
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from measure.analysis.record_analysis import Analysis
    from measure.analysis.timings import PairTiming
    from measure.record.model import Record


from measure.commands.show_costs import _ci, _print, _ratio, print_cost_model, print_profile, print_roofline


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="a run record JSON file")


def _print_framing(r, w: int, pw: int) -> None:
    """Single-step vs batched per tier and runtime leg, then acceptance three ways."""
    _print("\nframing parity (single-step == batched argmax; worst present |diff|)")
    for t in r.python_tiers:
        cells = "  ".join(
            f"k={b.block}: {b.argmax_agree}/{b.argmax_total} ({b.present_max_abs_diff:.1e})" for b in t.blocks
        )
        _print(f"  {t.tier:<{w}}{t.precision:<{pw}}{cells}")
        if t.prefill:  # decoder-only: the prompt token by token against blocks and whole
            cells = "  ".join(
                f"k={b.block}: {b.argmax_agree}/{b.argmax_total} ({b.present_max_abs_diff:.1e})" for b in t.prefill
            )
            _print(f"  {'':<{w}}{'prefill':<{pw}}{cells}")
    python = {t.tier: t for t in r.python_tiers}
    for leg in r.legs[1:]:
        _print_leg(leg, python, w, pw)
    _print("\nacceptance (probe / runtime), output preservation")
    aw = max([28, *(len(a.name) + 2 for a in r.framing.acceptance)])
    for a in r.framing.acceptance:
        kind = "self" if a.self_pair else "pair"
        _print(
            f"  {a.name:<{aw}}{kind:<6}probe {_ratio(a.probe.ratio)}  "
            f"runtime {_ratio(a.runtime.ratio)}  preserved {a.preserved}/{a.rows}"
        )


def _print_leg(leg, python: dict, w: int, pw: int) -> None:
    """One runtime leg after Python's: how it ran, then per tier its parity, its decodes against Python's, speed."""
    from measure.record.model import SOFTWARE_ADAPTER

    host = f" on {leg.host}" if leg.host else ""
    provider = f" ({leg.provider})" if leg.provider else ""
    _print(f"\n{leg.runtime} {leg.version or ''}{provider} leg{host}: {leg.status}  {leg.reason}".rstrip())
    if leg.execution:
        e = leg.execution
        isolated = "cross-origin isolated" if e.cross_origin_isolated else "not isolated"
        _print(f"  {e.provider}, {e.threads} thread(s), {isolated}, SIMD {'on' if e.simd else 'off'}")
        if e.adapter:
            _print(f"  adapter: {e.adapter.note}")
    for t in leg.tiers:
        if not t.measured:
            _print(f"  {t.tier:<{w}}{t.status}: {t.reason}")
            continue
        speed = f"; greedy {median(t.timing.ms_per_token):.3f} ms/token" if t.timing else ""
        if t.genai is not None:
            _print_genai_tier(t, w, pw, speed)
            continue
        speed = f"; {SOFTWARE_ADAPTER}" if leg.software_adapter else speed
        ref = python.get(t.tier)
        if ref is not None and ref.output_ids is not None and t.output_ids is not None:
            same = sum(a == b for a, b in zip(ref.output_ids, t.output_ids, strict=False))
            speed = f"; greedy decodes {same}/{len(ref.output_ids)} rows as Python's{speed}"
        _print(
            f"  {t.tier:<{w}}{t.precision:<{pw}}{t.rows_same}/{t.rows} rows single == batched "
            f"(present |diff| <= {t.present_max_abs_diff:.1e}){speed}"
        )
    for p in leg.pairs:
        _print_genai_pair(p, w)


def _print_genai_tier(t, w: int, pw: int, speed: str) -> None:
    """A tier under onnxruntime-genai: its decodes against Python's, and measure's loop over the compiled one."""
    g, s = t.genai, t.genai.measure_over_og
    loop = ""
    if s.median is not None:
        loop = f"; measure's loop {s.median:.2f}x og per step [{s.lo:.2f}, {s.hi:.2f}] ({len(s.samples)} repeats)"
    _print(
        f"  {t.tier:<{w}}{t.precision:<{pw}}{g.equal_rows}/{len(t.outputs)} rows = Python "
        f"(logits |diff| <= {g.logits_max_abs_diff:.1e}){speed}{loop}"
    )


def _print_genai_pair(p, w: int) -> None:
    """og's draft-model speculative decoding of a pair beside measure's at the same k."""
    if not p.measured:
        _print(f"  speculative {p.name}: {p.status}: {p.reason}")
        return

    def x(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}x"

    _print(
        f"  speculative {p.name} k={p.k}: acceptance og {_ratio(p.acceptance.ratio)} / measure "
        f"{_ratio(p.measure_acceptance.ratio)}; speedup og {x(p.speedup)} / measure {x(p.measure_speedup)}; "
        f"rows = greedy og {p.equal_greedy_rows}/{p.rows} / measure {p.measure_equal_greedy_rows}/{p.rows}"
    )


def _print_instructions(ins, w: int) -> None:
    """Callgrind's counts per tier: a proxy for one tier over time, so no ratio between tiers is printed."""
    _print(f"\ninstructions per token (callgrind, {ins.valgrind}, first {ins.rows} rows; one tier over time only)")
    _print(f"  {'tier':<{w}}{'median':>14}{'spread':>10}{'runs':>6}")
    import numpy as np

    for name, t in ins.tiers.items():
        median = float(np.median(t.per_token))
        spread = float(np.ptp(t.per_token)) / median
        _print(f"  {name:<{w}}{median:>14,.0f}{spread:>10.4%}{t.runs:>6}")


def _print_tokenizing(wc) -> None:
    """What the wall-clock samples time, and the tokenizing kept out of them (records timed from ids)."""
    if wc.timed != "ids":
        _print("  timed from the source text in: tokenizing is inside ms/token and overhead")
        return
    cells = [f"{c.name} {c.tokenize_us_per_row:.1f}" for c in wc.cases.values() if c.tokenize_us_per_row is not None]
    _print("  timed from token ids in to ids out; tokenizing, timed on its own (median µs per row, encode + decode):")
    if cells:
        _print("    " + ", ".join(cells))


def _print_header(r: Record) -> None:
    env = r.environment
    state = "complete" if r.complete else f"INCOMPLETE ({r.error or 'not finished'})"
    _print(f"run {r.run_id} on {r.machine_id} ({env.machine.cpu}), {state}")
    _print(
        f"golden rows {r.golden.rows} sha256 {r.golden.sha256[:12]}; "
        f"onnxruntime {env.onnxruntime}; started {r.started_at}"
    )


def _print_wallclock(a: Analysis, w: int, pw: int) -> None:
    """Per-tier ms/token, ratio to plain, exponent and overhead, an int4 tier's MatMulNBits settings beside its
    speed; then what the samples time."""
    from measure.terminal import columns

    _print("\nwall-clock (median [95% CI])")
    faithful = ["fidelity (mean KLD, same top-1)"] if a.fidelity else []
    rows = [["tier", "precision", "ms/token", "x plain", "exponent", "overhead", "quantization", *faithful]]
    for t in a.tiers:
        nbits = a.record.tiers[t.tier].nbits
        ratio_s = _ci(t.ratio_vs_plain) if t.ratio_vs_plain else "-"
        exp_s = _ci(t.exponent) if t.exponent else "-"
        quant = nbits.label if nbits is not None else "-"
        f = a.fidelity_of(t.tier)
        tail = [f"{f.greedy.kld_mean.value:.3g}, {f.greedy.same_top1.value:.1%}" if f else "-"] if faithful else []
        rows.append([t.tier, t.precision, _ci(t.ms_per_token), ratio_s, exp_s, f"{t.overhead:.1%}", quant, *tail])
    for line in columns(rows, right=frozenset({5})):
        _print(line)
    if a.record.wallclock is not None:
        _print_tokenizing(a.record.wallclock)


def _print_causal(a: Analysis, w: int) -> None:
    """Decoder-only tiers: the prompt's cost apart from the output's."""
    from measure.terminal import columns

    _print("\ndecoder-only tiers (median [95% CI]; prefill = time to first token over the prompt's tokens)")
    rows = [["tier", "prompt tokens", "prefill ms/prompt token", "first token ms", "decode ms/token", "max new"]]
    for c in a.causal:
        decode = _ci(c.decode_ms_per_token) if c.decode_ms_per_token else "-"
        entry = a.record.tiers[c.tier]
        limit = "-" if entry.max_new_tokens is None else f"{entry.max_new_tokens} ({entry.max_new_tokens_from})"
        rows.append(
            [c.tier, str(c.prompt_tokens), _ci(c.prefill_ms_per_prompt_token), _ci(c.first_token_ms), decode, limit]
        )
    for line in columns(rows, right=frozenset({1})):
        _print(line)


def _print_pairs(pairs: tuple[PairTiming, ...]) -> None:
    """Each speculative case: acceptance, accepted length, cost ratio, predicted and observed speedup."""
    from measure.terminal import columns

    _print("\nspeculative pairs")
    rows = [["case", "accept", "len/round", "c", "predicted", "observed speedup"]]
    for p in pairs:
        acc = f"{p.acceptance:.4f}" if p.acceptance is not None else "-"
        rows.append(
            [
                p.case,
                acc,
                f"{p.mean_accepted_length:.2f}",
                f"{p.cost_ratio:.2f}",
                f"{p.predicted_speedup:.2f}",
                _ci(p.observed_speedup),
            ]
        )
    for line in columns(rows, right=frozenset({1, 2, 3, 4})):
        _print(line)


def _print_plan(r: Record) -> None:
    """A budgeted run's plan: what it measured of what the config asks, what it cut, how it ended."""
    p = r.plan
    if p is None:
        return
    s, n, ran = p.shape, r.golden.rows, {step for step, seconds in p.steps.items() if seconds > 0}
    parts = [f"wall-clock {len(p.wallclock_rows)}/{n} rows x {s.get('repeats', '?')} repeats (up to {p.max_repeats})"]
    if "framing" in ran or not p.steps:  # a plan from before steps were recorded: as it was written
        parts.append(f"framing {len(p.framing_rows)}/{n} rows")
    if "fidelity" in ran:
        parts.append(f"fidelity {len(p.fidelity_rows or p.framing_rows)}/{n} rows")
    if "profile" in ran or not p.steps:
        parts.append(f"{s.get('profile_workers', '?')} profile worker(s)")
    _print(
        f"\nplan: budget {p.budget_s / 60:.1f} min, estimated {p.estimate_s / 60:.1f} min (minimum "
        f"{p.minimum_s / 60:.1f}); {', '.join(parts)}"
    )
    if p.outcome is not None:
        o = p.outcome
        why = {"tolerance": "every interval within the tolerance", "repeats": "the wide cases at their cap"}
        stop = why.get(o.stopped or "", "the budget spent" if o.stopped == "budget" else "no top-up")
        _print(f"  took {o.spent_s / 60:.1f} min; top-up: {o.top_up_rounds} round(s), stopped: {stop}")
    for cut in p.cut:
        _print(f"  cut: {cut}")


def _print_explore(a: Analysis) -> None:
    """``measure explore``'s search: every recipe tried, measured or dropped, with the stage and why; each measured
    recipe's time against its reference's baseline recipe where that was timed."""
    r = a.record
    ex = r.explore
    if ex is None:
        return
    timed = {t.tier: t for t in a.tiers}
    plain = next((name for name, t in r.tiers.items() if t.role == "plain"), None)
    grid = ex.grid or "the default grid"
    _print(
        f"\nexplore: {len(ex.candidates)} recipe tiers from {grid}, screened on {ex.screen_rows} rows (role {ex.role})"
    )
    for c in ex.candidates:
        said = "measured" if c.dropped is None else f"dropped at {c.dropped}: {c.reason}"
        base = ex.baseline_of(c.reference)
        if c.baseline and c.measured:
            said = f"{said}; timed as the baseline" if c.dropped else "measured, the baseline"
        elif c.measured and base is not None and c.tier in timed and base.tier in timed:
            t, b = timed[c.tier], timed[base.tier]
            paired = t.ratio_vs_plain if base.tier == plain else None  # repeats paired where it anchors the run
            x = _ci(paired) if paired else f"{t.ms_per_token.value / b.ms_per_token.value:.3f}"
            said += f"; {x}x the time of baseline {base.recipe_name} ({base.tier})"
        s = c.screen
        figures = f" (screen: mean KLD {s.kld_mean.value:.3g}, same top-1 {s.same_top1.value:.1%})" if s else ""
        _print(f"  {c.tier} ({c.recipe_name} of {c.reference}): {said}{figures}")


def _print_fidelity(a: Analysis, w: int) -> None:
    """Each judged tier against its reference, llama.cpp's figures in one line; each pair's drafter beside its
    acceptance (``measure fidelity`` prints one tier's figures in full)."""
    _print("\nfidelity to the full-precision reference (teacher-forced on its greedy path; PPL on the golden outputs)")
    rw = max([12, *(len(f.reference) + 2 for f in a.fidelity)])
    head = f"{'mean KLD [95% CI]':<32}{'p99':>10}{'max':>10}  {'same top-1 [95% CI]':<28}{'RMS Δp':>8}  PPL ratio"
    _print(f"  {'tier':<{w}}{'reference':<{rw}}{head}")
    for f in a.fidelity:
        g, q = f.greedy, f.greedy.kld_quantiles
        kld = f"{g.kld_mean.value:.3g} [{g.kld_mean.lo:.3g}, {g.kld_mean.hi:.3g}]"
        top = f"{g.same_top1.value:.2%} [{g.same_top1.lo:.2%}, {g.same_top1.hi:.2%}]"
        _print(
            f"  {f.tier:<{w}}{f.reference:<{rw}}{kld:<32}{q.get(0.99, 0):>10.3g}{q.get(1.0, 0):>10.3g}  {top:<28}"
            f"{g.rms_dp:>8.2%}  {_ci(f.ppl_ratio)}"
        )
    for p in a.pair_fidelity:
        g = p.greedy
        acc = "not measured" if p.acceptance is None else f"{p.acceptance:.4f}"
        _print(
            f"  pair {p.drafter}->{p.verifier}: mean KLD {g.kld_mean.value:.3g}, same top-1 {g.same_top1.value:.2%} "
            f"on the verifier's greedy path; runtime acceptance {acc}"
        )


def run(args: argparse.Namespace) -> int:
    from measure.analysis.judgments import judgments
    from measure.analysis.profile import has_profile
    from measure.analysis.record_analysis import analyse
    from measure.record.io import load

    a = analyse(load(args.file))
    r = a.record
    _print_header(r)
    _print_plan(r)
    _print_explore(a)
    w = max([12, *(len(name) + 2 for name in r.tiers)])  # the tier column fits the longest name
    pw = max([14, *(len(t.precision) + 2 for t in r.tiers.values())])  # and the precision column its longest
    if a.tiers:
        _print_wallclock(a, w, pw)
    if a.causal:
        _print_causal(a, w)
    if a.tiers and has_profile(a.costs):
        print_profile(a.costs, w)
    print_roofline(a)
    if a.pairs:
        _print_pairs(a.pairs)
    print_cost_model(a.cost_model, w)
    if r.framing:
        _print_framing(r, w, pw)
    if a.fidelity or a.pair_fidelity:
        _print_fidelity(a, w)
    if r.instructions:
        _print_instructions(r.instructions, w)
    _print("\nverdicts")
    for v in judgments(a):  # the Overview's answers (ship, speculative, precision) first, as every page reads them
        _print(f"  [{v.outcome:<12}] {v.question} {v.subject}: {v.answer}")
    return 0
