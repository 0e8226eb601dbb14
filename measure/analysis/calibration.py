"""A/A calibration of a machine's run-to-run drift: how far two runs of one build drift apart on one machine.

An A/A pair is two consecutive complete records of the same machine that
measured the same thing: one clean git commit, the same onnxruntime, the same
golden rows, the same tier files and the same session and wall-clock settings
(:func:`build_key`). Each wall-clock case they share gives one ratio of
medians (ms/token, later / earlier), kept for the record; the chosen quantile
(0.95 by default) of ``|ratio - 1|`` is reported as what the machine does to
one build.

What :mod:`measure.analysis.comparison` uses is the **drift**: the run-to-run standard
deviation of log ms/token beyond what each run's own repeats explain. For a
pair and case, ``D = mean(log new) - mean(log base)`` has expected square
``2 drift^2 + s_base^2 / n_base + s_new^2 / n_new``; the drift is the
method-of-moments estimate pooled over every pair and case (never below zero).
The cases of one run share its drift (a busy host slows them all), so the
drift has as many degrees of freedom as there are pairs, and a calibration of
fewer than :data:`STRONG_PAIRS` pairs is marked weak. CPU ms/token gets a
drift of its own from the pairs that recorded CPU samples, and callgrind
instructions per token one from the pairs that counted them (same valgrind,
same rows on both sides). Compare adds
``2 drift^2`` to each comparison's variance: the drift widens the interval
and lowers the power, it does not move the band.

The calibration of a machine is written to ``<results>/<machine-id>/calibration.json``
(``measure calibrate --write``) so a pull request's gate and the site use the
same figure the history was judged with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from measure.analysis.comparison import CaseSamples, Drift
from measure.errors import MeasureError
from measure.record.model import Record
from measure.record.tree import Dated, in_time_order

CALIBRATION_VERSION = 2
"""2 adds ``drift_sd`` (and ``weak``); a version-1 file is read with a drift derived from its ratios alone."""
QUANTILE = 0.95
STRONG_PAIRS = 3
"""Fewer A/A pairs than this make a weak calibration: the drift's degrees of freedom are the pairs."""


@dataclass(frozen=True)
class AAPair:
    """Two records of one build, in time order, and each shared case's ratio of medians."""

    base: str
    new: str
    """Run ids."""
    commit: str
    ratios: tuple[tuple[str, float], ...]
    """(case, median ms/token of new / of base), sorted by case."""

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "new": self.new, "commit": self.commit, "ratios": dict(self.ratios)}


@dataclass(frozen=True)
class Calibration:
    machine_id: str
    quantile: float
    pairs: tuple[AAPair, ...]
    tolerance: float | None
    """The quantile of |ratio - 1| over every pair and case; None without any pair. Reported, not a band."""
    drift_sd: float | None = None
    """Run-to-run drift of log wall ms/token beyond each run's own noise; None without any pair."""
    cpu_drift_sd: float | None = None
    """The same for CPU ms/token; None when no pair has CPU samples on both sides."""
    cpu_pairs: int = 0
    """A/A pairs with CPU samples on both sides (records from before CPU time have none)."""
    instructions_drift_sd: float | None = None
    """The same for callgrind instructions per token; None when no pair counted instructions on both sides."""
    instructions_pairs: int = 0
    """A/A pairs with instruction counts of the same valgrind and rows on both sides."""
    version: int = CALIBRATION_VERSION

    @property
    def drift(self) -> Drift | None:
        """What compare adds to its variance: the drift with one degree of freedom per pair."""
        return None if self.drift_sd is None or not self.pairs else Drift(self.drift_sd, float(len(self.pairs)))

    def drift_of(self, metric: str) -> Drift | None:
        """The drift of one metric (wall, cpu or instructions), as :attr:`drift` gives it for wall."""
        if metric == "wall":
            return self.drift
        if metric == "instructions":
            sd, pairs = self.instructions_drift_sd, self.instructions_pairs
        else:
            sd, pairs = self.cpu_drift_sd, self.cpu_pairs
        return None if sd is None or not pairs else Drift(sd, float(pairs))

    @property
    def weak(self) -> bool:
        return len(self.pairs) < STRONG_PAIRS

    @property
    def values(self) -> int:
        return sum(len(p.ratios) for p in self.pairs)

    @property
    def worst(self) -> tuple[str, str, float] | None:
        """(run id, case, ratio) of the largest drift seen."""
        drifts = [(p.new, case, r) for p in self.pairs for case, r in p.ratios]
        return max(drifts, key=lambda d: abs(d[2] - 1)) if drifts else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "calibration_version": self.version,
            "machine_id": self.machine_id,
            "quantile": self.quantile,
            "tolerance": self.tolerance,
            "drift_sd": self.drift_sd,
            "cpu_drift_sd": self.cpu_drift_sd,
            "cpu_pairs": self.cpu_pairs,
            "instructions_drift_sd": self.instructions_drift_sd,
            "instructions_pairs": self.instructions_pairs,
            "weak": self.weak,
            "values": self.values,
            "worst": None if self.worst is None else dict(zip(("run_id", "case", "ratio"), self.worst, strict=True)),
            "pairs": [p.to_dict() for p in self.pairs],
        }


class AARun(Dated, Protocol):
    """What pairing reads of a run beyond the folder queries' fields (a record's cached summary has all of it)."""

    @property
    def build_key(self) -> str | None: ...
    @property
    def samples(self) -> Mapping[str, CaseSamples]: ...
    @property
    def cpu_samples(self) -> Mapping[str, CaseSamples]: ...
    @property
    def instruction_samples(self) -> Mapping[str, CaseSamples]: ...
    @property
    def instructions_key(self) -> str | None: ...


def build_key(record: Record) -> str | None:
    """What two records must share to be an A/A pair, hashed; None when the build is not pinned (no or dirty commit)."""
    git = record.environment.git
    if not git.pinned:
        return None
    config = record.config.raw
    what = {
        "commit": git.commit,
        "onnxruntime": record.environment.onnxruntime,
        "golden": record.golden.sha256,
        "session": config.get("session"),
        "wallclock": config.get("wallclock"),
        "tiers": {
            name: {"role": t.role, "files": [list(f) for f in t.file_hashes]}
            for name, t in sorted(record.tiers.items())
        },
        "pairs": config.get("pairs"),
    }
    if record.pairing is not None:  # a paired job's two sides (measure ab) are one job, not two runs of a build
        what["pairing"] = [record.pairing.id, record.pairing.side]
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _ratios(base: AARun, new: AARun) -> tuple[tuple[str, float], ...]:
    old = base.samples
    return tuple(
        (name, case.median / old[name].median)
        for name, case in sorted(new.samples.items())
        if name in old and case.ms_per_token and old[name].ms_per_token
    )


def _excess(base: Mapping[str, CaseSamples], new: Mapping[str, CaseSamples]) -> list[float]:
    """Per shared case: D^2 minus what the two runs' own repeats explain of it (log ms/token)."""
    out = []
    for name, case in sorted(new.items()):
        old = base.get(name)
        if old is None or not case.ms_per_token or not old.ms_per_token:
            continue
        x, y = np.log(old.ms_per_token), np.log(case.ms_per_token)
        own = sum(v.var(ddof=1) / v.size for v in (x, y) if v.size > 1)
        out.append(float((y.mean() - x.mean()) ** 2 - own))
    return out


def calibrate(runs: Iterable[AARun], machine_id: str, quantile: float = QUANTILE) -> Calibration:
    """Pair consecutive same-build records of one machine (oldest first) and pool their drifts."""
    if not 0 < quantile <= 1:
        raise MeasureError(f"quantile: expected a number in (0, 1], got {quantile}")
    mine = in_time_order(r for r in runs if r.machine_id == machine_id and r.complete and r.samples)
    pairs, excess, cpu_excess, cpu_pairs, ins_excess, ins_pairs = [], [], [], 0, [], 0
    for base, new in pairwise(mine):
        key = new.build_key
        if key is not None and key == base.build_key:
            ratios = _ratios(base, new)
            if ratios:
                pairs.append(AAPair(base.run_id, new.run_id, new.commit or "", ratios))
                excess += _excess(base.samples, new.samples)
                cpu = _excess(base.cpu_samples, new.cpu_samples)
                cpu_excess += cpu
                cpu_pairs += bool(cpu)
                if base.instructions_key is not None and base.instructions_key == new.instructions_key:
                    ins = _excess(base.instruction_samples, new.instruction_samples)
                    ins_excess += ins
                    ins_pairs += bool(ins)
    drifts = [abs(r - 1) for p in pairs for _, r in p.ratios]
    tolerance = float(np.quantile(drifts, quantile, method="higher")) if drifts else None
    return Calibration(
        machine_id,
        quantile,
        tuple(pairs),
        tolerance,
        _drift_sd(excess),
        _drift_sd(cpu_excess),
        cpu_pairs,
        _drift_sd(ins_excess),
        ins_pairs,
    )


def _drift_sd(excess: list[float]) -> float | None:
    """Method of moments: E[D^2 - own] = 2 drift^2, never below zero; None without any value."""
    return float(np.sqrt(max(0.0, float(np.mean(excess))) / 2)) if excess else None


def _field(doc: dict[str, Any], name: str, kinds: type | tuple[type, ...], expected: str, path: Path) -> Any:
    value = doc.get(name)
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise MeasureError(f"{path}: field '{name}': expected {expected}, got {value!r}")
    return value


def _number(doc: dict[str, Any], name: str, path: Path) -> float | None:
    """An optional number >= 0 (a tolerance, a drift): None when absent or null."""
    value = doc.get(name)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise MeasureError(f"{path}: field '{name}': expected a number >= 0 or null, got {value!r}")
    return float(value)


def _count(doc: dict[str, Any], name: str, path: Path) -> int:
    """An optional count of pairs (0 when absent)."""
    value = doc.get(name, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MeasureError(f"{path}: field '{name}': expected an integer >= 0, got {value!r}")
    return value


def _pairs(doc: dict[str, Any], path: Path) -> tuple[AAPair, ...]:
    pairs = []
    for i, p in enumerate(_field(doc, "pairs", list, "a list of A/A pairs", path)):
        try:
            ratios = tuple(sorted((str(k), float(v)) for k, v in p["ratios"].items()))
            pairs.append(AAPair(str(p["base"]), str(p["new"]), str(p["commit"]), ratios))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            what = "expected base, new, commit and ratios {case: number}"
            raise MeasureError(f"{path}: field 'pairs[{i}]': {what}") from exc
    return tuple(pairs)


def from_dict(doc: Any, path: Path) -> Calibration:
    """A calibration file's object, checked field by field (``path`` names it in errors)."""
    if not isinstance(doc, dict):
        raise MeasureError(f"{path}: expected a JSON object (a measure calibration)")
    version = _field(doc, "calibration_version", int, "an integer", path)
    if version not in (1, CALIBRATION_VERSION):
        raise MeasureError(f"{path}: field 'calibration_version': expected 1 or {CALIBRATION_VERSION}, got {version}")
    machine = _field(doc, "machine_id", str, "a machine id", path)
    quantile = float(_field(doc, "quantile", (int, float), "a number", path))
    tolerance = _number(doc, "tolerance", path)
    pairs = _pairs(doc, path)
    if version == 1:  # no drift recorded: all of each ratio's log taken as drift (an upper bound)
        logs = [np.log(r) ** 2 for p in pairs for _, r in p.ratios if r > 0]
        drift = float(np.sqrt(np.mean(logs) / 2)) if logs else None
    else:
        drift = _number(doc, "drift_sd", path)
    cpu_sd, cpu_pairs = _number(doc, "cpu_drift_sd", path), _count(doc, "cpu_pairs", path)
    ins_sd, ins_pairs = _number(doc, "instructions_drift_sd", path), _count(doc, "instructions_pairs", path)
    return Calibration(machine, quantile, pairs, tolerance, drift, cpu_sd, cpu_pairs, ins_sd, ins_pairs)
