"""The docs' reference pages are what the code generates now: a verb, a config key or a record field added without
its page fails here, and every key and argument has words to say what it means."""

from __future__ import annotations

import argparse
import shutil
from dataclasses import fields

import pytest
from tests_support import ROOT

from measure.cli import VERBS, build_parser
from measure.engine.options import SessionConfig
from measure.policy import Policy
from measure.suites.config import (
    FramingConfig,
    InstructionsConfig,
    LayoutSpec,
    PairSpec,
    RunConfig,
    TierSpec,
    WallclockConfig,
)
from measure.tools import reference
from measure.tools.reference_markdown import field_docs

DOCS = ROOT / "docs" / "reference"
TABLES = (
    TierSpec,
    PairSpec,
    LayoutSpec,
    SessionConfig,
    WallclockConfig,
    FramingConfig,
    InstructionsConfig,
    RunConfig,
    Policy,
)


def test_the_committed_reference_pages_are_what_the_code_generates():
    assert reference.stale(DOCS) == [], "run: python -m measure.tools.reference docs/reference"


def test_the_check_fails_on_a_stale_page_and_names_it(tmp_path, capsys):
    shutil.copytree(DOCS, tmp_path / "reference")
    page = tmp_path / "reference" / "config.md"
    page.write_text(page.read_text(encoding="utf-8").replace("`repeats`", "`repeat`"), encoding="utf-8")
    assert reference.main([str(tmp_path / "reference"), "--check"]) == 1
    assert str(page) in capsys.readouterr().out
    assert reference.main([str(tmp_path / "reference")]) == 0  # regenerated
    assert reference.main([str(tmp_path / "reference"), "--check"]) == 0


def test_every_verb_and_every_argument_is_on_the_cli_page():
    page = reference.cli_page()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for verb in VERBS:
        assert f"## {verb} {{: #{verb} }}" in page
        for action in sub.choices[verb]._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"measure {verb} {action.option_strings or action.dest}: no help text"
            for option in action.option_strings:
                assert f"`{option}`" in page, (verb, option)


@pytest.mark.parametrize("cls", TABLES, ids=lambda c: c.__name__)
def test_every_config_key_is_documented_with_its_meaning(cls):
    docs = field_docs(cls)
    page = reference.config_page()
    for f in fields(cls):
        assert docs.get(f.name), f"{cls.__name__}.{f.name}: no docstring, so no meaning on the config page"
        listed = f"| `{f.name}` |" in page
        assert listed != bool(f.metadata.get("derived")), f.name  # a derived field (a tier's kind) is no key


def test_every_table_the_config_loader_reads_has_its_section_on_the_config_page():
    from measure.suites import config

    page = reference.config_page()
    for name in config.ARRAYS:
        assert f"## [[{name}]] {{: #{name} }}" in page, name
    for name in config.TABLES:
        assert f"## [{name}] {{: #{name} }}" in page, name
    assert set(config.TOP) == {"golden", *config.ARRAYS, *config.TABLES}
