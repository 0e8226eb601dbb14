"""How a record section's class names its JSON keys: by its dataclass fields, so the schema can be checked against it.

A section class (:class:`~measure.record.model.fidelity.Fidelity`, :class:`~measure.record.model.plan.RunPlan`, ...)
holds its fields, reads them (``from_dict``) and writes them (``to_dict`` and the builders a run fills in place) in
one module. Its fields are its keys, in the record's order, with three marks for where they differ:
:func:`renamed` (a key Python cannot spell, ``self``), :func:`filed_under` (the key of the object the entry sits
in, not one of its own) and :func:`derived` (computed from other fields, never stored). A field with a default is
one older records may lack, so the schema leaves it out of ``required``; one without is a required key.
``tests/record/model/test_section_schema.py`` holds every section class to its part of the JSON Schema this way.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, field, fields
from typing import Any

KEY = "record_key"
FILED_UNDER = "filed_under"
DERIVED = "derived"
FILED = {FILED_UNDER: True}
"""``field(metadata=FILED)``: what :func:`filed_under` marks, spelled so mypy's dataclass check sees a field
without a default (it cannot look into a helper)."""


def renamed(key: str, **kw: Any) -> Any:
    """A field stored under another key (``key``), e.g. one a Python name cannot be."""
    return field(metadata={KEY: key}, **kw)


def filed_under(**kw: Any) -> Any:
    """A field that holds the key its entry is filed under in the enclosing object (a tier's name), not a key."""
    return field(metadata={FILED_UNDER: True}, **kw)


def derived(**kw: Any) -> Any:
    """A field computed from the stored ones when read, never written."""
    return field(metadata={DERIVED: True}, **kw)


def _stored(f: Field[Any]) -> bool:
    return not (f.metadata.get(FILED_UNDER) or f.metadata.get(DERIVED))


def record_keys(cls: type) -> tuple[str, ...]:
    """The keys a section class's JSON object has, in field order."""
    return tuple(f.metadata.get(KEY, f.name) for f in fields(cls) if _stored(f))


def required_keys(cls: type) -> tuple[str, ...]:
    """The keys every record has: the fields without a default."""
    return tuple(
        f.metadata.get(KEY, f.name)
        for f in fields(cls)
        if _stored(f) and f.default is MISSING and f.default_factory is MISSING
    )
