"""onnxruntime sessions built from plain options, and the per-call instrumentation.

Every number measure reports comes through :class:`TimedSession`, so the cost
of instrumentation is kept to two ``perf_counter`` calls and one list append
per ``session.run``: cheap enough to leave on in every decode.

What "inside session.run" means: the timed window sits just around onnxruntime's
C++ ``run`` (its pybind entry, ``InferenceSession._sess.run``), reached past the
Python wrapper whose per-call input-name checks are the harness's cost, not the
model's. Where that private entry is missing or refuses the call, the public
``run`` is used instead and the wrapper's checks fall inside the window;
:attr:`TimedSession.call_path` says which (:data:`CALL_PATHS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

import numpy as np
import onnxruntime as ort

from measure.engine.options import GRAPH_OPTIMIZATIONS, SessionConfig
from measure.errors import MeasureError, SettingError

DTYPES = {  # onnxruntime's input and output types as numpy dtypes, for every layout of either kind
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}

__all__ = [
    "CALL_PATHS",
    "AfterRun",
    "SessionConfig",
    "Slowdown",
    "TimedSession",
    "Trace",
    "c_level_run",
    "open_session",
]

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

CALL_PATHS = ("c-level", "python")
"""How a :class:`TimedSession` reaches onnxruntime: its C++ ``run`` directly, or the public Python ``run``."""


def c_level_run(session: ort.InferenceSession) -> Callable[..., list[np.ndarray]] | None:
    """onnxruntime's C++ ``run(names, feeds, run_options)`` behind ``session.run``, where skipping the wrapper is safe.

    The wrapper checks input names (the C++ run refuses a missing input too), guards
    WebGPU graph capture and ``OrtValue`` ownership (measure feeds numpy arrays), and
    retries on another provider after an execution-provider failure: so the direct
    call is taken only on CPU-only sessions. None where this onnxruntime has no such entry.
    """
    run: Callable[..., list[np.ndarray]] | None = getattr(getattr(session, "_sess", None), "run", None)
    if not callable(run) or any(p != "CPUExecutionProvider" for p in session.get_providers()):
        return None
    return run


def open_session(config: SessionConfig, path: Path) -> ort.InferenceSession:
    """Build one session for one graph file with exactly these options; providers are checked here."""
    available = ort.get_available_providers()
    missing = [p for p in config.providers if p not in available]
    if missing:
        raise SettingError(
            "session.providers",
            f"{', '.join(missing)} not available in this onnxruntime (available: {', '.join(available)})",
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
    "Inside" is the window just around onnxruntime's C++ run (see the module's
    docstring); a session's first call, and every call with a hook or feed
    recording set, also has :meth:`TimedSession._guarded`'s frame inside it.
    The hot path appends one ``(label, start, end)`` per call; the per-call views
    below are derived when read.
    """

    log: list[tuple[str, float, float]] = field(default_factory=list)
    started: float = field(default_factory=perf_counter)
    ended: float | None = None
    """When the last output token was decided, stamped by the decode loop before it lets go of its
    state: the wall clock stops here, so freeing a finished decode's caches is not timed (None: not stamped)."""

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
    """An ``InferenceSession`` whose every ``run`` is timed into the caller's :class:`Trace`.

    ``c_level=False`` calls the public ``run`` (the wrapper's checks then count as inside);
    a direct call that raises ``TypeError`` (a changed private signature) falls back to it
    for good once the public call succeeds.
    """

    __slots__ = (
        "_run",
        "after_run",
        "answered",
        "call_path",
        "inputs",
        "label",
        "output_names",
        "outputs",
        "path",
        "recorded",
        "session",
    )

    def __init__(
        self,
        session: ort.InferenceSession,
        label: str,
        path: Path,
        after_run: AfterRun | None = None,
        *,
        c_level: bool = True,
    ) -> None:
        self.session = session
        direct = c_level_run(session) if c_level else None
        self._run: Callable[..., list[np.ndarray]] = direct or session.run
        self.call_path = CALL_PATHS[0] if direct else CALL_PATHS[1]
        """Which entry the calls go through (:data:`CALL_PATHS`); what "inside session.run" covers."""
        self.answered = False
        """The entry in use has answered a call: from then on :meth:`call` hands it out bare."""
        self.label = label
        self.path = path
        self.inputs = {i.name: i for i in session.get_inputs()}
        self.outputs = {o.name: o for o in session.get_outputs()}
        self.output_names = [o.name for o in session.get_outputs()]
        self.after_run = after_run
        """Called inside the timed window after each call (see :class:`Slowdown`); None on real runs."""
        self.recorded: list[dict[str, np.ndarray]] | None = None
        """When a list, every call's feeds are appended to it: real decode inputs for static-int8 calibration."""

    def call(self) -> Callable[[list[str], dict[str, np.ndarray], None], list[np.ndarray]]:
        """What a call is, as ``(output_names, feeds, None)``: for loops that keep their own trace entries.

        The entry itself once it has answered and no hook is set, so a hot loop times
        just onnxruntime; else :meth:`_guarded`, which records feeds, falls back and runs
        ``after_run`` (all then inside the caller's timed window).
        """
        if self.answered and self.recorded is None and self.after_run is None:
            return self._run
        return self._guarded

    def use_public_run(self) -> None:
        """Call through onnxruntime's public ``run`` from now on: the wrapper's checks then count as inside."""
        self._run, self.call_path, self.answered = self.session.run, CALL_PATHS[1], False

    def call_like(self, other: TimedSession) -> None:
        """Take ``other``'s entry: one graph asked for other outputs is called the same way."""
        if self.call_path != other.call_path:
            self._run, self.call_path, self.answered = other._run, other.call_path, other.answered

    def run(self, feeds: dict[str, np.ndarray], trace: Trace) -> list[np.ndarray]:
        call = self.call()
        start = perf_counter()
        out = call(self.output_names, feeds, None)
        end = perf_counter()
        trace.log.append((self.label, start, end))
        return out

    def _guarded(self, names: list[str], feeds: dict[str, np.ndarray], options: None = None) -> list[np.ndarray]:
        if self.recorded is not None:
            self.recorded.append({k: np.array(v, copy=True) for k, v in feeds.items()})
        start = perf_counter()
        try:
            out = self._run(names, feeds, options)
        except TypeError:
            if self.call_path == CALL_PATHS[1]:
                raise
            start = perf_counter()
            out = self.session.run(names, feeds)  # bad feeds raise the public run's own error here
            self._run, self.call_path = self.session.run, CALL_PATHS[1]
        self.answered = True
        if self.after_run is not None:
            self.after_run(perf_counter() - start)
        return out
