"""``python -m measure.tools.quantize_worker``: one recipe quantized in a process of its own (``measure explore``).

onnxruntime's quantizers keep much of what they allocate for the life of the process: on SmolLM2-135M one
quantization peaks at 1.2 to 1.8 GB, and seven in one process reached 4.3 GB, above the run that follows them.
A process per recipe gives it all back. The request (stdin) names the source, the output folder, the recipe's
fields and the calibration rows; the answer (stdout) is ``{"error": null}`` or the quantizer's one line.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.tools.recipes import Keep, Recipe

TIMEOUT_S = 3600.0
"""A quantization of a large model takes minutes; none takes an hour."""


def request(src: Path, dst: Path, recipe: Recipe, calibration: Path | None) -> dict[str, Any]:
    return {
        "src": str(src),
        "dst": str(dst),
        "recipe": asdict(recipe),
        "calibration": None if calibration is None else str(calibration),
    }


def recipe_of(fields: dict[str, Any]) -> Recipe:
    """The recipe :func:`request` sent: JSON turned its tuples into lists."""
    keep: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.pop("keep").items()}
    return Recipe(**fields, keep=Keep(**keep))


def quantize_apart(src: Path, dst: Path, recipe: Recipe, calibration: Path | None) -> None:
    """:func:`~measure.tools.quantize.quantize_recipe` in a fresh process; its refusal is the same one line."""
    from measure.suites.child import ask_child

    answer = ask_child(__name__, request(src, dst, recipe, calibration), f"quantizing {dst}", TIMEOUT_S)
    if answer.get("error") is not None:
        raise MeasureError(str(answer["error"]))


def main() -> None:
    from measure.tools.quantize import quantize_recipe

    asked = json.loads(sys.stdin.read())
    answer = os.fdopen(os.dup(1), "w")  # the answer's own stdout: whatever the quantizers print goes to stderr
    os.dup2(2, 1)
    try:
        quantize_recipe(
            Path(asked["src"]), Path(asked["dst"]), recipe_of(asked["recipe"]), calibration=asked["calibration"]
        )
    except MeasureError as exc:
        answer.write(json.dumps({"error": str(exc)}))
    else:
        answer.write(json.dumps({"error": None}))
    answer.close()


if __name__ == "__main__":
    main()
