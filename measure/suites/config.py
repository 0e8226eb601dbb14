"""The suite config (TOML): which tiers, which pairs, which golden rows, how to measure, what policy.

Every option is a typed field with a docstring; unknown keys and missing
files are one-line errors naming the key or the path. Paths are relative to
the config file. With no config, ``measure run`` uses the bundled demo's.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from measure import bundled
from measure.engine.options import SessionConfig
from measure.errors import MeasureError
from measure.policy import Policy
from measure.suites.config_entries import (
    ROLES,
    LayoutSpec,
    PairSpec,
    TierSpec,
    layouts_of,
    new_tokens,
    pairs_of,
    tiers_of,
)
from measure.suites.plan import parse_budget

__all__ = ["ROLES", "LayoutSpec", "PairSpec", "SuiteConfig", "TierSpec", "load_config"]

SUITES = ("wallclock", "framing")


@dataclass(frozen=True)
class WallclockConfig:
    warmup: int = 1
    """Untimed passes over the golden rows per case before timing starts."""
    warmup_s: float = 2.0
    """Keep warming up until this many seconds have passed: an idle CPU needs a second or two to reach speed."""
    repeats: int = 7
    """Timed passes per case, interleaved across cases (A B C A B C ...)."""
    fresh_sessions: bool = True
    """Load new onnxruntime sessions for every repeat, so session-to-session variance is inside the interval."""
    k: tuple[int, ...] = (2, 4, 8)
    """Draft lengths swept for each speculative pair."""
    bootstrap: int = 2000
    """Bootstrap resamples for every interval."""
    seed: int = 20261202
    """Seed of the bootstrap, recorded so intervals are reproducible."""
    profile: bool = True
    """Also measure each tier's cost profile: load time and peak memory in worker processes, one tier each."""
    profile_workers: int = 3
    """Fresh worker processes per tier (and for the onnxruntime-only baseline): one cold load and one peak each."""
    warm_loads: int = 2
    """Loads timed again inside each worker after its first (cold) one."""
    profile_rows: int = 8
    """Golden rows (the first N) each worker decodes before its peak is read, and the thread sweep times."""
    threads: tuple[int, ...] = ()
    """Intra-op thread counts swept for every greedy tier (e.g. [1, 2]); empty: no sweep."""
    call_costs: bool = True
    """Also time single onnxruntime calls: each verifier's call of n = 1 .. max(k) + 1 tokens, each drafter's step."""
    call_cost_rows: int = 16
    """Golden rows (the first N) whose mid-decode caches the timed calls run on."""
    max_new_tokens: int | None = None
    """New tokens a decode may add in this suite, for every tier without its own (``[[tiers]] max_new_tokens``);
    None: each tier's default (decoder-only: ``generation_config.json``'s, else 128; seq2seq: 4 x source + 8)."""

    def __post_init__(self) -> None:
        new_tokens(self.max_new_tokens, "wallclock.max_new_tokens")
        if any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in self.threads):
            raise MeasureError(f"wallclock.threads: expected thread counts >= 1, got {list(self.threads)}")
        if len(set(self.threads)) != len(self.threads):
            raise MeasureError(f"wallclock.threads: expected each count once, got {list(self.threads)}")
        for name, least in (("profile_workers", 1), ("profile_rows", 1), ("warm_loads", 0)):
            if getattr(self, name) < least:
                raise MeasureError(f"wallclock.{name}: expected >= {least}, got {getattr(self, name)}")
        if self.call_cost_rows < 1:
            raise MeasureError(f"wallclock.call_cost_rows: expected >= 1, got {self.call_cost_rows}")


@dataclass(frozen=True)
class FramingConfig:
    k: tuple[int, ...] = (2, 4, 8)
    """Batched block sizes replayed on top of single-step prefixes; the whole prefix is always added."""
    whole_prefix: bool = True
    """Also replay each row's whole prefix in one call."""
    probe_k: int = 4
    """Draft length for acceptance three ways (probe, runtime, self)."""
    node_leg: bool = True
    """Also decode every tier under onnxruntime-node; recorded as skipped, with the reason, where it cannot run."""
    node: str = "node"
    """The Node.js executable, looked up on PATH (it also runs the web leg's browser driver)."""
    web_leg: bool = True
    """Also decode every tier under onnxruntime-web in headless Chromium; recorded as skipped, with the reason,
    where the browser or the npm packages are missing."""
    browser: str = "chromium"
    """The Chromium executable the web leg drives (a path, or a name looked up on PATH); never downloaded."""
    webgpu_leg: bool = False
    """Also decode every tier under onnxruntime-web's WebGPU execution provider, in Chromium with WebGPU enabled;
    skipped, with the reason, where the browser offers no adapter. Off by default: on a machine without a GPU
    the adapter is SwiftShader's (software), whose numerics are WebGPU's kernels but whose speed is CPU
    emulation: 2 to 15 minutes per demo tier on two cores, 54 minutes for the demo's framing suite (no ms/token
    is recorded for a software adapter)."""
    genai_leg: bool = True
    """Also decode the decoder-only tiers and pairs under onnxruntime-genai's compiled loop (the ``genai`` extra);
    recorded as skipped, with the reason, where it is not importable. A run without decoder-only tiers has no
    such leg."""
    fidelity: bool = True
    """Also judge each tier with a reference against it, teacher-forced (KL divergence, same top token, perplexity
    ratio), and each pair's drafter against its verifier (the fidelity pass); a reference not in the suite is
    loaded for the pass only."""
    leg_repeats: int = 2
    """Greedy passes over the golden rows each other runtime (Node, browser) times: the one that records the
    decodes (its first calls warm the runtime up: figures leave it out), then the rest; 0 times none. Two add
    one timed pass to each leg, which the legs mostly win back by taking the recording pass as their single-step
    replay; three or more give each figure a range."""
    max_new_tokens: int | None = None
    """New tokens a decode may add in this suite, for every tier without its own (``[[tiers]] max_new_tokens``);
    None: each tier's default (decoder-only: ``generation_config.json``'s, else 128; seq2seq: 4 x source + 8)."""

    def __post_init__(self) -> None:
        new_tokens(self.max_new_tokens, "framing.max_new_tokens")


@dataclass(frozen=True)
class InstructionsConfig:
    enabled: bool = False
    """Count instructions per token under callgrind after the other suites (about 30x slower than native)."""
    rows: int = 8
    """The first N golden rows each run decodes under callgrind."""
    runs: int = 3
    """Child processes per tier, each counted on its own: the samples compare reads (two at least). Most runs
    agree to 0.01%, but now and then one counts about 1% more; with three, one such run still leaves a 3%
    slowdown called with 80% power (benchmarks/bench_compare.py instructions), with two it does not."""
    valgrind: str = "valgrind"
    """The valgrind executable, looked up on PATH."""

    def __post_init__(self) -> None:
        if self.rows < 1:
            raise MeasureError(f"instructions.rows: expected >= 1, got {self.rows}")
        if self.runs < 2:
            raise MeasureError(f"instructions.runs: expected >= 2 (compare needs two per tier), got {self.runs}")


@dataclass(frozen=True)
class RunConfig:
    budget: str | float | None = None
    """Wall time the whole run may take ("15m", "1h30m", "900s", or seconds): measure plans rows, repeats, framing
    rows and profile workers into it after the warm-up (``measure run --budget`` overrides). None: no plan, the
    run measures what the config asks, however long that takes."""

    def __post_init__(self) -> None:
        if self.budget is not None:
            parse_budget(self.budget, "run.budget")

    @property
    def budget_s(self) -> float | None:
        return None if self.budget is None else parse_budget(self.budget, "run.budget")


@dataclass(frozen=True)
class SuiteConfig:
    path: Path
    """The config file (or the bundled demo's)."""
    golden: Path
    tiers: tuple[TierSpec, ...]
    pairs: tuple[PairSpec, ...]
    session: SessionConfig = field(default_factory=SessionConfig)
    wallclock: WallclockConfig = field(default_factory=WallclockConfig)
    framing: FramingConfig = field(default_factory=FramingConfig)
    policy: Policy = field(default_factory=Policy)
    layouts: tuple[LayoutSpec, ...] = ()
    """Layout variants of one model's weights (``[[layouts]]``), timed per token in the wall-clock suite."""
    instructions: InstructionsConfig = field(default_factory=InstructionsConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def tier(self, name: str) -> TierSpec:
        return next(t for t in self.tiers if t.name == name)

    @property
    def plain(self) -> TierSpec:
        return next(t for t in self.tiers if t.role == "plain")

    def to_dict(self) -> dict[str, Any]:
        """The config as resolved (absolute paths, defaults filled in), for the run record."""
        wc = self.wallclock
        return (
            {
                "path": str(self.path),
                "golden": str(self.golden),
                "tiers": [t.to_dict() for t in self.tiers],
                "pairs": [{"drafter": p.drafter, "verifier": p.verifier} for p in self.pairs],
                "session": self.session.to_dict(),
                "wallclock": _set(asdict(self.wallclock)) | {"k": list(wc.k), "threads": list(wc.threads)},
                "framing": _set(asdict(self.framing)) | {"k": list(self.framing.k)},
                "policy": asdict(self.policy),
                "instructions": asdict(self.instructions),
            }
            | ({"layouts": [v.to_dict() for v in self.layouts]} if self.layouts else {})
            | self._run_dict()
        )

    def _run_dict(self) -> dict[str, Any]:
        """``run``, only when a budget is set: a config without one records what it recorded before budgets."""
        budget = self.run.budget_s
        return {} if budget is None else {"run": {"budget_s": budget}}

    def new_tokens(self, suite: str, tier: str) -> int | None:
        """A tier's decode length in ``suite`` (``wallclock`` or ``framing``): its own entry's, else the suite's."""
        own = self.tier(tier).max_new_tokens
        return own if own is not None else getattr(self, suite).max_new_tokens


def _set(section: dict[str, Any]) -> dict[str, Any]:
    """A table as the record stores it: ``max_new_tokens`` only where the config sets it."""
    return {k: v for k, v in section.items() if not (k == "max_new_tokens" and v is None)}


def _section(data: dict[str, Any], cls: type, where: str, path: Path) -> Any:
    known = {f.name: f for f in fields(cls)}
    for key in data:
        if key not in known:
            raise MeasureError(
                f"{path}: unknown key {where}.{key}; expected one of {', '.join(known)}", docs="reference/config.md"
            )
    values = {}
    for key, value in data.items():
        default = getattr(cls(), key)
        if default is None:  # an optional value: its dataclass checks it, naming the key
            pass
        elif isinstance(default, tuple):
            if not isinstance(value, list):
                raise MeasureError(f"{path}: {where}.{key}: expected a list, got {value!r}")
            value = tuple(value)
        elif isinstance(default, bool) != isinstance(value, bool) or (
            isinstance(default, int | float) and not isinstance(value, int | float)
        ):
            raise MeasureError(f"{path}: {where}.{key}: expected {type(default).__name__}, got {value!r}")
        values[key] = value
    try:
        return cls(**values)
    except MeasureError as exc:
        raise MeasureError(f"{path}: {exc}") from exc


TOP = ("golden", "tiers", "pairs", "session", "wallclock", "framing", "policy", "layouts", "instructions", "run")
ARRAYS = ("tiers", "pairs", "layouts")
"""Sections written as arrays of tables (``[[tiers]]``): checked by hand, one function each."""
TABLES = ("session", "wallclock", "framing", "policy", "instructions", "run")
"""Sections written as one table (``[wallclock]``): keys and types from the dataclass, ranges from the schema."""


def load_config(path: Path | str | None = None) -> SuiteConfig:
    """Read and check a suite config; ``None`` gives the bundled demo's."""
    path = Path(path) if path is not None else bundled.CONFIG
    data = _read(path)
    _check_shape(data, path)
    base = path.parent
    golden = _golden(data["golden"], base, path)
    tiers = tiers_of(data.get("tiers", []), base, path)
    pairs = pairs_of(data.get("pairs", []), [t.name for t in tiers], path)
    layouts = layouts_of(data.get("layouts", []), base, path)
    session_data = dict(data.get("session", {}))
    if "providers" in session_data and not isinstance(session_data["providers"], list):
        raise MeasureError(f"{path}: session.providers: expected a list of provider names")
    config = SuiteConfig(
        path=path.resolve(),
        golden=golden,
        tiers=tiers,
        pairs=pairs,
        session=_section(session_data, SessionConfig, "session", path),
        wallclock=_section(data.get("wallclock", {}), WallclockConfig, "wallclock", path),
        framing=_section(data.get("framing", {}), FramingConfig, "framing", path),
        policy=_section(data.get("policy", {}), Policy, "policy", path),
        layouts=layouts,
        instructions=_section(data.get("instructions", {}), InstructionsConfig, "instructions", path),
        run=_section(data.get("run", {}), RunConfig, "run", path),
    )
    _check_ranges(config, path)
    _check_pair_room(config, path)
    return config


def _check_pair_room(config: SuiteConfig, path: Path) -> None:
    """A verifier's decode length must leave a speculative round room for one draft: the first new token is the
    prefill's, the last the verifier's own, so a pair needs 3 (with 2 its drafter is never called)."""
    for p in config.pairs:
        for suite in ("wallclock", "framing"):
            n = config.new_tokens(suite, p.verifier)
            if n is not None and n < 3:
                i = next(i for i, t in enumerate(config.tiers) if t.name == p.verifier)
                key = (
                    f"tiers[{i}].max_new_tokens"
                    if config.tiers[i].max_new_tokens is not None
                    else f"{suite}.max_new_tokens"
                )
                raise MeasureError(
                    f"{path}: {key}: {n} leaves pair {p.name} no room for a draft; expected at least 3 for a verifier"
                )


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read config ({exc.strerror or type(exc).__name__})") from exc
    except UnicodeDecodeError as exc:
        raise MeasureError(f"{path}: not UTF-8 text (byte {exc.start}); expected a TOML suite config") from exc
    except tomllib.TOMLDecodeError as exc:
        raise MeasureError(f"{path}: not valid TOML ({exc})") from exc


def _check_shape(data: dict[str, Any], path: Path) -> None:
    """Known top-level keys, a golden path, and each section the kind of TOML value it must be."""
    for key in data:
        if key not in TOP:
            raise MeasureError(
                f"{path}: unknown key {key!r}; expected one of {', '.join(sorted(TOP))}", docs="reference/config.md"
            )
    if "golden" not in data:
        raise MeasureError(f"{path}: missing key 'golden' (the golden rows file)")
    if not isinstance(data["golden"], str):
        raise MeasureError(f"{path}: golden: expected a path to a golden rows file (a string), got {data['golden']!r}")
    for key in (*ARRAYS, *TABLES):
        kind = list if key in ARRAYS else dict
        if key in data and not isinstance(data[key], kind):
            what = f"an array of tables [[{key}]]" if kind is list else f"a table [{key}]"
            raise MeasureError(f"{path}: {key}: expected {what}, got {data[key]!r}")


def _golden(value: str, base: Path, path: Path) -> Path:
    golden = (base / value).resolve()
    if not golden.is_file():
        raise MeasureError(f"{path}: golden = {value!r}: file not found at {golden}")
    return golden


def _check_ranges(config: SuiteConfig, path: Path) -> None:
    """The ranges the record schema holds each table of a stored config to, so a run never writes what it refuses.

    The arrays of tables are checked in full by hand above, so only the tables go through the schema.
    """
    import jsonschema

    from measure.record.io import schema

    defs = schema()["$defs"]
    resolved = config.to_dict()
    for section in (t for t in TABLES if t in resolved):
        ref = f"#/$defs/config/properties/{section}"
        validator = jsonschema.Draft202012Validator({"$defs": defs, "$ref": ref})
        error = jsonschema.exceptions.best_match(validator.iter_errors(resolved[section]))
        if error is not None:
            where = ".".join([section, *(str(p) for p in error.absolute_path)])
            raise MeasureError(f"{path}: {where}: {error.message}")
