"""A record on disk while a run fills it in: :class:`RecordWriter`, whose every save leaves a valid file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.record.io import now_iso, record_name, stored_bytes, validate
from measure.writing import json_text, write_bytes


class RecordWriter:
    """Owns one record on disk while a run fills it in; every ``save`` leaves a valid file.

    Each save validates first (a few milliseconds on a full record): a run whose record would break the schema
    or its relations (a bug, or a fact the schema cannot hold) keeps the last valid record on disk, and
    :meth:`finish` marks that one incomplete with the reason, so no verb over the results tree ever meets an
    invalid file that ``measure run`` wrote.
    """

    def __init__(self, results: Path, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.results = results
        self.path = results / doc["machine_id"] / record_name(doc["run_id"])
        self.write_error: str | None = None
        """The first failed save (a full disk): the file keeps the last record that could be written."""
        self.invalid: str | None = None
        """Why the record in memory stopped being valid: the file keeps the last valid one."""
        self._saved = ""
        """The JSON of the last save that reached the disk."""
        self.save()

    def save(self) -> None:
        """Validate, then rewrite the file; an invalid record is not written (the last valid one stays)."""
        try:
            validate(self.doc, str(self.path))
        except MeasureError as exc:
            self.invalid = self.invalid or str(exc)
            raise
        data = stored_bytes(self.doc, self.path)
        try:
            write_bytes(self.path, data, root=self.results)
        except MeasureError as exc:
            self.write_error = self.write_error or str(exc)
            raise
        self._saved = json_text(self.doc, self.path)

    def finish(self, error: str | None = None) -> Path:
        """Mark the record finished; with ``error`` (or after a failed save) incomplete, saying why.

        After a failed save (a full disk, an invalid record) the record finished is the last one that reached
        the disk, plus the error: the smallest write that says why. A complete record that fails the checks
        only a complete one must pass is finished incomplete, with the check's message. Should even that
        fail, the file keeps the last record written, still valid, marked unfinished.
        """
        lost = self.write_error or self.invalid
        if lost is not None and self._saved:
            self.doc = json.loads(self._saved)
            error = f"{error}; the record holds what was saved before" if error and error != lost else lost
        self._close(error)
        try:
            self.save()
        except MeasureError as exc:
            if error is not None or self.write_error is not None or not self._saved:
                raise
            self.doc = json.loads(self._saved)
            self._close(f"{exc}; the record holds what was saved before")
            self.save()
        return self.path

    def _close(self, error: str | None) -> None:
        self.doc["finished_at"] = now_iso()
        self.doc["complete"] = error is None
        self.doc.pop("error", None)
        if error is not None:
            self.doc["error"] = error
