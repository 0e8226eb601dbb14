"""What a measuring verb shows while it runs: a rich progress bar on a terminal, one plain line a step in CI or
when piped, a line at least every 10 s whatever runs (:class:`~measure.suites.heartbeat.Heartbeat`), and the verb's
own lines printed above the bar. One owner, so ``run``, ``explore`` and ``ab`` show progress alike."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from measure.suites.heartbeat import Heartbeat

if TYPE_CHECKING:  # rich is imported only where a bar is drawn
    from rich.progress import Progress, TaskID


def progress_bar() -> tuple[Progress | None, Callable[[str, int, int], None]]:
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


@contextlib.contextmanager
def reporting() -> Iterator[tuple[Heartbeat, Callable[[str], None]]]:
    """The progress and the ``say`` a verb hands the suites, live while the block runs: the bar drawn (a line
    said goes above it, else to stderr) and the heartbeat beating."""
    bar, update = progress_bar()
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
        yield beat, say
