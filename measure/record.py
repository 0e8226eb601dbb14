"""The run record: one JSON file per run, the product's memory. Designed as a file format.

JSON format history (``schema_version``, kept apart from the tool version):

* 1 — first format: environment, resolved config, golden rows provenance,
  tier fingerprints, raw wall-clock samples, framing-parity facts.
  Later additions, all optional so every earlier version-1 file still reads:
  ``framing.tiers[].output_ids`` (token ids of each greedy decode, for the
  cross-machine first divergent token) and ``test_slowdown_factor``.
* 2 — the runtime dimension: ``framing.tiers`` moved into ``framing.legs``,
  one entry per runtime that decoded the tiers (``runtime``, ``language``,
  ``version``, ``status``, ``reason`` when skipped or failed). The first leg is
  always Python onnxruntime and carries quality; later legs (onnxruntime-node)
  carry framing facts and their own greedy decodes per tier. Every tier entry
  has a ``status``. Migrated from 1: the tiers become the Python leg, at the
  onnxruntime version the environment states.
  Later additions, all optional so every earlier version-2 file still reads:
  ``wallclock.cases[].cpu_s`` (process CPU seconds of each row's decode, all
  threads, shaped like ``wall_s``: repeats x rows), the samples of
  ``measure compare --metric cpu``.

Loading validates against the JSON Schema shipped beside this module, refuses
records from a newer measure, and migrates older ones one step at a time
(``MIGRATIONS[n]`` turns version n into n + 1), as asv does.

Writing is atomic (temp file + rename) and happens after every case, so an
interrupted run leaves a valid record marked incomplete, never a truncated file.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.model import Record, from_document

SCHEMA_VERSION = 2
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")
"""What ``new_run_id`` makes and the schema requires; a record's file is named by it."""
SCHEMA_DIR = Path(__file__).resolve().parent / "schema"

Migration = Callable[[dict[str, Any]], dict[str, Any]]


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 1's framing tiers were all decoded by Python onnxruntime: make them that leg."""
    framing = doc.get("framing")
    if framing:
        tiers = [{**t, "status": "measured"} for t in framing.pop("tiers", [])]
        version = (doc.get("environment") or {}).get("onnxruntime")
        leg = {"runtime": "onnxruntime", "language": "python", "version": version, "status": "measured", "tiers": tiers}
        framing["legs"] = [leg]
    return doc


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2}
"""``MIGRATIONS[n]`` upgrades a version-n document to version n + 1."""


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id() -> str:
    """Sortable by time, unique across machines: ``20261202T173000Z-1a2b3c``."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@cache
def schema(version: int = SCHEMA_VERSION) -> dict[str, Any]:
    return json.loads((SCHEMA_DIR / f"record-v{version}.schema.json").read_text(encoding="utf-8"))


@cache
def _fast_validator(version: int) -> Any:
    import jsonschema_rs

    return jsonschema_rs.validator_for(schema(version))


def validate(doc: dict[str, Any], source: str) -> None:
    """Schema check; the error names the file and the JSON path of the first problem.

    jsonschema-rs answers valid/invalid in well under a millisecond; only an
    invalid record pays for the Python jsonschema walk that explains why.
    """
    import jsonschema

    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if not isinstance(version, int):
        raise MeasureError(f"{source}: not a measure run record (no integer schema_version)")
    if not _fast_validator(version).is_valid(doc):
        validator = jsonschema.Draft202012Validator(schema(version))
        error = jsonschema.exceptions.best_match(validator.iter_errors(doc))
        if error is not None:
            while error.context:  # anyOf/oneOf: descend to the most specific cause
                error = jsonschema.exceptions.best_match(error.context)
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
            raise MeasureError(f"{source}: field {where}: {message}")
        raise MeasureError(f"{source}: does not match record schema v{version}")
    _check_samples(doc, source)


def _check_samples(doc: dict[str, Any], source: str) -> None:
    """What a JSON Schema cannot say: every per-row array of a case has one entry per golden row."""
    for name, case in ((doc.get("wallclock") or {}).get("cases") or {}).items():
        rows = len(case["tokens"])
        for key in ("wall_s", "run_s", "drafter_run_s", "verifier_run_s"):
            if any(len(rep) != rows for rep in case.get(key, [])):
                raise MeasureError(
                    f"{source}: field wallclock/cases/{name}/{key}: expected one list of {rows} seconds per repeat"
                )
        for key in ("calls", "proposed", "accepted", "rounds", "bonus", "drafter_calls", "verifier_calls"):
            if key in case and len(case[key]) != rows:
                raise MeasureError(f"{source}: field wallclock/cases/{name}/{key}: expected {rows} counts")


def migrate(doc: dict[str, Any], source: str, migrations: dict[int, Migration] | None = None) -> dict[str, Any]:
    """Bring a record to :data:`SCHEMA_VERSION`, step by step; refuse a newer one."""
    steps = MIGRATIONS if migrations is None else migrations
    target = max([SCHEMA_VERSION, *[n + 1 for n in steps]])
    version = doc.get("schema_version")
    if not isinstance(version, int):
        raise MeasureError(f"{source}: not a measure run record (no integer schema_version)")
    if version > target:
        raise MeasureError(
            f"{source}: schema_version {version} was written by a newer measure; "
            f"this one reads versions up to {target}: upgrade measure to read it"
        )
    while version < target:
        if version not in steps:
            raise MeasureError(f"{source}: schema_version {version} is older than any this measure can migrate")
        doc = steps[version](doc)
        version += 1
        doc["schema_version"] = version
    return doc


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read record ({exc.strerror})") from exc


def load_record(path: Path | str, data: bytes | None = None) -> dict[str, Any]:
    """Read, migrate and validate one record file (``data``: its bytes, when the caller has read them)."""
    import orjson

    path = Path(path)
    if data is None:
        data = read_bytes(path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise MeasureError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(doc, dict):
        raise MeasureError(f"{path}: not a measure run record (expected a JSON object)")
    doc = migrate(doc, str(path))
    validate(doc, str(path))
    return doc


def load(path: Path | str, data: bytes | None = None) -> Record:
    """One record file as the typed, read-only :class:`~measure.model.Record` every reader uses."""
    return from_document(load_record(path, data), str(path))


def write_atomic(path: Path, doc: dict[str, Any]) -> None:
    """Write beside the target and rename over it: readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; records are meant to be read and published
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RecordWriter:
    """Owns one record on disk while a run fills it in; every ``save`` leaves a valid file."""

    def __init__(self, results: Path, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.path = results / doc["machine_id"] / f"{doc['run_id']}.json"
        self.save(check=True)

    def save(self, check: bool = False) -> None:
        """Rewrite the file; ``check`` validates first (done at the start and the end of a run)."""
        if check:
            validate(self.doc, str(self.path))
        write_atomic(self.path, self.doc)

    def finish(self, error: str | None = None) -> Path:
        self.doc["finished_at"] = now_iso()
        self.doc["complete"] = error is None
        if error is not None:
            self.doc["error"] = error
        self.save(check=True)
        return self.path
