"""Shared fixtures: the real bundled demo tiers and golden rows, loaded once per test session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests_support import write_config

from measure import bundled
from measure.engine.load import load_tier
from measure.engine.tier import Tier
from measure.suites.golden import GoldenRows, load_golden


@pytest.fixture(scope="session")
def golden() -> GoldenRows:
    return load_golden(bundled.GOLDEN)


@pytest.fixture(scope="session")
def base_fp32() -> Tier:
    return load_tier(bundled.REFERENCE)


@pytest.fixture(scope="session")
def base_int8() -> Tier:
    return load_tier(bundled.PLAIN)


@pytest.fixture(scope="session")
def small_fp32() -> Tier:
    return load_tier(bundled.SMALL_FP32, label="drafter")


@pytest.fixture(scope="session")
def small_int4() -> Tier:
    return load_tier(bundled.LITE, label="drafter")


@pytest.fixture
def tier_copy(tmp_path: Path):
    """A writable copy of a bundled tier, for tests that break one file of it."""

    def copy(src: Path) -> Path:
        dst = tmp_path / src.name
        shutil.copytree(src, dst)
        return dst

    return copy


@pytest.fixture
def mini_config(tmp_path: Path):
    def make(rows: int = 12, repeats: int = 3, name: str = "suite.toml") -> Path:
        return write_config(tmp_path, rows, repeats, name)

    return make


@pytest.fixture(scope="session")
def both_suites(tmp_path_factory):
    """One real run of both suites over 16 golden rows, shared by the tests that read its record."""
    from measure.record.io import load_record
    from measure.suites.config import load_config
    from measure.suites.runner import run

    folder = tmp_path_factory.mktemp("run")
    config = load_config(write_config(folder, rows=16, repeats=3, workers=2))
    path = run(config, ["wallclock", "framing"], folder / "results", argv=["test"])
    return load_record(path), path
