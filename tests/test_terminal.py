"""Record strings reach a terminal inert: control characters shown, never sent."""

from __future__ import annotations

import ast
import json
import math

import pytest
from tests_support import ROOT

from measure.errors import MeasureError
from measure.terminal import clean, strict_json


def test_escape_sequences_are_shown_not_sent():
    assert clean("a\x1b]0;title\x07b\x1b[2Jc") == "a\\x1b]0;title\\x07b\\x1b[2Jc"


def test_newlines_c1_and_bidi_overrides_are_escaped_and_plain_text_is_kept():
    assert clean("one\ntwo\x9b\u202eé жи ✓") == "one\\x0atwo\\x9b\\u202eé жи ✓"


def test_strict_json_prints_finite_values_and_refuses_nan_and_infinity_naming_where():
    assert json.loads(strict_json({"a": [1, 2.5, None]}, indent=1)) == {"a": [1, 2.5, None]}
    for bad, where in (
        ({"kld_mean": {"value": math.nan}}, "kld_mean.value = nan"),
        ({"x": [1.0, -math.inf]}, "x[1] = -inf"),
        (math.inf, "the value = inf"),
    ):
        with pytest.raises(MeasureError) as err:
            strict_json(bad)
        assert str(err.value).startswith(f"--json: {where} is not a finite number"), str(err.value)


def _verbs_with_json_flag() -> list[str]:
    import argparse

    from measure.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sorted(v for v, p in sub.choices.items() if any("--json" in a.option_strings for a in p._actions))


@pytest.mark.parametrize("verb", _verbs_with_json_flag())
def test_every_verb_with_json_writes_it_strictly(verb):
    """No ``json.dumps`` (which writes NaN and Infinity, not JSON) in a verb that has ``--json``: what it prints
    goes through :func:`strict_json`, what it writes through ``measure.writing.json_text``."""
    source = (ROOT / "measure" / "commands" / f"{verb}.py").read_text(encoding="utf-8")
    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("dumps", "dump")
    ]
    assert not calls, f"measure/commands/{verb}.py: line {calls[0].lineno}: json.dumps; use strict_json"


def test_the_verbs_with_json_are_found():
    assert {"changes", "env", "fidelity", "info", "instructions"} <= set(_verbs_with_json_flag())
