"""onnxruntime sessions with explicit, recorded options, and the per-call instrumentation.

Every number measure reports comes through :class:`TimedSession`, so the cost
of instrumentation is kept to two ``perf_counter`` calls and three list appends
per ``session.run``: cheap enough to leave on in every decode.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np
import onnxruntime as ort

from measure.errors import MeasureError

_OPT_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


@dataclass(frozen=True)
class SessionConfig:
    """How every onnxruntime session of a run is built; stored in each run record."""

    intra_op_threads: int = 1
    """Threads inside one operator. At the demo's size one thread beats two."""
    inter_op_threads: int = 1
    """Threads across independent operators (sequential execution uses one)."""
    graph_optimization: str = "all"
    """One of disable, basic, extended, all."""
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    """Execution providers in priority order."""

    def __post_init__(self) -> None:
        if self.graph_optimization not in _OPT_LEVELS:
            raise MeasureError(
                f"session option graph_optimization: expected one of {', '.join(_OPT_LEVELS)}, "
                f"got {self.graph_optimization!r}"
            )
        if self.intra_op_threads < 0 or self.inter_op_threads < 0:
            raise MeasureError("session option threads: expected a count >= 0 (0 lets onnxruntime choose)")
        missing = [p for p in self.providers if p not in ort.get_available_providers()]
        if missing:
            raise MeasureError(
                f"session option providers: {', '.join(missing)} not available in this onnxruntime "
                f"(available: {', '.join(ort.get_available_providers())})"
            )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["providers"] = list(self.providers)
        return d

    def open(self, path: Path) -> ort.InferenceSession:
        """Build one session for one graph file with exactly these options."""
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.intra_op_threads
        opts.inter_op_num_threads = self.inter_op_threads
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = _OPT_LEVELS[self.graph_optimization]
        opts.log_severity_level = 3
        try:
            return ort.InferenceSession(str(path), sess_options=opts, providers=list(self.providers))
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidGraph types
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise MeasureError(f"{path}: onnxruntime cannot load this graph: {first}") from exc


@dataclass
class Trace:
    """What one decode cost, call by call: time inside ``session.run`` and the gap before it.

    One trace spans a whole decode (both models of a speculative pair), so the
    gaps are the harness's own time: Python between calls, argmax, cache trims.
    """

    labels: list[str] = field(default_factory=list)
    inside_s: list[float] = field(default_factory=list)
    outside_s: list[float] = field(default_factory=list)
    started: float = field(default_factory=perf_counter)
    _mark: float = 0.0

    def __post_init__(self) -> None:
        self._mark = self.started

    def calls(self, prefix: str = "") -> int:
        """Calls whose label starts with ``prefix`` (a tier's label plus ``.``); all calls by default."""
        return sum(1 for x in self.labels if x.startswith(prefix))

    def run_s(self, prefix: str = "") -> float:
        """Seconds inside ``session.run`` for the calls whose label starts with ``prefix``."""
        return float(sum(t for x, t in zip(self.labels, self.inside_s, strict=True) if x.startswith(prefix)))


class TimedSession:
    """An ``InferenceSession`` whose every ``run`` is timed into the caller's :class:`Trace`."""

    __slots__ = ("inputs", "label", "output_names", "outputs", "path", "recorded", "session", "slowdown")

    def __init__(self, session: ort.InferenceSession, label: str, path: Path) -> None:
        self.session = session
        self.label = label
        self.path = path
        self.inputs = {i.name: i for i in session.get_inputs()}
        self.outputs = {o.name: o for o in session.get_outputs()}
        self.output_names = [o.name for o in session.get_outputs()]
        self.slowdown = 0.0
        """Test-only: every timed call lasts this share longer (0.3 = 30%), so a suite can be shown a slower tier."""
        self.recorded: list[dict[str, np.ndarray]] | None = None
        """When a list, every call's feeds are appended to it: real decode inputs for static-int8 calibration."""

    def run(self, feeds: dict[str, np.ndarray], trace: Trace) -> list[np.ndarray]:
        if self.recorded is not None:
            self.recorded.append({k: np.array(v, copy=True) for k, v in feeds.items()})
        start = perf_counter()
        out = self.session.run(self.output_names, feeds)
        end = perf_counter()
        if self.slowdown:
            until = end + (end - start) * self.slowdown
            while end < until:  # busy-wait: sleep() cannot hit tens of microseconds
                end = perf_counter()
        trace.labels.append(self.label)
        trace.inside_s.append(end - start)
        trace.outside_s.append(start - trace._mark)
        trace._mark = end
        return out
