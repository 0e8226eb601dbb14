"""A run: environment, tiers, resolved config, golden rows, and the suites' parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.policy import Policy
from measure.record.model.bandwidth import Traffic
from measure.record.model.explore import Explore
from measure.record.model.fidelity import Fidelity
from measure.record.model.framing import Framing
from measure.record.model.framing_leg import Leg
from measure.record.model.framing_tier import FramingTier
from measure.record.model.instructions import Instructions
from measure.record.model.plan import Nbits, RunPlan
from measure.record.model.wallclock import Wallclock

PARTS = ("wallclock", "profile", "framing", "instructions")
"""The results a record may carry, each taken from the newest complete record that has it when a machine's
current state is put together: a wall-clock-only run is complete but measures no framing."""


@dataclass(frozen=True)
class Machine:
    cpu: str
    arch: str
    cores: int
    memory_bytes: int | None
    os: str
    platform: str


@dataclass(frozen=True)
class Git:
    commit: str | None
    dirty: bool | None

    @property
    def short(self) -> str:
        """The commit as pages print it: ten hex digits, marked when the tree was dirty."""
        if not self.commit:
            return "no commit"
        return self.commit[:10] + (" (dirty)" if self.dirty else "")

    @property
    def pinned(self) -> bool:
        """A clean commit: two records of it measured the same code."""
        return bool(self.commit) and self.dirty is False


@dataclass(frozen=True)
class Environment:
    machine: Machine
    python: str
    onnxruntime: str
    providers: tuple[str, ...]
    numpy: str
    tokenizers: str | None
    git: Git
    command: tuple[str, ...]


# ------------------------------------------------------------------ tiers


@dataclass(frozen=True)
class FileEntry:
    name: str
    bytes: int
    sha256: str


@dataclass(frozen=True)
class TierEntry:
    """One tier as the record names it (the config's name) and what its files are."""

    name: str
    role: str
    path: str
    layout: str
    precision: str
    layers: int
    vocab_size: int | None
    total_bytes: int
    files: tuple[FileEntry, ...]
    kind: str = "seq2seq"
    """``seq2seq`` (encoder-decoder) or ``causal`` (decoder-only)."""
    prompt: str | None = None
    """A decoder-only tier's prompt template; None for seq2seq."""
    nbits: Nbits | None = None
    """Its MatMulNBits settings (block size, accuracy level), read from the graph; None without MatMulNBits."""
    max_new_tokens: int | None = None
    """The output cap its wall-clock decodes took (before its positions' bounds); None: per source, or unrecorded."""
    max_new_tokens_from: str | None = None
    """Where that cap came from: ``config``, ``generation_config.json``, ``tier.json``, ``default``; None before."""
    traffic: Traffic | None = None
    """What one decode step reads, by part, counted from its graph; None in records before the count."""
    model: str | None = None
    """The model it exports, as the config or its tier.json names it; None: unnamed (its source chain decides)."""

    @property
    def decoder_only(self) -> bool:
        return self.kind == "causal"

    @property
    def file_hashes(self) -> tuple[tuple[str, str], ...]:
        return tuple((f.name, f.sha256) for f in self.files)


@dataclass(frozen=True)
class WallclockSettings:
    warmup: int
    warmup_s: float
    repeats: int
    fresh_sessions: bool
    k: tuple[int, ...]
    bootstrap: int
    seed: int


@dataclass(frozen=True)
class FramingSettings:
    k: tuple[int, ...]
    whole_prefix: bool
    probe_k: int
    node_leg: bool
    genai_leg: bool = False
    """Whether the run asked for the onnxruntime-genai leg (records before it: no)."""


@dataclass(frozen=True)
class Config:
    """The resolved suite config the run used; ``raw`` is kept for display and the A/A build key only."""

    path: str | None
    wallclock: WallclockSettings
    framing: FramingSettings
    session: dict[str, Any]
    policy: Policy
    pairs: tuple[tuple[str, str], ...]
    raw: dict[str, Any]


@dataclass(frozen=True)
class Golden:
    path: str
    sha256: str
    rows: int


@dataclass(frozen=True)
class Pairing:
    """One side of a paired job (``measure ab``): BASE and NEW measured together, repeat i beside repeat i."""

    id: str
    """Shared by the job's two records."""
    side: str
    """base or new."""
    partner_run_id: str
    order: str
    """alternating: which side decodes a row first flips from row to row, case to case and repeat to repeat."""
    base_first: dict[str, tuple[bool, ...]]
    """Per case, per repeat: whether BASE decoded the first row just before NEW."""


@dataclass(frozen=True)
class Record:
    """One run record, read-only. ``source`` is the file it came from (for messages)."""

    source: str
    schema_version: int
    tool_version: str
    run_id: str
    machine_id: str
    started_at: str
    finished_at: str | None
    complete: bool
    error: str | None
    suites: tuple[str, ...]
    environment: Environment
    config: Config
    golden: Golden
    tiers: dict[str, TierEntry]
    wallclock: Wallclock | None
    framing: Framing | None
    test_slowdown_factor: dict[str, float] | None
    pairing: Pairing | None = None
    """Set when the record is one side of a paired job (records of ``measure run`` have none)."""
    instructions: Instructions | None = None
    """Callgrind instruction counts per greedy tier (``measure run --instructions``); None in most records."""
    fidelity: Fidelity | None = None
    """The framing suite's fidelity pass: each quantized tier against its full-precision reference (schema v4)."""
    plan: RunPlan | None = None
    """A budgeted run's plan: what it measured of what the config asks, what it cut, how it ended."""
    explore: Explore | None = None
    """``measure explore``'s search: the recipes tried, and the ones dropped before the suites with why."""

    @property
    def date(self) -> str:
        return self.started_at[:10]

    @property
    def commit(self) -> str | None:
        return self.environment.git.commit

    @property
    def order(self) -> tuple[str, str]:
        """Time order of records: start time, then run id."""
        return (self.started_at, self.run_id)

    @property
    def plain(self) -> str | None:
        return next((n for n, t in self.tiers.items() if t.role == "plain"), None)

    def precision(self, tier: str) -> str:
        return self.tiers[tier].precision if tier in self.tiers else "?"

    @property
    def parts(self) -> tuple[str, ...]:
        """Which of :data:`PARTS` this record carries (the cost profile lives inside the wall-clock section), then
        ``explore`` for a record ``measure explore`` made: no part of a machine's current state, but how the site
        finds the searches without reading every record."""
        wc = self.wallclock
        has = {
            "wallclock": wc is not None,
            "profile": wc is not None and wc.profile is not None,
            "framing": self.framing is not None,
            "instructions": self.instructions is not None,
        }
        return tuple(p for p in PARTS if has[p]) + (("explore",) if self.explore is not None else ())

    @property
    def python_tiers(self) -> tuple[FramingTier, ...]:
        return self.framing.python_tiers if self.framing else ()

    @property
    def legs(self) -> tuple[Leg, ...]:
        return self.framing.legs if self.framing else ()
