"""The one exception type the CLI turns into a single line and exit code 2."""

from __future__ import annotations


class MeasureError(Exception):
    """Bad input a user can act on: the message names the file, field or line and what was expected."""


class SettingError(MeasureError):
    """A bad value of one named setting, found where the file it came from is not known (a session is built,
    a results tree is read): whoever read that file names it with :meth:`located`."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting}: {problem}")
        self.setting = setting
        self.problem = problem

    def located(self, where: str) -> MeasureError:
        """The same error naming the file (and the section) the setting was read from, e.g. ``suite.toml: ``."""
        return MeasureError(f"{where}{self.setting}: {self.problem}")
