"""How onnxruntime sessions are built, as plain data: read from the suite config, stored in each record.

Nothing here imports onnxruntime, so the config (and everything that only reads
records) loads without it; :mod:`measure.engine.session` turns these options into
``onnxruntime.SessionOptions`` and checks the providers when it builds a session.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from measure.errors import SettingError

GRAPH_OPTIMIZATIONS = ("disable", "basic", "extended", "all")
"""onnxruntime's graph optimization levels by the names the config uses."""


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
    """Execution providers in priority order; checked against the installed onnxruntime when a session is built."""

    def __post_init__(self) -> None:
        if self.graph_optimization not in GRAPH_OPTIMIZATIONS:
            raise SettingError(
                "session.graph_optimization",
                f"expected one of {', '.join(GRAPH_OPTIMIZATIONS)}, got {self.graph_optimization!r}",
            )
        for name in ("intra_op_threads", "inter_op_threads"):
            if (n := getattr(self, name)) < 0:
                raise SettingError(f"session.{name}", f"expected a count >= 0 (0 lets onnxruntime choose), got {n}")
        if not self.providers:
            raise SettingError("session.providers", "expected at least one execution provider")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["providers"] = list(self.providers)
        return d
