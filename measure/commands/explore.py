"""Try quantization recipes on full-precision tiers: quantize each, drop what cannot pass, time the rest in a run.

Each recipe of the grid (``--grid FILE``, else the default grid) is applied to each REFERENCE; the fidelity pass on
the first ``--screen-rows`` golden rows drops a tier whose intervals already fail the policy's bounds (``--role``'s),
and the survivors are measured with their references by ``measure run``'s suites under what is left of
``--budget``. The baseline recipe (``--baseline``, default ``int8``) is timed beside them whatever its screening
says, as the plain tier every ratio reads against. The record is an ordinary run record whose tiers are the
recipes, and says what was dropped and why.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "references", type=Path, nargs="+", metavar="REFERENCE", help="full-precision tier folders (either kind)"
    )
    p.add_argument(
        "--grid",
        type=Path,
        metavar="GRID.toml",
        help="the recipes to try: [[recipes]] entries, each name = NAMED or a recipe's keys (default: int8, "
        "int8-per-channel, int4, int4-level4, int4-asym, int8-nbits, int8-nbits-level0; int8-static too with "
        "--calibration)",
    )
    p.add_argument("--out", type=Path, default=Path("explore"), help="where the recipes' tiers go (default ./explore)")
    p.add_argument("--results", type=Path, default=Path("results"), help="results tree (default ./results)")
    p.add_argument("--golden", type=Path, help="golden rows (default: the demo's)")
    p.add_argument(
        "--screen-rows", type=int, default=8, help="golden rows (the first N) the screening pass scores (default 8)"
    )
    p.add_argument(
        "--budget",
        metavar="DURATION",
        default="20m",
        help='wall time for the whole search: quantizing, screening and the run ("20m", "1h", "900s"; default 20m)',
    )
    p.add_argument(
        "--role",
        choices=["plain", "lite", "default"],
        default="plain",
        help="whose fidelity bounds a recipe must be able to meet (default plain: the tier you would ship)",
    )
    p.add_argument(
        "--config",
        type=Path,
        help="a suite config whose [session] and [policy] the search uses (default: one thread, the default policy)",
    )
    p.add_argument(
        "--baseline",
        metavar="RECIPE",
        default="int8",
        help="the recipe timed whatever its screening says, as the plain tier every recipe's ratio reads against "
        "(added to the grid where absent; default int8, what measure quantize --to int8 applies; none: no baseline)",
    )
    p.add_argument("--calibration", type=Path, metavar="ROWS.jsonl", help="calibration rows for static-int8 recipes")
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="measure only shard I of N (1-based) of the grid's candidates, dealt in grid order, the baseline in "
        "every shard; measure merge --shards joins the N records into one (a CI matrix: one shard per job)",
    )


def run(args: argparse.Namespace) -> int:
    from measure import bundled
    from measure.commands.progress import reporting
    from measure.suites.config import load_config
    from measure.suites.plan import parse_budget
    from measure.tools.candidates import default_grid, load_grid, parse_shard
    from measure.tools.explore import explore

    budget = parse_budget(args.budget, "--budget")
    shard = None if args.shard is None else parse_shard(args.shard)
    grid = load_grid(args.grid) if args.grid is not None else default_grid(args.calibration is not None)
    config = load_config(args.config) if args.config is not None else None
    with reporting() as (progress, say):
        path = explore(
            list(args.references),
            grid,
            out=args.out,
            results=args.results,
            golden=args.golden or bundled.GOLDEN,
            screen_rows=args.screen_rows,
            budget_s=budget,
            calibration=args.calibration,
            session=config.session if config else None,
            policy=config.policy if config else None,
            role=args.role,
            baseline=None if args.baseline == "none" else args.baseline,
            shard=shard,
            argv=sys.argv,
            progress=progress,
            say=say,
        )
    print(path)
    return 0
