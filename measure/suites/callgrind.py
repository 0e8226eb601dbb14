"""Instructions per output token under callgrind: a deterministic metric for a tier's regressions over time.

Wall and CPU time on a shared runner vary by 10-30% between runs; the number of
instructions a decode executes does not (three runs of 16 rows of base-int8
agreed to 1 part in 200,000). :func:`count` runs one tier's decodes in a child
process under ``valgrind --tool=callgrind --instr-atstart=no``: nothing is
counted while Python starts, imports onnxruntime, loads the sessions and
decodes the rows once to warm up; the child switches counting on with a callgrind
client request just before the golden rows and off just after them, so the
count is the decode region alone.

The client requests come from pytest-codspeed's compiled module
(``pytest_codspeed.instruments.hooks.dist_instrument_hooks``): an MIT-licensed
wheel for every platform CI uses, maintained by a company whose product rests
on it, and the only kept library that exposes ``CALLGRIND_START/STOP`` to
Python; a C extension of our own would need a compiler on every install.
It is an optional extra (``pip install 'measure[instructions]'``).

A proxy, never a comparison between tiers: valgrind emulates a CPU without
the wider SIMD paths onnxruntime picks natively, so the kernels counted are
not the ones a native run executes. Compare one tier's count with the same
tier's count on the same machine and onnxruntime build, over time.

Not exact: onnxruntime's ``session.run`` keeps telemetry on a wall-clock timer (every few seconds, whatever
``ORT_DISABLE_TELEMETRY`` says), and each time it fires inside the region its small allocation moves the
allocator's later work, a few hundred to 8,000 instructions; a loaded machine stretches the region over more
of them (one row of base-int8: runs within 0.013% beside two busy loops, 0.081% at five times the cores in
load). Where the caller runs from and what its shell holds are kept out: the child runs ``python -P`` in
:data:`CHILD_FOLDER` with :func:`child_environment`.

In ``measure run`` this is the stage after the timed suites: each tier is counted
``runs`` times, each run a fresh child process under valgrind (:func:`count`), so the spread between runs is
the spread between two separate measurements, the one compare must allow
for. The record is saved after every run: a crash loses at most one count.
"""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.record.model.instructions import instructions_part, instructions_tier_part
from measure.suites import Progress, Save, no_progress
from measure.suites.config import SuiteConfig
from measure.suites.golden import GoldenRows

HOOKS = "pytest_codspeed.instruments.hooks.dist_instrument_hooks"


@dataclass(frozen=True)
class Count:
    """Instructions (callgrind's Ir) executed by one tier's greedy decodes of some golden rows."""

    tier: str
    instructions: int
    tokens: int
    rows: int

    @property
    def per_token(self) -> float:
        return self.instructions / max(1, self.tokens)

    def to_dict(self) -> dict[str, Any]:
        return {"tier": self.tier, "instructions": self.instructions, "tokens": self.tokens, "rows": self.rows}


def hooks() -> Any:
    """The callgrind client requests, or an error that names the extra to install."""
    import importlib

    try:
        return importlib.import_module(HOOKS)
    except ImportError as exc:
        raise MeasureError(
            "instruction counts need callgrind client requests from pytest-codspeed: "
            "pip install 'measure[instructions]'"
        ) from exc


def callgrind_total(text: str, source: str) -> int:
    """The Ir total of a callgrind output file (its ``totals:`` line, else ``summary:``)."""
    for key in ("totals", "summary"):
        found = re.search(rf"^{key}:\s*(\d+)", text, re.MULTILINE)
        if found:
            return int(found.group(1))
    raise MeasureError(f"{source}: no 'totals:' or 'summary:' line (not a callgrind output file)")


def decode_region(
    tier_dir: Path, texts: list[str], session: dict[str, Any] | None = None, prompt: str | None = None
) -> dict[str, int]:
    """Run in the child under valgrind: load, warm up, then count only the greedy decodes of ``texts``
    (``prompt``: a decoder-only tier's template from the suite config)."""
    from measure.engine.load import load_tier
    from measure.engine.options import SessionConfig

    h = hooks()
    options = SessionConfig(**{**session, "providers": tuple(session["providers"])}) if session else None
    tier = load_tier(tier_dir, options, prompt=prompt)
    for text in texts:  # warm-up pass: first-call allocations and per-shape set-up are not the steady cost
        tier.greedy(text)
    # Every run enters the region with the same empty young generations, so the collector runs at the same points
    # inside it (its cost still counted); otherwise what start-up left behind (a stale .pyc recompiled, say)
    # moves a collection into or out of the region.
    gc.collect()
    h.callgrind_start_instrumentation()
    decoded = [tier.greedy(t) for t in texts]
    h.callgrind_stop_instrumentation()
    return {"tokens": sum(len(d.tokens) for d in decoded), "rows": len(decoded)}


def valgrind_binary(valgrind: str | None = None) -> str:
    """The valgrind executable (a name on PATH or a path), or an error that says how to install it."""
    binary = shutil.which(valgrind or "valgrind")
    if binary is None:
        raise MeasureError(
            f"valgrind not found ({valgrind or 'valgrind'} on PATH): install it (apt-get install valgrind) "
            "or name it with --valgrind PATH / instructions.valgrind"
        )
    return binary


def valgrind_version(binary: str) -> str:
    """``valgrind --version`` (e.g. valgrind-3.19.0): counts are compared only between the same version."""
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    version = done.stdout.strip()
    if done.returncode != 0 or not version:
        raise MeasureError(f"{binary}: 'valgrind --version' failed (exit {done.returncode})")
    return version


CHILD_FOLDER = "/"
"""Where the child runs, whatever folder the caller was in: valgrind records its starting folder in the
address space it shares with the decode, and the count moved with it (by up to 0.5% between two folders)."""
KEPT_ENVIRONMENT = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE")
KEPT_PREFIXES = ("VALGRIND_", "ORT_", "OMP_")
"""What the child keeps of the caller's environment: where to find Python, its packages, libraries and valgrind's
files, the locale, and the runtimes' knobs (part of what is measured)."""


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of the child under valgrind: what it needs of ``environ`` and the same everything else.

    The rest (PWD, SHLVL, TERM, a test's name...) changes from shell to shell, and each byte of it is copied
    in before the region, moving the allocations after it: 5,000 bytes more moved a one-row count by 0.15%.
    ``PYTHONPATH``'s folders are made absolute, since the child runs in :data:`CHILD_FOLDER`. A fixed hash
    seed; no OpenBLAS thread pool (numpy only takes argmaxes here): one thread fewer for valgrind, which runs
    threads one at a time, to schedule; and no onnxruntime telemetry thread, which wakes on the wall clock: the
    longer a loaded machine stretches the region, the more of its work (a million instructions a wake-up)
    landed inside the count.
    """
    environ = os.environ if environ is None else environ
    kept = {k: v for k, v in environ.items() if k in KEPT_ENVIRONMENT or k.startswith(KEPT_PREFIXES)}
    if kept.get("PYTHONPATH"):
        kept["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in kept["PYTHONPATH"].split(os.pathsep) if p)
    return kept | {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "ORT_DISABLE_TELEMETRY": "1"}


def count(
    tier_dir: Path,
    golden: Path,
    rows: int,
    valgrind: str | None = None,
    session: dict[str, Any] | None = None,
    prompt: str | None = None,
) -> Count:
    """One tier's instruction count over the first ``rows`` golden rows, in a child process under callgrind.

    ``session``: the run's session options (a :class:`~measure.engine.options.SessionConfig` as a dict), so
    the graph counted is the graph timed; the default is one thread, as the demo runs.
    """
    binary = valgrind_binary(valgrind)
    hooks()  # fail here, with the extra's name, rather than inside valgrind
    with tempfile.TemporaryDirectory(prefix="measure-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        cmd = [
            *(binary, "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"),
            *(sys.executable, "-P", "-m", "measure", "instructions", str(Path(tier_dir).resolve())),
            *("--golden", str(Path(golden).resolve()), "--rows", str(rows), "--inner"),
            *(("--session", json.dumps(session)) if session else ()),
            *(("--prompt", prompt) if prompt is not None else ()),
        ]
        done = subprocess.run(
            cmd, capture_output=True, text=True, env=child_environment(), cwd=CHILD_FOLDER, check=False
        )
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise MeasureError(f"{tier_dir}: the decode under callgrind failed: {' / '.join(tail)}")
        facts = json.loads(done.stdout.strip().splitlines()[-1])
        total = callgrind_total(out.read_text(encoding="utf-8", errors="replace"), str(out))
    return Count(Path(tier_dir).name, total, int(facts["tokens"]), int(facts["rows"]))


def check_instructions(config: SuiteConfig) -> str:
    """Before anything is timed: the valgrind binary (and its version), or a one-line error naming what is missing."""
    try:
        binary = valgrind_binary(config.instructions.valgrind)
    except MeasureError as exc:
        raise MeasureError(f"{config.path}: instructions.valgrind = {config.instructions.valgrind!r}: {exc}") from exc
    hooks()
    return binary


def run_instructions(
    config: SuiteConfig,
    golden: GoldenRows,
    binary: str,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
) -> None:
    cfg = config.instructions
    rows = min(cfg.rows, len(golden))
    out.update(instructions_part(valgrind_version(binary), rows, cfg.runs))
    session = config.session.to_dict()
    total, done = cfg.runs * len(config.tiers), 0
    for spec in config.tiers:
        entry: dict[str, Any] | None = None
        for _ in range(cfg.runs):
            found = count(spec.path, golden.path, rows, binary, session, spec.prompt)
            if entry is None:
                entry = out["tiers"][spec.name] = instructions_tier_part(found.tokens)
            elif found.tokens != entry["tokens"]:
                raise MeasureError(
                    f"{spec.path}: under callgrind the greedy decodes gave {found.tokens} tokens, "
                    f"{entry['tokens']} before: the decode is not deterministic, so its counts are not comparable"
                )
            entry["instructions"].append(found.instructions)
            save()
            done += 1
            progress(f"instructions {spec.name}", done, total)
