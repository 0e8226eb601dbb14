"""A dataclass's field docstrings are read from its source, and nothing but them."""

from __future__ import annotations

from dataclasses import make_dataclass

import pytest

from measure.suites.config import WallclockConfig
from measure.tools.reference_markdown import field_docs


def test_field_docs_reads_the_string_under_each_field_and_nothing_else():
    source = make_dataclass("Made", [("a", int, 1)])  # no source file: nothing to read
    with pytest.raises((OSError, TypeError)):
        field_docs(source)
    assert field_docs(WallclockConfig)["repeats"].startswith("Timed passes per case")
    assert "threads" in field_docs(WallclockConfig)
