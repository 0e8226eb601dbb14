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
  ``wallclock.cases[].first_token_s`` (greedy cases: source text in -> first
  output token, per repeat, per row) and ``wallclock.profile`` (the cost
  profile: per tier ``load_cold_s``, ``load_warm_s`` and ``peak_rss_bytes``
  from one-tier worker processes, the import-only ``baseline``, how the peak
  was read in ``memory`` (source, unit, platform), and the optional intra-op
  ``threads`` sweep with the fastest count). A record without them has no
  profile; its percentiles still derive from ``wall_s``.
  Also ``wallclock.cases[].cpu_s`` (process CPU seconds of each row's decode, all
  threads, shaped like ``wall_s``: repeats x rows), the samples of
  ``measure compare --metric cpu``.
  Also ``pairing`` (``measure ab``: one side of a paired job, BASE and NEW
  measured together with repeats paired; ``id`` shared by both records,
  ``side``, ``partner_run_id``, ``order`` and per case ``base_first``).
  Also the top-level ``instructions`` (``measure run --instructions``):
  callgrind's instruction count (Ir) of each greedy tier's decode region over
  the first ``rows`` golden rows, one child process under valgrind per run
  (``tiers.<name>.instructions``, one count per run, and the ``tokens`` those
  decodes produced), with the ``valgrind`` version; the samples of ``measure
  compare --metric instructions``.
  Also ``wallclock.timed`` (``ids``: ``wall_s``, ``run_s``, ``cpu_s`` and
  ``first_token_s`` span the decode from the source's token ids to the output's;
  absent means ``text``, the source text in, tokenizing included) and
  ``wallclock.cases[].tokenize_s`` (the tokenizing kept out of that region, per
  repeat, per row: the source's encode plus the output's decode to text).
  Also the onnxruntime-web leg (``runtime`` onnxruntime-web, ``language``
  browser, ``host`` the browser) and, on the legs after Python's:
  ``execution`` (the browser leg: ``provider``, ``threads`` used and
  requested, ``cross_origin_isolated``, ``simd``), per tier ``divergence``
  (each row whose decode leaves Python's: ``row``, ``line``, ``step``, both
  tokens, the runtime's ``margin`` and ``python_margin``) and ``timing``
  (``greedy_ms`` of each greedy pass over the rows, the recording pass first,
  and ``tokens`` per pass); ``config.framing.web_leg``, ``browser``,
  ``leg_repeats``.
* 3 — two model kinds: every tier entry states its ``kind``, ``seq2seq``
  (encoder-decoder) or ``causal`` (decoder-only), and a decoder-only tier its
  ``prompt`` template. Migrated from 2: every tier is ``seq2seq`` (version 2
  measured nothing else).
  Also the stored form (:mod:`measure.record.pack`; the document in memory and
  the schema are unchanged by it): a file holds the record packed, and may be
  gzipped as ``<run-id>.json.gz``. Under ``wallclock``, every ``*_s`` field that
  is a rectangular nesting of lists of seconds is stored as integers of the
  coarsest unit that holds it exactly, one line of text with its shape
  (``{"unit": "us", "shape": [7, 64], "diffs": "2710 2362 ..."}``: repeats after
  the first as differences from the one before, ``run_s`` and ``cpu_s`` against
  ``wall_s``); the first packed form, ``{"ns": <integers>}``, still reads.
  Under ``framing``, a list of two or more objects with the same keys is
  ``{"~rows": n, "~columns": {key: values or {"~same": value}}}``. Unpacking
  gives back the document bit for bit (a value that would not is stored as it
  is); a plain file still reads, so every version-3 file written before packing
  does.
  Also ``wallclock.resolution_s``: what every wall-clock sample is recorded to,
  a microsecond (1e-6) since 2026-12; absent, a nanosecond (the suites rounded
  there before). The finer digits were timer jitter, which no compression
  shrinks.
* 4 — fidelity: the top-level ``fidelity`` block (the framing suite's
  teacher-forced pass: each tier with a reference against it, per golden row,
  on the reference's greedy path and the golden outputs; each pair's drafter
  against its verifier; :mod:`measure.record.model.fidelity`), the policy's
  ``kld_mean_max``, ``same_top1_min`` and ``ppl_ratio_max`` (a number, or one
  per role), ``config.framing.fidelity`` and a tier's ``reference``. Migrated
  from 3: no fidelity block (no pass was run).
* 5 — the stored form shares the first leg's facts: a later framing leg's tier
  fact (its output ids, outputs, framing blocks...) that is the Python leg's
  for the same tier, byte for byte, is stored as ``{"~first_leg": true}``
  (:mod:`measure.record.pack`). The document, and its schema, are version 4's;
  the number moved so that a version-4 reader, which cannot unpack the marker,
  says the file is newer instead of failing on a field. Migrated from 4: nothing
  changes.

Loading validates against the JSON Schema shipped beside this module, refuses
records from a newer measure, and migrates older ones one step at a time
(``MIGRATIONS[n]`` turns version n into n + 1), as asv does.

Writing is atomic (temp file + rename) and happens after every case, so an
interrupted run leaves a valid record marked incomplete, never a truncated file.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.record import archive
from measure.record.checks import check
from measure.record.model import Record, from_document
from measure.record.pack import compress, decompress, is_gzip, pack, unpack
from measure.record.sample_codec import Unpacked, stand_in
from measure.writing import json_text, reason, write_bytes, write_json

SCHEMA_VERSION = 5
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")
"""What ``new_run_id`` makes and the schema requires; a record's file is named by it."""
MACHINE_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
"""What the schema admits as a machine id: a plain folder name, never ``.``, ``..`` or hidden."""
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


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 2 measured encoder-decoder tiers only: say so on each."""
    for entry in (doc.get("tiers") or {}).values():
        if isinstance(entry, dict):
            entry.setdefault("kind", "seq2seq")
    return doc


def _v3_to_v4(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 3 ran no fidelity pass: the block stays absent, so every reader says it was not measured."""
    return doc


def _v4_to_v5(doc: dict[str, Any]) -> dict[str, Any]:
    """Version 5 changed how a file stores the document, not the document."""
    return doc


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5}
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


def _as_json(value: Any) -> Any:
    """The document with packed fields kept as arrays (``load_record(arrays=True)``) made lists again: what the
    explaining validator walks, so it names the real fault, never an array it does not know as JSON."""
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") and hasattr(value, "ndim") else value


@contextmanager
def _standing_in(spans: list[Unpacked]) -> Iterator[None]:
    """Each unpacked seconds field replaced by its stand-in while the schema reads the document, then put back."""
    kept = [span.parent[span.key] for span in spans]
    try:
        for span in spans:
            span.parent[span.key] = stand_in(span)
        yield
    finally:
        for span, value in zip(spans, kept, strict=True):
            span.parent[span.key] = value


def _non_finite(value: Any, path: str = "") -> str | None:
    """The JSON path of the first inf or NaN in a document made in memory (no JSON text holds one), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite(item, f"{path}/{key}" if path else str(key))
        if found is not None:
            return found
    return None


def validate(doc: dict[str, Any], source: str, spans: list[Unpacked] | None = None) -> None:
    """Schema check, then the relations it cannot say (:mod:`measure.record.checks`); the error names the
    file and the JSON path of the first problem.

    jsonschema-rs answers valid/invalid in well under a millisecond; only an
    invalid record pays for the Python jsonschema walk that explains why.
    ``spans``: the seconds fields :func:`~measure.record.pack.unpack` made from
    integers; the schema reads each as its stand-in (depth, least and greatest
    value), which it accepts exactly when it accepts every value: a record's
    ten thousand samples cost it four numbers.
    """
    import jsonschema

    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise MeasureError(f"{source}: not a measure run record (no integer schema_version)")
    if not (SCHEMA_DIR / f"record-v{version}.schema.json").is_file():
        raise MeasureError(f"{source}: field schema_version: no schema v{version}; expected {SCHEMA_VERSION}")
    with _standing_in(spans or []):
        valid = _fast_validator(version).is_valid(doc)
    if not valid:
        validator = jsonschema.Draft202012Validator(schema(version))
        error = jsonschema.exceptions.best_match(validator.iter_errors(_as_json(doc)))
        if error is not None:
            while error.context:  # anyOf/oneOf: descend to the most specific cause, the deepest in the document
                deepest = max(len(e.absolute_path) for e in error.context)  # not "is not null" of a nullable part
                error = jsonschema.exceptions.best_match(e for e in error.context if len(e.absolute_path) == deepest)
            where: str | None = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            message = error.message if len(error.message) <= 200 else error.message[:200] + "..."
            raise MeasureError(f"{source}: field {where}: {message}")
        where = _non_finite(doc)
        if where is not None:  # jsonschema-rs refuses inf and NaN as numbers; Python's jsonschema takes them
            raise MeasureError(f"{source}: field {where or '(top level)'}: inf or NaN; expected a finite number")
        raise MeasureError(f"{source}: does not match record schema v{version}")
    check(doc, source)


def migrate(doc: dict[str, Any], source: str, migrations: dict[int, Migration] | None = None) -> dict[str, Any]:
    """Bring a record to :data:`SCHEMA_VERSION`, step by step; refuse a newer one."""
    steps = MIGRATIONS if migrations is None else migrations
    target = max([SCHEMA_VERSION, *[n + 1 for n in steps]])
    version = doc.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
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
    """A record file's JSON bytes (a ``.json.gz`` gunzipped, a month archive's member as it was stored): what its
    sha256 and every reader see."""
    if archive.container(path) is not None:
        return archive.read_member(path)
    if archive.is_archive(path):
        names = archive.member_names(path)
        raise MeasureError(
            f"{path}: a month archive of {len(names)} record(s), not one record; name one of them: "
            f"{path / (names[0] if names else '<run-id>.json')}"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read record ({reason(exc)})") from exc
    return decompress(path, data)


def record_name(run_id: str, gzipped: bool = False) -> str:
    return f"{run_id}.json.gz" if gzipped else f"{run_id}.json"


def record_stem(path: Path) -> str:
    """The run id a record file is named by: ``<run-id>.json`` or ``<run-id>.json.gz``."""
    return path.name.removesuffix(".gz").removesuffix(".json")


def stored_bytes(doc: dict[str, Any], path: Path) -> bytes:
    """The bytes a record file holds: the packed document (:mod:`measure.record.pack`), gzipped for ``.json.gz``."""
    data = json_text(pack(doc), path).encode("utf-8")
    return compress(data) if is_gzip(path) else data


def load_record(
    path: Path | str,
    data: bytes | None = None,
    validated: bool = False,
    without: tuple[str, ...] = (),
    arrays: bool = False,
) -> dict[str, Any]:
    """Read, migrate and validate one record file (``data``: its JSON bytes, when the caller has read them).

    ``validated``: these exact bytes passed validation before (the summary cache holds their sha256), so
    the schema walk is skipped; migration and the placement check still run. ``without``: top-level parts
    left out of the document (a run page needs no suite); on validated bytes they are not even unpacked.
    ``arrays``: packed samples stay read-only numpy arrays (see :func:`~measure.record.pack.unpack`): for a
    caller that makes the :class:`~measure.record.model.Record` at once.
    """
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
    if validated and without:
        doc = {k: v for k, v in doc.items() if k not in without}
    spans: list[Unpacked] = []
    doc = migrate(unpack(doc, str(path), None if validated else spans, arrays), str(path))
    if not validated:
        validate(doc, str(path), spans)
    check_place(doc, path)
    return {k: v for k, v in doc.items() if k not in without} if without else doc


def check_place(doc: dict[str, Any], path: Path) -> None:
    """A file named like a run id is in the tree layout: it must be ``<machine-id>/<run-id>.json`` (or
    ``.json.gz``) of its content.

    So a page, gate or calibration never files a record under another machine
    or counts it twice. A record saved under any other name (a download, a
    fixture) is read as it is.
    """
    stem = record_stem(path)
    if not path.name.endswith((".json", ".json.gz")) or not RUN_ID.fullmatch(stem):
        return
    if stem != doc["run_id"]:
        raise MeasureError(f"{path}: field run_id: {doc['run_id']} differs from the file name; expected {stem}")
    folder = archive.machine_folder(path)
    if folder.name != doc["machine_id"]:
        raise MeasureError(
            f"{path}: field machine_id: {doc['machine_id']} differs from its folder {folder.name!r}; "
            f"expected the record at <machine-id>/<run-id>.json"
        )


def load(path: Path | str, data: bytes | None = None) -> Record:
    """One record file as the typed, read-only :class:`~measure.record.model.Record` every reader uses."""
    return from_document(load_record(path, data, arrays=True), str(path))


def write_atomic(path: Path, doc: dict[str, Any], root: Path | None = None) -> None:
    """Write beside the target and rename over it: readers see the old file or the new one, never half.

    ``root``: the tree the file must stay inside (see :mod:`measure.writing`).
    NaN and Infinity are refused rather than written.
    """
    write_json(path, doc, root)


def write_record(path: Path, doc: dict[str, Any], root: Path | None = None) -> Path:
    """Store a record as a run does: packed, gzipped when ``path`` ends in ``.json.gz``; atomic."""
    return write_bytes(path, stored_bytes(doc, path), root)
