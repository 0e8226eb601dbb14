"""What every runtime leg of the framing suite implements, and what the planner knows of it before it starts.

A leg decodes the tiers the Python onnxruntime leg decoded, under another runtime, and fills its part of the
record's ``framing.legs``. Framing, the planner and the record iterate over the registered legs
(:data:`measure.suites.legs.registry.LEGS`) and never name one: adding a runtime is one module that implements
:class:`Leg` and its entry in that tuple.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from measure.suites.legs.cost import LegCost

if TYPE_CHECKING:  # the protocol's types only: a leg module imports these itself
    from measure.engine.speculative import Pair
    from measure.engine.tier import Tier
    from measure.suites.config import FramingConfig
    from measure.suites.golden import GoldenRows


class LegSkipped(Exception):
    """This tier cannot run under the leg (a cache dtype or layout the runtime's script does not read)."""


class LegUnavailable(LegSkipped):
    """The leg cannot run on this machine at all: its runtime is not installed or will not start."""


class LegFailed(Exception):
    """The leg ran and broke; the message carries the end of the runtime's error output."""


class NotStarted(LegFailed):
    """A leg's runtime would not start at its first tier: the leg fails as a whole (no tier was tried)."""


@dataclass(frozen=True)
class LegSetup:
    """What a leg may know of the run when it opens: the framing config, the blocks replayed, the tiers' kinds,
    the sessions' threads and the folder of the tier reached first (to decide whether to start early)."""

    config: FramingConfig
    blocks: tuple[int | str, ...]
    kinds: frozenset[str]
    threads: int = 0
    first: Path | None = None


class Leg(Protocol):
    """One runtime beside Python onnxruntime."""

    key: ClassVar[str]
    """The leg's short name: the planner's, and :func:`enabled`'s config key is ``<key>_leg``."""
    beside: ClassVar[bool]
    """Runs in this process beside Python's sessions (so a tier loaded one at a time stays loaded for it); the
    others run in processes of their own, and Python lets go of the tier's sessions before they start."""
    cost: ClassVar[LegCost]
    out: dict[str, Any]
    """The leg's entry in the record's ``framing.legs``, filled in place as tiers are added."""

    @property
    def label(self) -> str:
        """The leg in progress lines."""
        ...

    @classmethod
    def ready(cls, config: FramingConfig) -> str | None:
        """Why the leg cannot run on this machine, as far as can be told without starting it; None where it can."""
        ...

    def add(
        self,
        tier: Tier,
        golden: GoldenRows,
        python: dict[str, Any],
        described: dict[str, Any] | None = None,
        reopen: Callable[[], Tier] | None = None,
        prefill_rows: int | None = None,
    ) -> None:
        """Decode ``tier`` under this runtime beside the Python leg's entry for it (``python``)."""
        ...

    def add_pairs(self, pairs: Iterable[Pair], golden: GoldenRows, k: int) -> bool:
        """The speculative pairs under this runtime; False where the leg decodes no pairs."""
        ...

    def finish(self) -> dict[str, Any]:
        """The leg's record entry as it stands after a tier."""
        ...

    def close(self) -> None:
        """Let go of what outlives a tier (a browser)."""
        ...
