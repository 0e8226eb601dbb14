"""Golden rows: the fixed, versioned (source, expected output) pairs every measurement decodes.

A JSONL file, one ``{"input": ..., "output": ...}`` object a line. Its sha256
and row count go into every record, so two runs are comparable only when
they decoded the same rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from measure.errors import MeasureError


@dataclass(frozen=True)
class GoldenRow:
    line: int
    input: str
    output: str
    truncated: bool = False
    """The output was cut at a token limit (a reference's continuation that did not end): the fidelity pass
    scores no end-of-sequence after it, which the reference itself would not have put there."""


@dataclass(frozen=True)
class GoldenRows:
    path: Path
    sha256: str
    rows: tuple[GoldenRow, ...]

    def __len__(self) -> int:
        return len(self.rows)


GOLDEN_DOCS = "guide/your-tiers.md#golden-rows"
"""The page that says what a golden row holds."""


def load_golden(path: Path | str) -> GoldenRows:
    """Read and check a golden rows file; the error names the file and the line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read golden rows ({exc.strerror})", docs=GOLDEN_DOCS) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MeasureError(
            f"{path}: golden rows must be UTF-8 ({exc.reason} at byte {exc.start})", docs=GOLDEN_DOCS
        ) from exc
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MeasureError(
                f"{path}:{number}: not valid JSON ({exc.msg} at column {exc.colno})", docs=GOLDEN_DOCS
            ) from exc
        if not isinstance(obj, dict):
            raise MeasureError(f'{path}:{number}: expected a JSON object with "input" and "output"', docs=GOLDEN_DOCS)
        for key in ("input", "output"):
            if not isinstance(obj.get(key), str):
                raise MeasureError(
                    f"{path}:{number}: field {key!r}: expected a string, got {obj.get(key)!r}", docs=GOLDEN_DOCS
                )
        if not obj["input"].strip():
            raise MeasureError(f"{path}:{number}: field 'input': expected non-empty source text", docs=GOLDEN_DOCS)
        truncated = obj.get("truncated", False)
        if not isinstance(truncated, bool):
            raise MeasureError(
                f"{path}:{number}: field 'truncated': expected true or false, got {truncated!r}", docs=GOLDEN_DOCS
            )
        rows.append(GoldenRow(line=number, input=obj["input"], output=obj["output"], truncated=truncated))
    if not rows:
        raise MeasureError(f"{path}: no golden rows; expected one JSON object a line", docs=GOLDEN_DOCS)
    return GoldenRows(path=path, sha256=hashlib.sha256(data).hexdigest(), rows=tuple(rows))


def head(golden: GoldenRows, rows: int) -> GoldenRows:
    """The first ``rows`` rows, hashed as a file holding exactly their lines would be.

    So a run over a subset records a sha256 that says which rows it decoded, and
    two runs over the same subset of one file are comparable.
    """
    if rows < 1:
        raise MeasureError(f"{golden.path}: rows: expected at least 1, got {rows}", docs=GOLDEN_DOCS)
    if rows >= len(golden):
        return golden
    kept = golden.rows[:rows]
    lines = golden.path.read_bytes().decode("utf-8").splitlines(keepends=True)[: kept[-1].line]  # as numbered
    return GoldenRows(path=golden.path, sha256=hashlib.sha256("".join(lines).encode()).hexdigest(), rows=kept)


def edit_distance(a: Sequence, b: Sequence) -> int:
    """Levenshtein distance (insert, delete, substitute), O(len(a) * len(b))."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def char_error_rate(hypothesis: str, reference: str) -> float:
    """A decode's distance from its golden output, per expected character (the framing suite's ``cer``)."""
    return edit_distance(hypothesis, reference) / max(1, len(reference))


def pick(golden: GoldenRows, indices: Sequence[int]) -> GoldenRows:
    """Some rows (0-based, in order) of the file: a budgeted run's sample, stated in its record's plan; the
    sha256 stays the file's, whose rows the sample is drawn from."""
    return GoldenRows(path=golden.path, sha256=golden.sha256, rows=tuple(golden.rows[i] for i in indices))
