"""The typed, read-only view of a run record: the one module that knows the record's field names.

A record is read once (:func:`measure.record.load`: migrate, validate), then
turned into these frozen dataclasses; analysis, verdicts, calibration,
comparison, ``show`` and the site read attributes, never raw dict keys.
Writing stays at the storage edge (:mod:`measure.record`), on plain dicts.

Per-row samples become read-only numpy arrays (repeats x rows) here, so every
consumer gets the same shapes and none can change a record it was handed.
Simple sums that several pages print (argmax agreement, rows whose decode
framing leaves unchanged) are properties of the part they sum, written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from measure.policy import Policy, policy_from

FP32 = ("fp32", "fp16")
"""Precisions whose framing or speculative differences are bugs (the policy gates them)."""


def _array(rows: list[list[float]]) -> np.ndarray:
    a = np.asarray(rows, dtype=float)
    if a.ndim != 2:
        a = a.reshape(len(rows), -1)
    a.flags.writeable = False
    return a


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values or ())


# ------------------------------------------------------------------ environment


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
class Tier:
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

    @property
    def file_hashes(self) -> tuple[tuple[str, str], ...]:
        return tuple((f.name, f.sha256) for f in self.files)


# ------------------------------------------------------------------ wall-clock


@dataclass(frozen=True)
class Case:
    """One wall-clock case: a greedy tier, or a speculative pair at one k. Samples are repeats x rows."""

    name: str
    kind: str
    """greedy or speculative."""
    tokens: tuple[int, ...]
    """Output tokens per golden row (one pass)."""
    calls: tuple[int, ...]
    outputs_stable: bool
    wall_s: np.ndarray
    run_s: np.ndarray
    tier: str | None = None
    """The greedy case's tier."""
    pair: str | None = None
    drafter: str | None = None
    verifier: str | None = None
    k: int | None = None
    proposed: tuple[int, ...] = ()
    accepted: tuple[int, ...] = ()
    rounds: tuple[int, ...] = ()
    bonus: tuple[int, ...] = ()
    drafter_calls: tuple[int, ...] = ()
    verifier_calls: tuple[int, ...] = ()
    proposed_by_position: tuple[int, ...] = ()
    accepted_by_position: tuple[int, ...] = ()
    drafter_run_s: np.ndarray | None = None
    verifier_run_s: np.ndarray | None = None

    @property
    def measured(self) -> bool:
        return self.wall_s.size > 0

    @property
    def repeats(self) -> int:
        return int(self.wall_s.shape[0])

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)

    @cached_property
    def per_repeat_totals(self) -> np.ndarray:
        """Total wall seconds over the golden rows, one value per repeat."""
        return self.wall_s.sum(axis=1)

    @cached_property
    def per_repeat_ms_per_token(self) -> np.ndarray:
        return 1000 * self.per_repeat_totals / max(1, self.total_tokens)

    @cached_property
    def median_ms_per_token(self) -> float:
        """The point value every ratio between runs is taken of (compare, A/A calibration, History)."""
        return float(np.median(self.per_repeat_ms_per_token))

    @property
    def overhead(self) -> float:
        """Share of wall time outside session.run."""
        wall = float(self.wall_s.sum())
        return 1 - float(self.run_s.sum()) / wall if wall else 0.0


@dataclass(frozen=True)
class Wallclock:
    warmup: int
    repeats: int
    repeats_done: int
    fresh_sessions: bool | None
    cases: dict[str, Case]

    def greedy(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "greedy" and c.measured]

    def speculative(self) -> list[Case]:
        return [c for c in self.cases.values() if c.kind == "speculative" and c.measured]


# ------------------------------------------------------------------ framing


@dataclass(frozen=True)
class LayerDiff:
    layer: int
    key_mean_abs_diff: float
    value_mean_abs_diff: float
    key_max_abs_diff: float
    value_max_abs_diff: float


@dataclass(frozen=True)
class Block:
    """One batched block size replayed on top of single-step prefixes."""

    block: int | str
    """k, or "whole"."""
    present_max_abs_diff: float
    logits_max_abs_diff: float
    argmax_agree: int
    argmax_total: int
    first_divergent_step: tuple[int | None, ...]
    """Per golden row: the first step whose argmax the block changes, or None."""
    layers: tuple[LayerDiff, ...]


@dataclass(frozen=True)
class Miss:
    line: int
    input: str
    expected: str
    output: str


@dataclass(frozen=True)
class Quality:
    rows: int
    exact: int
    cer_mean: float
    misses: tuple[Miss, ...]


@dataclass(frozen=True)
class FramingTier:
    """One tier's framing facts under one runtime; quality only on the Python leg."""

    tier: str
    precision: str
    status: str
    reason: str
    blocks: tuple[Block, ...]
    outputs: tuple[str, ...]
    output_ids: tuple[tuple[int, ...], ...] | None
    quality: Quality | None

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def fp32(self) -> bool:
        return self.precision in FP32

    @property
    def argmax_agree(self) -> int:
        return sum(b.argmax_agree for b in self.blocks)

    @property
    def argmax_total(self) -> int:
        return sum(b.argmax_total for b in self.blocks)

    @property
    def present_max_abs_diff(self) -> float:
        return max((b.present_max_abs_diff for b in self.blocks), default=0.0)

    @property
    def logits_max_abs_diff(self) -> float:
        return max((b.logits_max_abs_diff for b in self.blocks), default=0.0)

    @property
    def rows(self) -> int:
        return len(self.blocks[0].first_divergent_step) if self.blocks else len(self.outputs)

    @property
    def rows_same(self) -> int:
        """Rows where no batched block changes any argmax of the single-step decode."""
        if not self.blocks:
            return len(self.outputs)
        per_row = zip(*(b.first_divergent_step for b in self.blocks), strict=True)
        return sum(all(step is None for step in row) for row in per_row)


@dataclass(frozen=True)
class Leg:
    """One runtime that decoded the tiers; the first leg is always Python onnxruntime."""

    runtime: str
    language: str
    version: str | None
    host: str | None
    status: str
    reason: str
    tiers: tuple[FramingTier, ...]

    @property
    def name(self) -> str:
        version = f" {self.version}" if self.version else ""
        return f"{self.runtime}{version} ({self.language})"

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    def tier(self, name: str) -> FramingTier | None:
        return next((t for t in self.tiers if t.tier == name), None)


@dataclass(frozen=True)
class Counts:
    accepted: int
    proposed: int

    @property
    def ratio(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None


@dataclass(frozen=True)
class Differing:
    line: int
    input: str
    speculative: str
    greedy: str


@dataclass(frozen=True)
class Acceptance:
    """A drafter/verifier pair at the probe k: acceptance three ways and output preservation."""

    drafter: str
    verifier: str
    self_pair: bool
    k: int
    probe: Counts
    runtime: Counts
    rows: int
    preserved: int
    differing: tuple[Differing, ...]

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"


@dataclass(frozen=True)
class Framing:
    blocks: tuple[int | str, ...]
    legs: tuple[Leg, ...]
    acceptance: tuple[Acceptance, ...]

    @property
    def python_tiers(self) -> tuple[FramingTier, ...]:
        """The Python onnxruntime leg's tiers: the ones that also carry quality."""
        return self.legs[0].tiers if self.legs else ()


# ------------------------------------------------------------------ config and run


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
    tiers: dict[str, Tier]
    wallclock: Wallclock | None
    framing: Framing | None
    test_slowdown_factor: dict[str, float] | None

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
    def python_tiers(self) -> tuple[FramingTier, ...]:
        return self.framing.python_tiers if self.framing else ()

    @property
    def legs(self) -> tuple[Leg, ...]:
        return self.framing.legs if self.framing else ()


# ------------------------------------------------------------------ from a validated document


def _case(name: str, c: dict[str, Any]) -> Case:
    spec = c["kind"] == "speculative"
    return Case(
        name=name,
        kind=c["kind"],
        tokens=_ints(c["tokens"]),
        calls=_ints(c.get("calls")),
        outputs_stable=bool(c.get("outputs_stable", True)),
        wall_s=_array(c["wall_s"]),
        run_s=_array(c["run_s"]),
        tier=c.get("tier"),
        pair=c.get("pair"),
        drafter=c.get("drafter"),
        verifier=c.get("verifier"),
        k=c.get("k"),
        proposed=_ints(c.get("proposed")),
        accepted=_ints(c.get("accepted")),
        rounds=_ints(c.get("rounds")),
        bonus=_ints(c.get("bonus")),
        drafter_calls=_ints(c.get("drafter_calls")),
        verifier_calls=_ints(c.get("verifier_calls")),
        proposed_by_position=_ints(c.get("proposed_by_position")),
        accepted_by_position=_ints(c.get("accepted_by_position")),
        drafter_run_s=_array(c["drafter_run_s"]) if spec and "drafter_run_s" in c else None,
        verifier_run_s=_array(c["verifier_run_s"]) if spec and "verifier_run_s" in c else None,
    )


def _block(b: dict[str, Any]) -> Block:
    return Block(
        block=b["block"],
        present_max_abs_diff=float(b["present_max_abs_diff"]),
        logits_max_abs_diff=float(b["logits_max_abs_diff"]),
        argmax_agree=int(b["argmax_agree"]),
        argmax_total=int(b["argmax_total"]),
        first_divergent_step=tuple(b["first_divergent_step"]),
        layers=tuple(
            LayerDiff(
                int(x["layer"]),
                float(x.get("key_mean_abs_diff", 0.0)),
                float(x.get("value_mean_abs_diff", 0.0)),
                float(x.get("key_max_abs_diff", 0.0)),
                float(x.get("value_max_abs_diff", 0.0)),
            )
            for x in b.get("layers", ())
        ),
    )


def _quality(q: dict[str, Any] | None) -> Quality | None:
    if q is None:
        return None
    misses = tuple(Miss(int(m["line"]), m["input"], m["expected"], m["output"]) for m in q.get("misses", ()))
    return Quality(int(q["rows"]), int(q["exact"]), float(q["cer_mean"]), misses)


def _framing_tier(t: dict[str, Any]) -> FramingTier:
    ids = t.get("output_ids")
    return FramingTier(
        tier=t["tier"],
        precision=t.get("precision", "?"),
        status=t.get("status", "measured"),
        reason=t.get("reason", ""),
        blocks=tuple(_block(b) for b in t.get("blocks", ())),
        outputs=tuple(t.get("outputs", ())),
        output_ids=None if ids is None else tuple(tuple(row) for row in ids),
        quality=_quality(t.get("quality")),
    )


def _acceptance(a: dict[str, Any]) -> Acceptance:
    return Acceptance(
        drafter=a["drafter"],
        verifier=a["verifier"],
        self_pair=bool(a["self"]),
        k=int(a["k"]),
        probe=Counts(int(a["probe"]["accepted"]), int(a["probe"]["proposed"])),
        runtime=Counts(int(a["runtime"]["accepted"]), int(a["runtime"]["proposed"])),
        rows=int(a["rows"]),
        preserved=int(a["preserved"]),
        differing=tuple(Differing(int(d["line"]), d["input"], d["speculative"], d["greedy"]) for d in a["differing"]),
    )


def _framing(fr: dict[str, Any] | None) -> Framing | None:
    if not fr:
        return None
    legs = tuple(
        Leg(
            runtime=leg["runtime"],
            language=leg["language"],
            version=leg.get("version"),
            host=leg.get("host"),
            status=leg["status"],
            reason=leg.get("reason", ""),
            tiers=tuple(_framing_tier(t) for t in leg.get("tiers", ())),
        )
        for leg in fr.get("legs", ())
    )
    return Framing(tuple(fr.get("blocks", ())), legs, tuple(_acceptance(a) for a in fr.get("acceptance", ())))


def _config(cfg: dict[str, Any]) -> Config:
    wc, fr = cfg.get("wallclock") or {}, cfg.get("framing") or {}
    return Config(
        path=cfg.get("path"),
        wallclock=WallclockSettings(
            warmup=int(wc.get("warmup", 1)),
            warmup_s=float(wc.get("warmup_s", 0.0)),
            repeats=int(wc.get("repeats", 0)),
            fresh_sessions=bool(wc.get("fresh_sessions", False)),
            k=_ints(wc.get("k")),
            bootstrap=int(wc.get("bootstrap", 2000)),
            seed=int(wc.get("seed", 0)),
        ),
        framing=FramingSettings(
            k=_ints(fr.get("k")),
            whole_prefix=bool(fr.get("whole_prefix", True)),
            probe_k=int(fr.get("probe_k", 4)),
            node_leg=bool(fr.get("node_leg", False)),
        ),
        session=dict(cfg.get("session") or {}),
        policy=policy_from(cfg.get("policy")),
        pairs=tuple((p["drafter"], p["verifier"]) for p in cfg.get("pairs", ())),
        raw=cfg,
    )


def _environment(env: dict[str, Any]) -> Environment:
    m, git = env["machine"], env["git"]
    return Environment(
        machine=Machine(
            cpu=m["cpu"],
            arch=m["arch"],
            cores=int(m["cores"]),
            memory_bytes=m.get("memory_bytes"),
            os=m["os"],
            platform=m.get("platform", m["os"]),
        ),
        python=env["python"],
        onnxruntime=env["onnxruntime"],
        providers=tuple(env.get("onnxruntime_providers", ())),
        numpy=env.get("numpy", "?"),
        tokenizers=env.get("tokenizers"),
        git=Git(git.get("commit"), git.get("dirty")),
        command=tuple(env.get("command", ())),
    )


def _tier(name: str, t: dict[str, Any]) -> Tier:
    fp = t["fingerprint"]
    return Tier(
        name=name,
        role=t["role"],
        path=t.get("path", ""),
        layout=fp.get("layout", "?"),
        precision=fp["precision"],
        layers=int(fp.get("layers", 0)),
        vocab_size=fp.get("vocab_size"),
        total_bytes=int(fp.get("total_bytes", sum(f["bytes"] for f in fp["files"]))),
        files=tuple(FileEntry(f["name"], int(f["bytes"]), f["sha256"]) for f in fp["files"]),
    )


def from_document(doc: dict[str, Any], source: str) -> Record:
    """A migrated, schema-valid document as a :class:`Record` (the schema guarantees the required keys)."""
    wc = doc.get("wallclock")
    wallclock = None
    if wc:
        wallclock = Wallclock(
            warmup=int(wc.get("warmup", 0)),
            repeats=int(wc.get("repeats", 0)),
            repeats_done=int(wc.get("repeats_done", 0)),
            fresh_sessions=wc.get("fresh_sessions"),
            cases={name: _case(name, c) for name, c in wc.get("cases", {}).items()},
        )
    g = doc["golden"]
    return Record(
        source=source,
        schema_version=int(doc["schema_version"]),
        tool_version=doc["tool"]["version"],
        run_id=doc["run_id"],
        machine_id=doc["machine_id"],
        started_at=doc["started_at"],
        finished_at=doc.get("finished_at"),
        complete=bool(doc["complete"]),
        error=doc.get("error"),
        suites=tuple(doc.get("suites", ())),
        environment=_environment(doc["environment"]),
        config=_config(doc["config"]),
        golden=Golden(str(g["path"]), g["sha256"], int(g["rows"])),
        tiers={name: _tier(name, t) for name, t in doc["tiers"].items()},
        wallclock=wallclock,
        framing=_framing(doc.get("framing")),
        test_slowdown_factor=doc.get("test_slowdown_factor"),
    )
