"""The machine and software a run measured on, and a stable machine id derived from them.

The id hashes what makes timings comparable (CPU model, architecture, cores,
memory, OS kind), not the hostname, so the same runner type groups together
across runs and two different CPUs never do.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for key in ("model name", "Hardware", "Processor", "cpu model"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, flags=re.M)
        if m:
            return m.group(1).strip()
    if sys.platform == "darwin":
        try:
            return subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or "unknown"


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _git(folder: Path) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except Exception:  # an optional module missing or broken: record its absence
        return None


def machine_facts() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "os": platform.system(),
        "os_release": platform.release(),
        "platform": platform.platform(),
    }


def machine_id(facts: dict[str, Any]) -> str:
    """``<arch>-<cores>c-<hash>``: readable, and stable for one kind of machine."""
    mem_gib = round((facts.get("memory_bytes") or 0) / 2**30)
    key = "|".join(str(x) for x in (facts["cpu"], facts["arch"], facts["cores"], mem_gib, facts["os"]))
    digest = hashlib.sha256(key.encode()).hexdigest()[:10]
    return f"{facts['os'].lower()}-{facts['arch']}-{facts['cores']}c-{digest}"


def environment(project: Path | None = None, argv: list[str] | None = None) -> dict[str, Any]:
    """Everything a reader needs to know where a number came from."""
    import numpy
    import onnxruntime

    facts = machine_facts()
    return {
        "machine": facts,
        "machine_id": machine_id(facts),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "onnxruntime": onnxruntime.__version__,
        "onnxruntime_providers": list(onnxruntime.get_available_providers()),
        "numpy": numpy.__version__,
        "tokenizers": _version("tokenizers"),
        "onnx": _version("onnx"),
        "measure": _version("measure"),
        "git": _git(project or Path.cwd()),
        "command": list(argv if argv is not None else sys.argv),
    }
