"""Record strings reach a terminal inert: control characters shown, never sent."""

from __future__ import annotations

from measure.terminal import clean


def test_escape_sequences_are_shown_not_sent():
    assert clean("a\x1b]0;title\x07b\x1b[2Jc") == "a\\x1b]0;title\\x07b\\x1b[2Jc"


def test_newlines_c1_and_bidi_overrides_are_escaped_and_plain_text_is_kept():
    assert clean("one\ntwo\x9b\u202eé жи ✓") == "one\\x0atwo\\x9b\\u202eé жи ✓"
