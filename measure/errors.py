"""The one exception type the CLI turns into a single line and exit code 2."""

from __future__ import annotations


class MeasureError(Exception):
    """Bad input a user can act on: the message names the file, field or line and what was expected."""
