"""A machine's recorded calibration, ``<results>/<machine-id>/calibration.json``: read into a
:class:`~measure.analysis.calibration.Calibration`, or written from one (``measure calibrate --write``)."""

from __future__ import annotations

from pathlib import Path

from measure.analysis.calibration import Calibration, from_dict
from measure.errors import MeasureError
from measure.record.tree import read_calibration, write_calibration


def write(results: Path, cal: Calibration) -> Path:
    """The calibration, written where the machine's records are; a pull request's gate and the site read it."""
    return write_calibration(results, cal.machine_id, cal.to_dict())


def load_calibration(results: Path, machine_id: str) -> Calibration | None:
    """The recorded calibration of one machine in a results tree, or None when none was written."""
    found = read_calibration(results, machine_id)
    if found is None:
        return None
    path, doc = found
    cal = from_dict(doc, path)
    if cal.machine_id != machine_id:
        raise MeasureError(f"{path}: field 'machine_id': expected {machine_id} (its folder), got {cal.machine_id}")
    return cal
