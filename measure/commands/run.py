"""Run the wall-clock and framing-parity suites and write a versioned JSON run record.

``--instructions`` adds callgrind instruction counts per tier after the suites. ``--budget 15m`` plans the run
to fit (after a warm-up that times one pass of every case) and prints the plan before measuring.

Progress bars on a terminal, plain lines in CI, a line at least every 10 s whatever runs; prints the record's path.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported only where a bar is drawn
    from rich.progress import Progress, TaskID


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


def _progress() -> tuple[Progress | None, Callable[[str, int, int], None]]:
    """A rich progress bar on a terminal; one plain line a step in CI or when piped."""
    if sys.stderr.isatty() and not os.environ.get("CI"):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        bar = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True
        )
        tasks: dict[str, TaskID] = {}

        def update(what: str, done: int, total: int) -> None:
            suite = what.split()[0]
            if suite not in tasks:
                tasks[suite] = bar.add_task(suite, total=total)
            bar.update(tasks[suite], completed=done, total=total, description=what[:60])

        return bar, update

    def plain(what: str, done: int, total: int) -> None:
        print(f"[{done}/{total}] {what}", file=sys.stderr, flush=True)

    return None, plain


def run(args: argparse.Namespace) -> int:
    from measure.suites.heartbeat import Heartbeat
    from measure.suites.run_options import options_from_args
    from measure.suites.runner import execute

    options = options_from_args(args.config, args.suites, args.results, args.budget, args.instructions, sys.argv)
    bar, update = _progress()
    beat = Heartbeat(update)

    def say(line: str) -> None:
        if bar is not None:
            bar.console.print(line)
        else:
            print(line, file=sys.stderr)

    with contextlib.ExitStack() as stack:
        if bar is not None:
            stack.enter_context(bar)
        stack.enter_context(beat)
        path = execute(options, progress=beat, say=say)
    print(path)
    return 0
