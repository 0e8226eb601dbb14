"""The record schema's reference page: every field of a run record from the shipped JSON Schema, to the depth a
reader needs (one of the pages :mod:`measure.tools.reference` writes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from measure.tools.reference_markdown import GENERATED, cell, code


def _resolve(spec: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in spec:
        spec = defs[spec["$ref"].rsplit("/", 1)[-1]]
    return spec


def _kind(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(code(v) for v in spec["enum"])
    if "const" in spec:
        return code(spec["const"])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " or ".join(kind)
    if kind == "array":
        inner = spec.get("items", {})
        return f"array of {_kind(inner) if isinstance(inner, dict) else 'items'}"
    if kind:
        return str(kind)
    if "oneOf" in spec or "anyOf" in spec:
        return " or ".join(_kind(s) for s in spec.get("oneOf", spec.get("anyOf", [])))
    if "$ref" in spec:
        return spec["$ref"].rsplit("/", 1)[-1]
    return "any"


def _fields(path: str, spec: dict[str, Any], defs: dict[str, Any], depth: int) -> Iterator[tuple[str, str, str, str]]:
    """(path, type, required, description) of each property under ``spec``, ``depth`` levels deep."""
    spec = _resolve(spec, defs)
    if spec.get("type") == "array" and isinstance(spec.get("items"), dict):
        spec = _resolve(spec["items"], defs)
        path += "[]"
    required = set(spec.get("required", ()))
    for name, sub in spec.get("properties", {}).items():
        here = f"{path}.{name}" if path else name
        resolved = _resolve(sub, defs)
        yield (
            here,
            _kind(sub),
            "yes" if name in required else "",
            resolved.get("description", sub.get("description", "")),
        )
        if depth > 1:
            yield from _fields(here, sub, defs, depth - 1)


def schema_page() -> str:
    """The record's fields three levels deep, from the shipped schema; the schema file itself is linked."""
    from measure.record.io import SCHEMA_VERSION, schema

    doc = schema()
    defs = doc.get("$defs", {})
    lines = [
        "# Record schema",
        "",
        GENERATED,
        "",
        f"A run record is one JSON document (schema version {SCHEMA_VERSION}; `measure validate` checks files",
        "against it, and every write is validated first). Older versions are migrated when read. "
        + cell(doc.get("description", "")),
        "",
        "| field | type | required | meaning |",
        "|---|---|---|---|",
    ]
    lines += [
        "| " + " | ".join(cell(c) for c in (f"`{p}`", k, r, d)) + " |" for p, k, r, d in _fields("", doc, defs, 3)
    ]
    return "\n".join(lines) + "\n"
