"""Join the shard records of one split ``measure explore`` (``--shard I/N``) into one run record.

Every shard timed its share of the grid beside its own run of the baseline recipe, on a machine of one
runner type (one machine id). A ratio to plain pairs repeats interleaved in one process, so a shard's
samples pair only with its own baseline: the joined record keeps the first shard's run as its spine (its
plain tier, references and plan), adds every later shard's candidates with their tiers, fidelity and
wall-clock cases, and each later shard's baseline as a tier of its own (``<plain>.shard<I>``) that
``explore.joined.anchors`` names as the anchor of that shard's tiers. Nothing is paired across machines.

What one record cannot join honestly is cut to what it can: each shard's budget planned its own sample of
golden rows, so the wall-clock cases and the framing legs keep the rows every shard measured (a seeded
shuffle's prefix: the smallest shard's rows); the fidelity pass scored every row in every shard, whole.
A later shard's runs of the references are left out (the first shard's are the record's).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.record.checks import CASE_COUNTS, CASE_SECONDS, LEG_PER_ROW
from measure.record.io import SCHEMA_VERSION, load_record, read_bytes
from measure.record.model.explore import joined_part

Doc = dict[str, Any]

SAME = (
    (("schema_version",), "schema version"),
    (("tool", "version"), "measure version"),
    (("machine_id",), "machine id"),
    (("explore", "shard", "grid_sha256"), "grid (its recipes' hash)"),
    (("explore", "shard", "count"), "shard count"),
    (("golden", "sha256"), "golden rows"),
    (("explore", "screen_rows"), "screening rows"),
    (("explore", "role"), "screening role"),
)
"""What every shard of one search shares, and the word a refusal names it by."""


def _get(doc: Doc, keys: tuple[str, ...]) -> Any:
    value: Any = doc
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def load_shards(paths: list[Path]) -> list[Doc]:
    """The shard records of one search, in shard order; one line naming the file for anything else: a record
    that is no shard, a shard of another grid, machine, measure or schema version, a shard twice or missing."""
    if not paths:
        raise MeasureError("merge --shards: no shard record given")
    docs: list[tuple[Path, Doc]] = []
    for path in paths:
        doc = load_record(path)
        doc["schema_version"] = _stored_version(path)  # as written: loading migrated it to the newest
        if _get(doc, ("explore", "shard")) is None:
            raise MeasureError(
                f"{path}: field explore/shard: missing; expected a record of measure explore --shard I/N"
            )
        docs.append((path, doc))
    first_path, first = docs[0]
    for path, doc in docs[1:]:
        for keys, what in SAME:
            if _get(doc, keys) != _get(first, keys):
                raise MeasureError(
                    f"{path}: field {'/'.join(keys)}: {what} {_get(doc, keys)!r} differs from {first_path}'s "
                    f"{_get(first, keys)!r}; expected the shards of one search on one runner type"
                )
    seen: dict[int, Path] = {}
    for path, doc in docs:
        index = doc["explore"]["shard"]["index"]
        if index in seen:
            raise MeasureError(f"{path}: shard {index} again (also {seen[index]}); expected each shard once")
        seen[index] = path
    count = first["explore"]["shard"]["count"]
    missing = [i for i in range(1, count + 1) if i not in seen]
    if missing:
        raise MeasureError(
            f"{first_path}: shard(s) {', '.join(map(str, missing))} of {count} missing; expected one record per "
            "shard (a failed matrix job leaves its shard out: run it again)"
        )
    for _, doc in docs:
        doc["schema_version"] = SCHEMA_VERSION
    return [doc for _, doc in sorted(docs, key=lambda pd: pd[1]["explore"]["shard"]["index"])]


def _stored_version(path: Path) -> Any:
    import orjson

    return orjson.loads(read_bytes(path)).get("schema_version")


def _rows(doc: Doc, suite: str) -> list[int]:
    plan = doc.get("plan")
    return list(plan[f"{suite}_rows"]) if plan else list(range(doc["golden"]["rows"]))


def _common(docs: list[Doc], suite: str) -> list[int]:
    rows = [set(_rows(d, suite)) for d in docs]
    return [r for r in _rows(docs[0], suite) if all(r in s for s in rows)]


def _subset(values: list[Any], at: list[int]) -> list[Any]:
    return [values[i] for i in at]


def _case_on(case: Doc, at: list[int]) -> Doc:
    """A wall-clock case on the rows at positions ``at`` of its own sample."""
    out = dict(case)
    for key in CASE_SECONDS:
        if key in out:
            out[key] = [_subset(rep, at) for rep in out[key]]
    for key in (*CASE_COUNTS, "tokens"):
        if key in out:
            out[key] = _subset(out[key], at)
    return out


def _leg_tier_on(tier: Doc, at: list[int]) -> Doc:
    out = dict(tier)
    for key in LEG_PER_ROW:
        if key in out:
            out[key] = _subset(out[key], at)
    if out.get("blocks"):
        out["blocks"] = [b | {"first_divergent_step": _subset(b["first_divergent_step"], at)} for b in out["blocks"]]
    if "cer" in (out.get("quality") or {}):
        out["quality"] = out["quality"] | {"cer": _subset(out["quality"]["cer"], at)}
    return out


def _positions(doc: Doc, suite: str, keep: list[int]) -> list[int]:
    own = _rows(doc, suite)
    return [own.index(r) for r in keep]


def _shard_tiers(doc: Doc, spine: Doc) -> Iterator[str]:
    """A later shard's tiers the join adds: its share of the candidates (not the references, not a baseline)."""
    for c in doc["explore"]["candidates"]:
        if not c.get("baseline") and c["tier"] in doc["tiers"] and c["tier"] not in spine["tiers"]:
            yield c["tier"]


def join(docs: list[Doc]) -> Doc:
    """One record of the shards (:func:`load_shards`' order): see the module's docstring for what joins how."""
    spine = copy.deepcopy(docs[0])
    plain = next(name for name, t in spine["tiers"].items() if t["role"] == "plain")
    wall_rows, framing_rows = _common(docs, "wallclock"), _common(docs, "framing")
    _cut(spine, spine, wall_rows, framing_rows)
    anchors: dict[str, str] = {}
    for i, doc in enumerate(docs[1:], start=2):
        doc = copy.deepcopy(doc)
        _cut(doc, doc, wall_rows, framing_rows)
        anchor = f"{plain}.shard{i}"
        added = [*_shard_tiers(doc, spine)]
        configs = {t["name"]: t for t in doc["config"]["tiers"]}
        for name in added:
            spine["tiers"][name] = doc["tiers"][name]
            spine["config"]["tiers"].append(configs[name])
            anchors[name] = anchor
        if plain in doc["tiers"]:
            spine["tiers"][anchor] = doc["tiers"][plain] | {"role": "verifier"}
            spine["config"]["tiers"].append(configs[plain] | {"name": anchor, "role": "verifier"})
        _join_wallclock(spine, doc, added, plain, anchor)
        _join_framing(spine, doc, added)
        _join_fidelity(spine, doc, added)
        spine["explore"]["candidates"] += [c for c in doc["explore"]["candidates"] if not c.get("baseline")]
    shard = spine["explore"].pop("shard")
    runs = [d["run_id"] for d in docs]
    spine["explore"]["joined"] = joined_part(shard["count"], shard["grid_sha256"], runs, anchors)
    spine["run_id"] = f"{runs[0].split('-')[0]}-{hashlib.sha256(' '.join(runs).encode()).hexdigest()[:6]}"
    spine["started_at"] = min(d["started_at"] for d in docs)
    ends = [d["finished_at"] for d in docs]
    spine["finished_at"] = None if None in ends else max(ends)
    spine["complete"] = all(d["complete"] for d in docs)
    wc = spine.get("wallclock")
    if wc:
        wc["repeats"] = min(d["wallclock"]["repeats"] for d in docs)
        wc["repeats_done"] = min(d["wallclock"]["repeats_done"] for d in docs)
    return spine


def _cut(doc: Doc, target: Doc, wall_rows: list[int], framing_rows: list[int]) -> None:
    """``doc``'s wall-clock cases and framing legs on the common rows; its plan says so."""
    wat, fat = _positions(doc, "wallclock", wall_rows), _positions(doc, "framing", framing_rows)
    cases = (target.get("wallclock") or {}).get("cases") or {}
    for name in list(cases):
        cases[name] = _case_on(cases[name], wat)
    for leg in (target.get("framing") or {}).get("legs") or []:
        leg["tiers"] = [_leg_tier_on(t, fat) for t in leg["tiers"]]
    plan = target.get("plan")
    if plan:
        plan["wallclock_rows"], plan["framing_rows"] = list(wall_rows), list(framing_rows)
        shape = plan["shape"]
        shape["wallclock_rows"], shape["framing_rows"] = len(wall_rows), len(framing_rows)
        shape["prefill_rows"] = min(shape.get("prefill_rows", 0), len(framing_rows))


def _join_wallclock(spine: Doc, doc: Doc, added: list[str], plain: str, anchor: str) -> None:
    ours, theirs = (spine.get("wallclock") or {}).get("cases"), (doc.get("wallclock") or {}).get("cases") or {}
    if ours is None:
        return
    for name, case in theirs.items():
        if case.get("tier") in added:
            ours[name] = case
        elif case.get("tier") == plain and case["kind"] == "greedy":
            ours[anchor] = case | {"tier": anchor}


def _join_framing(spine: Doc, doc: Doc, added: list[str]) -> None:
    ours = (spine.get("framing") or {}).get("legs")
    if not ours:
        return
    theirs = (doc.get("framing") or {}).get("legs") or []
    for leg, other in zip(ours, theirs, strict=False):
        leg["tiers"] += [t for t in other["tiers"] if t["tier"] in added]


def _join_fidelity(spine: Doc, doc: Doc, added: list[str]) -> None:
    ours = spine.get("fidelity")
    if not ours:
        return
    ours["tiers"] += [t for t in (doc.get("fidelity") or {}).get("tiers") or [] if t["tier"] in added]


def join_files(paths: list[Path]) -> Doc:
    """:func:`join` of the shard records at ``paths``, validated as any record is."""
    from measure.record.io import validate

    doc = join(load_shards(paths))
    validate(doc, f"the join of {', '.join(map(str, paths))}")
    return doc
