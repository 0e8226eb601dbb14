"""Progress that never goes quiet: while a step runs longer than ``every_s``, its line is repeated with how long
it has run, how much of its suite is done and an estimate of when the suite (and a planned run) ends.

At real model sizes one case's pass, one profile worker or one framing tier takes minutes; a run that prints
only when a step ends looked hung. The suites report ``(what, done, total)`` as steps end; this wraps that
callback and, from a thread, repeats the last line every ``every_s`` seconds until the next one arrives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from time import perf_counter

from measure.suites import Progress
from measure.suites.plan import clock


class Heartbeat:
    """A :data:`~measure.suites.Progress` that passes every line on to ``show`` and repeats the last one, with
    elapsed time and ETAs, whenever ``every_s`` seconds pass without a new one; ``run_end`` (a
    :func:`perf_counter` value, settable once a plan exists) adds the run's ETA."""

    def __init__(self, show: Progress, every_s: float = 10.0, now: Callable[[], float] = perf_counter) -> None:
        self.show = show
        self.every_s = every_s
        self.now = now
        self.run_end: float | None = None
        self._last: tuple[str, int, int] | None = None
        self._step_start = self._suite_start = self._shown = now()
        self._suite = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, what: str, done: int, total: int) -> None:
        with self._lock:
            suite = what.split()[0] if what else ""
            now = self.now()
            if suite != self._suite:  # a new suite began when the last line of the one before was shown
                self._suite, self._suite_start = suite, self._step_start
            self._last, self._step_start, self._shown = (what, done, total), now, now
        self.show(what, done, total)

    def line(self) -> tuple[str, int, int] | None:
        """The repeated line: the last step, how long since it, and the ETAs (None before any step)."""
        with self._lock:
            if self._last is None:
                return None
            what, done, total = self._last
            now = self.now()
            parts = [f"{clock(now - self._step_start)} since {what}"]
            if 0 < done < total:
                per = (self._step_start - self._suite_start) / done
                parts.append(f"{self._suite} ETA ~{clock(per * (total - done) - (now - self._step_start))}")
            if self.run_end is not None:
                parts.append(f"run ETA ~{clock(self.run_end - now)}")
            return f"{self._suite} running, {done}/{total} done ({'; '.join(parts)})", done, total

    def beat(self) -> None:
        """Repeat the last line now (what the thread does every ``every_s`` seconds of silence)."""
        found = self.line()
        with self._lock:
            self._shown = self.now()
        if found is not None:
            self.show(*found)

    def _loop(self) -> None:
        while not self._stop.wait(min(1.0, self.every_s / 2)):
            with self._lock:
                quiet = self.now() - self._shown
            if quiet >= self.every_s:
                self.beat()

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._loop, name="measure-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
