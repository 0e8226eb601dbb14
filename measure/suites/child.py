"""One JSON request answered by a module run in a fresh Python process (its memory and threads apart from the
run's): the bandwidth probe, the kernels timed alone and the profile's workers share it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import measure
from measure.errors import MeasureError


def ask_child(module: str, request: dict[str, Any], what: str, timeout_s: float) -> Any:
    """``python -m module`` with ``request`` on stdin, its JSON answer from stdout; a failure is one line."""
    env = dict(os.environ)
    root = str(Path(measure.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        done = subprocess.run(
            [sys.executable, "-m", module],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise MeasureError(f"{what}: no answer in {exc.timeout}s") from exc
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise MeasureError(f"{what} failed: {last}")
    return json.loads(done.stdout)
