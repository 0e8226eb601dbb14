"""Every file measure writes: kept inside its target tree, never through a symlink, atomic, never NaN.

Records, archives, caches, site sources, calibration files, quantized tiers' ``tier.json`` and the
``--markdown``/``--json`` reports all go through :func:`write_bytes`. Two writers stay apart on purpose:
``measure init`` creates its files with ``open("x")`` (a file that appears meanwhile is never overwritten),
and the onnxruntime-genai leg fills a temporary folder of its own.

A write goes to a temporary file beside its target and is renamed over it, so
a reader (or a crash) sees the old file or the new one, never half of one.
With ``root`` the target is resolved first and must stay inside that tree:
an id such as ``..`` or a symlinked folder cannot carry a write elsewhere. A
target that is itself a symlink is refused, dangling or not. ``OSError`` (a
read-only folder, a file where a folder goes, a full disk) becomes one
:class:`MeasureError` naming the path and the reason.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from measure.errors import MeasureError


def reason(exc: OSError) -> str:
    """The operating system's words for an error, without Python's repr around them."""
    return exc.strerror or type(exc).__name__


def contained(path: Path, root: Path | None) -> Path:
    """``path`` checked as a write target: not a symlink, and inside ``root`` once resolved (when given)."""
    path = Path(path)
    if path.is_symlink():
        raise MeasureError(f"{path}: is a symbolic link; measure never writes through one")
    if root is not None:
        top = Path(root).resolve()
        where = path.parent.resolve() / path.name
        if where != top and top not in where.parents:
            raise MeasureError(f"{path}: resolves to {where}, outside {root}; refusing to write there")
    return path


def make_dirs(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:
        raise MeasureError(f"{folder}: cannot create this folder (a file is in the way)") from exc
    except OSError as exc:
        raise MeasureError(f"{folder}: cannot create this folder ({reason(exc)})") from exc


def write_bytes(
    path: Path,
    data: bytes,
    root: Path | None = None,
    mode: int = 0o644,
    durable: bool = True,
    checked: set[Path] | None = None,
) -> Path:
    """Write ``data`` beside ``path`` and rename it over it; the target stays whole whatever fails.

    ``durable``: flush to the disk before the rename (a record, a page); a disposable cache entry skips it,
    since a cold build writes thousands and a lost one only costs the next build its recomputation.
    ``checked``: folders this writer has already resolved inside ``root`` and made; a cache writing ten thousand
    entries into 256 folders resolves each folder once, not each file twice (the rename replaces a symlinked
    target itself, never what it points to, so the folder is what must stay inside).
    """
    path = Path(path)
    if checked is None or path.parent not in checked:
        contained(path, root)
        make_dirs(path.parent)
        if checked is not None:
            checked.add(path.parent)
    if path.is_dir():
        raise MeasureError(f"{path}: is a folder; expected a file path to write")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise MeasureError(f"{path}: cannot write ({reason(exc)})") from exc
    try:
        os.chmod(tmp, mode)  # mkstemp makes 0600; records and pages are meant to be read and published
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if checked is None:
            contained(path, root)  # checked again just before the rename: nothing swapped in meanwhile
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise MeasureError(f"{path}: cannot write ({reason(exc)})") from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: Path, text: str, root: Path | None = None) -> Path:
    return write_bytes(path, text.encode("utf-8"), root)


def write_report(path: Path, text: str) -> Path:
    """A file the user named on the command line (``--markdown``, ``--json``): its folder must exist, as a shell
    redirection's must; then written as any other file (atomic, never through a symlinked target)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise MeasureError(f"{path}: No such file or directory (the folder {path.parent} does not exist)")
    return write_text(path, text)


def json_text(doc: Any, source: Path | str, indent: int | None = None) -> str:
    """Strict JSON: NaN and Infinity are refused (browsers' JSON.parse rejects them), naming the file."""
    try:
        if indent is None:
            return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
        return json.dumps(doc, ensure_ascii=False, indent=indent, allow_nan=False) + "\n"
    except ValueError as exc:
        raise MeasureError(f"{source}: refusing to write a non-finite number (NaN or Infinity) as JSON") from exc


def write_json(path: Path, doc: Any, root: Path | None = None, indent: int | None = None) -> Path:
    return write_text(path, json_text(doc, path, indent), root)


def finite(value: Any) -> Any:
    """A copy with every NaN or infinite float made ``None`` (JSON null): for derived numbers, never for facts."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def _toml_key(key: str) -> str:
    """A bare key where TOML allows one (``plain``), else a quoted one."""
    return key if key and all(c.isascii() and (c.isalnum() or c in "_-") for c in key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """A TOML value of the few types a suite config holds (json's string escapes are TOML's; an inline table's
    keys bare where TOML allows, else quoted): what ``measure init`` and ``measure explore`` write configs with."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {value!r}")
