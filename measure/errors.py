"""The one exception type the CLI turns into a single line and exit code 2."""

from __future__ import annotations


class MeasureError(Exception):
    """Bad input a user can act on: the message names the file, field or line and what was expected; ``docs``,
    where a page of the documentation explains the fix, is that page (``guide/your-tiers.md#golden-rows``), which
    the CLI names after the message (an error raised ``from`` this one keeps it)."""

    def __init__(self, message: str, docs: str | None = None) -> None:
        super().__init__(message)
        self.docs = docs


def docs_of(error: BaseException) -> str | None:
    """The docs page of ``error`` or of the error it was raised from, nearest first."""
    seen: BaseException | None = error
    while seen is not None:
        docs = getattr(seen, "docs", None)
        if docs:
            return docs
        seen = seen.__cause__
    return None


class SettingError(MeasureError):
    """A bad value of one named setting, found where the file it came from is not known (a session is built,
    a results tree is read): whoever read that file names it with :meth:`located`."""

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting}: {problem}")
        self.setting = setting
        self.problem = problem

    def located(self, where: str) -> MeasureError:
        """The same error naming the file (and the section) the setting was read from, e.g. ``suite.toml: ``."""
        return MeasureError(f"{where}{self.setting}: {self.problem}", docs=self.docs)
