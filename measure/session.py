"""onnxruntime sessions built from plain options, and the per-call instrumentation.

Every number measure reports comes through :class:`TimedSession`, so the cost
of instrumentation is kept to two ``perf_counter`` calls and one list append
per ``session.run``: cheap enough to leave on in every decode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

import numpy as np
import onnxruntime as ort

from measure.errors import MeasureError
from measure.session_options import GRAPH_OPTIMIZATIONS, SessionConfig

__all__ = ["AfterRun", "SessionConfig", "Slowdown", "TimedSession", "Trace", "open_session"]

_OPT_LEVELS = dict(
    zip(
        GRAPH_OPTIMIZATIONS,
        (
            ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        ),
        strict=True,
    )
)

AfterRun = Callable[[float], None]
"""A hook called inside the timed window after every ``session.run`` with the seconds it took."""


def open_session(config: SessionConfig, path: Path) -> ort.InferenceSession:
    """Build one session for one graph file with exactly these options; providers are checked here."""
    available = ort.get_available_providers()
    missing = [p for p in config.providers if p not in available]
    if missing:
        raise MeasureError(
            f"session option providers: {', '.join(missing)} not available in this onnxruntime "
            f"(available: {', '.join(available)})"
        )
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = config.intra_op_threads
    opts.inter_op_num_threads = config.inter_op_threads
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = _OPT_LEVELS[config.graph_optimization]
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(str(path), sess_options=opts, providers=list(config.providers))
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MeasureError(f"{path}: onnxruntime cannot load this graph: {first}") from exc


@dataclass(frozen=True)
class Slowdown:
    """Test-only :data:`AfterRun` hook: every call lasts ``factor`` longer (0.3 = 30%), inside the timing.

    Lets a suite be shown a slower tier on real sessions; the runner records the factor
    as ``test_slowdown_factor`` so such a record never passes for a real measurement.
    """

    factor: float

    def __call__(self, run_s: float) -> None:
        until = perf_counter() + run_s * self.factor
        while perf_counter() < until:  # busy-wait: sleep() cannot hit tens of microseconds
            pass


@dataclass
class Trace:
    """What one decode cost, call by call: time inside ``session.run`` and the gap before it.

    One trace spans a whole decode (both models of a speculative pair), so the
    gaps are the harness's own time: Python between calls, argmax, cache trims.
    The hot path appends one ``(label, start, end)`` per call; the per-call views
    below are derived when read.
    """

    log: list[tuple[str, float, float]] = field(default_factory=list)
    started: float = field(default_factory=perf_counter)

    @property
    def labels(self) -> list[str]:
        return [label for label, _, _ in self.log]

    @property
    def inside_s(self) -> list[float]:
        """Seconds inside ``session.run``, per call."""
        return [end - start for _, start, end in self.log]

    @property
    def outside_s(self) -> list[float]:
        """Seconds between the previous call's end (or the trace's start) and this call's start."""
        gaps, mark = [], self.started
        for _, start, end in self.log:
            gaps.append(start - mark)
            mark = end
        return gaps

    def calls(self, prefix: str = "") -> int:
        """Calls whose label starts with ``prefix`` (a tier's label plus ``.``); all calls by default."""
        if not prefix:
            return len(self.log)
        return sum(1 for label, _, _ in self.log if label.startswith(prefix))

    def run_s(self, prefix: str = "") -> float:
        """Seconds inside ``session.run`` for the calls whose label starts with ``prefix``."""
        return float(sum(end - start for label, start, end in self.log if label.startswith(prefix)))


class TimedSession:
    """An ``InferenceSession`` whose every ``run`` is timed into the caller's :class:`Trace`."""

    __slots__ = ("_run", "after_run", "inputs", "label", "output_names", "outputs", "path", "recorded", "session")

    def __init__(
        self, session: ort.InferenceSession, label: str, path: Path, after_run: AfterRun | None = None
    ) -> None:
        self.session = session
        self._run = session.run
        self.label = label
        self.path = path
        self.inputs = {i.name: i for i in session.get_inputs()}
        self.outputs = {o.name: o for o in session.get_outputs()}
        self.output_names = [o.name for o in session.get_outputs()]
        self.after_run = after_run
        """Called inside the timed window after each call (see :class:`Slowdown`); None on real runs."""
        self.recorded: list[dict[str, np.ndarray]] | None = None
        """When a list, every call's feeds are appended to it: real decode inputs for static-int8 calibration."""

    def run(self, feeds: dict[str, np.ndarray], trace: Trace) -> list[np.ndarray]:
        if self.recorded is not None:
            self.recorded.append({k: np.array(v, copy=True) for k, v in feeds.items()})
        start = perf_counter()
        out = self._run(self.output_names, feeds)
        end = perf_counter()
        if self.after_run is not None:
            self.after_run(end - start)
            end = perf_counter()
        trace.log.append((self.label, start, end))
        return out
