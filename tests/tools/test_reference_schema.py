"""The record schema's reference page lists the shipped schema's fields."""

from __future__ import annotations

from measure.tools.reference_schema import schema_page


def test_the_schema_page_lists_the_top_level_fields_of_the_shipped_schema():
    from measure.record.io import schema

    page = schema_page()
    for name in schema()["properties"]:
        assert f"| `{name}` |" in page, name
    assert "| `fidelity.tiers[].greedy` |" in page or "| `fidelity.tiers[].tier` |" in page
