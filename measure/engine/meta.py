"""A tier folder's metadata: Hugging Face's ``config.json`` and ``generation_config.json``, then measure's
``tier.json``, later files overriding earlier ones. Shared by the seq2seq and the decoder-only tiers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from measure.errors import MeasureError

META_FILES = ("config.json", "generation_config.json", "tier.json")


def read_json_object(path: Path, what: str = "") -> dict[str, Any]:
    """One metadata file as a JSON object; unreadable, not UTF-8, not JSON or not an object is a one-line error
    naming the file (``what`` says which object was expected)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from exc
    except UnicodeDecodeError as exc:
        raise MeasureError(f"{path}: not UTF-8 text (byte {exc.start}); expected a JSON object") from exc
    except json.JSONDecodeError as exc:
        raise MeasureError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise MeasureError(f"{path}: expected a JSON object{what}")
    return data


def read_meta(folder: Path) -> dict[str, Any]:
    """Merged metadata, later files overriding earlier ones; a malformed file is a one-line error."""
    meta: dict[str, Any] = {}
    for name in META_FILES:
        path = folder / name
        if path.is_file():
            meta.update(read_json_object(path))
    return meta


def meta_source(folder: Path, key: str) -> Path:
    """The metadata file that set ``key`` (the last one read), for error messages."""
    for name in reversed(META_FILES):
        path = folder / name
        try:
            if path.is_file() and key in json.loads(path.read_text(encoding="utf-8")):
                return path
        except (OSError, ValueError):
            continue
    return folder / "tier.json"


def model_name(folder: Path) -> str | None:
    """The model a tier folder's tier.json says it exports (``model``): tiers naming one model are one model, whichever
    tool exported them. None where tier.json names none; anything but a non-empty string is a one-line error."""
    path = Path(folder) / "tier.json"
    if not path.is_file():
        return None
    model = read_json_object(path).get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise MeasureError(f"{path}: model: expected the name of the model this tier exports, got {model!r}")
    return model
