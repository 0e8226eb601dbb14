"""Per-record summaries: what the site needs of a record, computed once.

A summary holds everything the History, the Runs index and the A/A
calibration read of a record (ids, commit, golden rows, each case's ms/token
per repeat and median interval, every verdict), so a build re-analyses only
new or changed records; :mod:`measure.results.cache` keeps them on disk.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from measure.analysis.calibration import build_key
from measure.analysis.comparison import CaseSamples, cost_samples_of, instruction_samples_of, samples_of
from measure.analysis.rules import verdicts
from measure.analysis.stats import Estimate
from measure.analysis.timings import Bootstrap, bootstrap_of
from measure.analysis.verdict import Verdict, from_table, to_table
from measure.policy import Policy, policy_from
from measure.record.model import Git, Record

PROFILE_METRICS = ("first_token_ms", "row_p90_ms", "memory_bytes")
"""The cost-profile metrics a summary keeps per tier (:func:`~measure.analysis.comparison.cost_samples_of`)."""


@dataclass(frozen=True)
class Summary:
    """What every page but the current record's own read of one record."""

    sha256: str
    run_id: str
    machine_id: str
    started_at: str
    complete: bool
    error: str | None
    commit: str | None
    dirty: bool | None
    golden_sha256: str
    build_key: str | None
    policy: Policy
    bootstrap: Bootstrap
    samples: dict[str, CaseSamples]
    """Every measured wall-clock case: kind, ms/token per repeat, median and interval."""
    cpu_samples: dict[str, CaseSamples]
    """The same in CPU ms/token, for the cases recorded with CPU samples (none in older records)."""
    verdicts: tuple[Verdict, ...]
    instruction_samples: dict[str, CaseSamples]
    """Callgrind instructions per token per run, per greedy tier (records made with ``--instructions``)."""
    instructions_key: str | None
    """What two records' counts must share to be compared (tool, valgrind version, rows); None without counts."""
    timed: str = "text"
    """The region the wall-clock samples span (``Wallclock.timed``): ``ids`` or ``text``."""
    parts: tuple[str, ...] = ()
    """What the record carries (``Record.parts``): which suites' results a machine's current state may take from it."""
    profile_samples: dict[str, dict[str, CaseSamples]] = field(default_factory=dict)
    """Cost-profile metric (:data:`PROFILE_METRICS`) -> tier -> its samples, for History's change points."""

    def samples_of(self, metric: str) -> dict[str, CaseSamples]:
        """The samples History reads in one metric: wall, cpu, instructions or one of :data:`PROFILE_METRICS`."""
        if metric in PROFILE_METRICS:
            return self.profile_samples.get(metric, {})
        return {"wall": self.samples, "cpu": self.cpu_samples, "instructions": self.instruction_samples}[metric]

    @property
    def date(self) -> str:
        return self.started_at[:10]

    @property
    def short_commit(self) -> str:
        return Git(self.commit, self.dirty).short

    def to_dict(self) -> dict[str, Any]:
        return {
            "sha256": self.sha256,
            "run_id": self.run_id,
            "machine_id": self.machine_id,
            "started_at": self.started_at,
            "complete": self.complete,
            "error": self.error,
            "commit": self.commit,
            "dirty": self.dirty,
            "golden_sha256": self.golden_sha256,
            "build_key": self.build_key,
            "policy": vars(self.policy),
            "bootstrap": [self.bootstrap.resamples, self.bootstrap.seed],
            "samples": {n: _samples_to_list(c) for n, c in self.samples.items()},
            "cpu_samples": {n: _samples_to_list(c) for n, c in self.cpu_samples.items()},
            "verdicts": to_table(self.verdicts),
            "instruction_samples": {n: _samples_to_list(c) for n, c in self.instruction_samples.items()},
            "instructions_key": self.instructions_key,
            "timed": self.timed,
            "parts": list(self.parts),
            "profile_samples": {
                m: {n: _samples_to_list(c) for n, c in tiers.items()} for m, tiers in self.profile_samples.items()
            },
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Summary:
        """Raises KeyError/TypeError/ValueError/IndexError on anything unexpected: the caller rebuilds the entry."""
        if d.keys() != _FIELDS:
            raise KeyError("summary fields")
        resamples, seed = d["bootstrap"]
        return cls(
            sha256=str(d["sha256"]),
            run_id=str(d["run_id"]),
            machine_id=str(d["machine_id"]),
            started_at=str(d["started_at"]),
            complete=bool(d["complete"]),
            error=d["error"],
            commit=d["commit"],
            dirty=d["dirty"],
            golden_sha256=str(d["golden_sha256"]),
            build_key=d["build_key"],
            policy=policy_from(d["policy"]),
            bootstrap=Bootstrap(int(resamples), int(seed)),
            samples={n: _samples_from_list(x) for n, x in d["samples"].items()},
            cpu_samples={n: _samples_from_list(x) for n, x in d["cpu_samples"].items()},
            verdicts=from_table(d["verdicts"]),
            instruction_samples={n: _samples_from_list(x) for n, x in d["instruction_samples"].items()},
            instructions_key=d["instructions_key"],
            timed=str(d["timed"]),
            parts=tuple(str(p) for p in d["parts"]),
            profile_samples={
                str(m): {n: _samples_from_list(x) for n, x in t.items()} for m, t in d["profile_samples"].items()
            },
        )


_FIELDS = frozenset(f.name for f in fields(Summary))


def _samples_to_list(c: CaseSamples) -> list[Any]:
    e = c.estimate
    return [c.kind, list(c.ms_per_token), [e.value, e.lo, e.hi, e.q1, e.q3, e.level]]


def _samples_from_list(x: list[Any]) -> CaseSamples:
    kind, values, est = x
    return CaseSamples(str(kind), tuple(map(float, values)), Estimate(*est))


def summarize_record(record: Record, sha256: str) -> Summary:
    """The analysis every page but the current record's needs, at the record's own bootstrap settings."""
    boot = bootstrap_of(record)
    found = verdicts(record)  # the timings without the intervals no verdict reads
    git = record.environment.git
    return Summary(
        sha256=sha256,
        run_id=record.run_id,
        machine_id=record.machine_id,
        started_at=record.started_at,
        complete=record.complete,
        error=record.error,
        commit=git.commit,
        dirty=git.dirty,
        golden_sha256=record.golden.sha256,
        build_key=build_key(record),
        policy=record.config.policy,
        bootstrap=boot,
        samples=samples_of(record),
        cpu_samples=samples_of(record, "cpu"),
        verdicts=tuple(found),
        instruction_samples=instruction_samples_of(record),
        instructions_key=None if record.instructions is None else "/".join(map(str, record.instructions.key())),
        timed=record.wallclock.timed if record.wallclock is not None else "text",
        parts=record.parts,
        profile_samples={m: got for m in PROFILE_METRICS if (got := cost_samples_of(record, m))},
    )
