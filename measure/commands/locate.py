"""Locate a recipe's error: each group of weight MatMuls (and each layer) quantized alone, ranked by its divergence.

For a recipe that fails the fidelity policy: which MatMuls cause its KL divergence (attention projections, the MLP,
the LM head; layer by layer), as a share of all of them, on the first few golden rows; then the recipes that keep the
worst group and the worst layer in full precision, built and judged the same way. Every tier is built in a
temporary folder and deleted once judged; nothing is written beside the reference.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from measure.tools.locate import Location

SHOWN = 12
"""Units listed per axis (the rest summed in one line): a 30-layer model's ranking stays one screen."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("reference", type=Path, metavar="REFERENCE", help="the full-precision tier folder")
    p.add_argument("--recipe", required=True, metavar="NAME|FILE", help="the recipe whose error is located")
    p.add_argument("--golden", type=Path, help="golden rows (JSONL with input and output; default: the demo's)")
    p.add_argument("--rows", type=int, default=4, metavar="N", help="the first N golden rows (default 4)")
    p.add_argument(
        "--axis", choices=["group", "layer", "both"], default="both", help="rank by group, by layer, or both"
    )
    p.add_argument("--calibration", type=Path, metavar="ROWS.jsonl", help="a static-int8 recipe's calibration rows")
    p.add_argument("--time", action="store_true", help="also time the whole recipe and the ones tried (ms/token)")
    p.add_argument("--json", action="store_true", help="the ranking as one JSON object")
    p.epilog = (
        "Cost: one quantization and one teacher-forced pass over the rows per unit (about 35 for a 30-layer model)."
    )


def run(args: argparse.Namespace) -> int:
    from measure import bundled
    from measure.errors import MeasureError
    from measure.suites.golden import head, load_golden
    from measure.terminal import clean, strict_json
    from measure.tools.locate import locate
    from measure.tools.recipes import resolve_recipe

    if not 1 <= args.rows <= 10_000:
        raise MeasureError(f"--rows {args.rows}: expected 1 to 10000")
    recipe = resolve_recipe(args.recipe)
    golden = head(load_golden(args.golden or bundled.GOLDEN), args.rows)
    axes = ("group", "layer") if args.axis == "both" else (args.axis,)
    found = locate(
        args.reference,
        recipe,
        golden,
        axes=axes,
        timed=args.time,
        calibration=args.calibration,
        progress=lambda line: print(clean(f"  {line}"), file=sys.stderr, flush=True),
    )
    if args.json:
        print(strict_json(found.as_json()))
        return 0
    for line in report(found).splitlines():
        print(clean(line))
    return 0


def _ms(ms: float | None) -> str:
    return f", {ms:.2f} ms/token" if ms is not None else ""


def report(found: Location) -> str:
    """The ranking as a reader scans it: the whole recipe, each axis's worst units first, what keeping them did."""
    w = found.whole
    lines = [
        f"{found.recipe.name} ({found.recipe.label}) of {found.reference}, {found.rows} golden row(s), "
        f"{w.positions} positions: mean KLD {w.kld_mean:.4g}, same top-1 {w.same_top1:.1%}{_ms(w.ms_per_token)}"
    ]
    for axis, errors in found.ranking.items():
        total = sum(e.divergence.kld_mean for e in errors)
        lines += ["", f"where the error enters, by {axis} (each quantized alone; share of the units' sum):"]
        for e in errors[:SHOWN]:
            bar = "#" * round(e.share * 30)
            lines.append(
                f"  {e.unit.name:<20}{e.divergence.kld_mean:>10.4g}{e.share:>8.1%}  {bar:<30} "
                f"({len(e.unit.nodes)} MatMul{'s' if len(e.unit.nodes) != 1 else ''})"
            )
        rest = errors[SHOWN:]
        if rest:
            share = sum(e.share for e in rest)
            lines.append(f"  {len(rest)} more{'':<12}{sum(e.divergence.kld_mean for e in rest):>10.4g}{share:>8.1%}")
        relation = "they overlap" if total > w.kld_mean else "they compound"
        lines.append(f"  the units' sum {total:.4g} against the whole recipe's {w.kld_mean:.4g} ({relation})")
    if found.tried:
        lines += ["", "tried, the worst unit kept in full precision:"]
        for t in found.tried:
            d = t.divergence
            better = w.kld_mean / d.kld_mean if d.kld_mean > 0 else float("inf")
            lines.append(
                f"  {t.recipe.name}: mean KLD {d.kld_mean:.4g} ({better:.1f}x less), same top-1 "
                f"{d.same_top1:.1%}{_ms(d.ms_per_token)}"
            )
    return "\n".join(lines)
