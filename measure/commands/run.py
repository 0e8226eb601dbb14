"""Run the wall-clock and framing-parity suites and write a versioned JSON run record.

``--instructions`` adds callgrind instruction counts per tier after the suites. ``--budget 15m`` plans the run
to fit (after a warm-up that times one pass of every case) and prints the plan before measuring.

Progress bars on a terminal, plain lines in CI, a line at least every 10 s whatever runs; prints the record's path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=None, help="suite config TOML (default: the bundled demo's)")
    p.add_argument(
        "--suite",
        action="append",
        choices=["wallclock", "framing"],
        dest="suites",
        help="run only this suite (repeatable; default both)",
    )
    p.add_argument("--results", type=Path, default=Path("results"), help="results tree (default ./results)")
    p.add_argument(
        "--instructions",
        action="store_true",
        help="also count instructions per token under callgrind after the suites (the config's [instructions] "
        "table, enabled; about 30x slower than a native decode; needs valgrind and measure[instructions])",
    )
    p.add_argument(
        "--budget",
        metavar="DURATION",
        help='plan the run to take this long ("15m", "1h30m", "900s"; over the config\'s [run] budget): after the '
        "warm-up it prints the rows, repeats, framing rows and profile workers that fit, and spends what is left "
        "on repeats where intervals are widest; too small for one repeat of everything is refused",
    )


def run(args: argparse.Namespace) -> int:
    from measure.commands.progress import reporting
    from measure.suites.run_options import options_from_args
    from measure.suites.runner import execute

    options = options_from_args(args.config, args.suites, args.results, args.budget, args.instructions, sys.argv)
    with reporting() as (progress, say):
        path = execute(options, progress=progress, say=say)
    print(path)
    return 0
