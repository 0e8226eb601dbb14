"""Helpers shared by the tests: a small real suite config over the bundled demo tiers."""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from measure import bundled

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "tests" / "data"
"""Golden records and other fixtures every test folder reads."""

MINI_TOML = """
golden = "rows.jsonl"

[[tiers]]
name = "base-fp32"
path = "{demo}/base-fp32"
role = "reference"

[[tiers]]
name = "base-int8"
path = "{demo}/base-int8"
role = "plain"

[[tiers]]
name = "small-int4"
path = "{demo}/small-int4"
role = "lite"

[[pairs]]
drafter = "small-int4"
verifier = "base-int8"

[wallclock]
warmup = 1
warmup_s = 0.0
repeats = {repeats}
k = [2, 4]
bootstrap = 400
profile_workers = {workers}
warm_loads = 1
profile_rows = 4
threads = {threads}

[framing]
k = [2, 4]
"""


def ort_node_installed() -> bool:
    """Whether onnxruntime-node can be found the way measure/suites/legs/node/framing.mjs looks for it."""
    places = [ROOT / "node_modules"]
    if os.environ.get("MEASURE_NODE_MODULES"):
        places.insert(0, Path(os.environ["MEASURE_NODE_MODULES"]) / "node_modules")
    return any((place / "onnxruntime-node" / "package.json").is_file() for place in places)


def readme_setup_commands() -> list[str]:
    """The README's set-up commands, in order: the main job, then the tests."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", setup, flags=re.S)


def write_config(
    folder: Path,
    rows: int = 12,
    repeats: int = 3,
    name: str = "suite.toml",
    workers: int = 1,
    threads: tuple[int, ...] = (),
) -> Path:
    """A small real suite config over the bundled tiers and the first ``rows`` golden rows.

    The cost profile runs one worker process per tier (``workers``); ``threads`` adds the thread sweep.
    """
    lines = bundled.GOLDEN.read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "rows.jsonl").write_text("".join(lines[:rows]), encoding="utf-8")
    path = folder / name
    path.write_text(
        MINI_TOML.format(demo=bundled.DEMO_DIR.as_posix(), repeats=repeats, workers=workers, threads=list(threads)),
        encoding="utf-8",
    )
    return path


def site_project(tmp: Path) -> Path:
    """A copy of the project's site sources, so a test build never touches the checkout."""
    shutil.copytree(ROOT / "docs", tmp / "docs")
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    (tmp / "mkdocs.yml").write_text(text.replace("site_dir: site", f"site_dir: {tmp / 'site'}"), encoding="utf-8")
    return tmp / "mkdocs.yml"


def build(project: Path, results: Path, site_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEASURE_RESULTS=str(results), NO_MKDOCS_2_WARNING="1")
    if site_url:
        env["MEASURE_SITE_URL"] = site_url  # Material's instant navigation needs site_url to match the host
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def html(project: Path, page: str) -> str:
    return (project.parent / "site" / page / "index.html").read_text(encoding="utf-8")


def later(doc: dict[str, Any], days: float = 0, suffix: str = "abcdef", machine: str | None = None) -> dict[str, Any]:
    """A copy of a record as if measured ``days`` later (and on ``machine``): start, finish and run id move
    together, so the copy sorts after the original and sits at its own ``<machine-id>/<run-id>.json``."""
    out = copy.deepcopy(doc)
    for key in ("started_at", "finished_at"):
        if out.get(key):
            when = datetime.strptime(out[key], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) + timedelta(days=days)
            out[key] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    out["run_id"] = out["started_at"].replace("-", "").replace(":", "") + "-" + suffix
    if machine is not None:
        out["machine_id"] = machine
    return out


def screenshots() -> Path:
    """Where page screenshots go: $MEASURE_SCREENSHOTS (``.ci/run`` keeps them), else a temporary folder."""
    import tempfile

    folder = Path(os.environ.get("MEASURE_SCREENSHOTS") or tempfile.mkdtemp(prefix="measure-shots-"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
"""The system's Chromium, which the browser legs drive (never a downloaded one)."""


def web_ready() -> bool:
    """Whether the browser legs can run here: Chromium, Node.js and the npm packages."""
    from measure.suites.legs import node_driver, web_driver

    try:
        web_driver.find_browser(CHROMIUM)
        node_driver.find_node()
        web_driver.find_package("onnxruntime-web")
        web_driver.find_package("playwright-core")
    except node_driver.LegUnavailable:
        return False
    return True


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
"""Headless Debian Chromium as the site tests drive it: no sandbox in containers, nothing fetched behind our back."""


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``measure ARGV`` in-process: its exit code, stdout and stderr (what an earlier call printed is dropped)."""
    from measure.cli import main

    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def timed_cases(doc: dict[str, Any], ms: dict[str, float]) -> dict[str, Any]:
    """``doc`` (an unpacked record) with each wall-clock case in ``ms`` decoding at that many ms/token: every
    timing of a repeat scaled alike (run <= wall, CPU beside it), times a jitter per case and repeat."""
    import numpy as np

    doc = copy.deepcopy(doc)
    for i, (case, target) in enumerate(ms.items()):
        c = doc["wallclock"]["cases"][case]
        wall = np.asarray(c["wall_s"], dtype=float)
        jitter = 1 + np.random.default_rng(i).uniform(-0.01, 0.01, len(wall))  # each case its own: ratios vary
        factor = target * jitter / (1000 * wall.sum(axis=1) / sum(c["tokens"]))
        for key, value in c.items():
            if key.endswith("_s") and isinstance(value, list) and len(value) == len(factor):
                c[key] = (np.asarray(value, dtype=float) * factor[:, None]).tolist()
    return doc


def history_tree(
    results: Path,
    commits: int = 15,
    machines: tuple[str, ...] = ("a", "b"),
    steps: dict[tuple[str, int], float] | None = None,
    runs: int = 2,
) -> list[dict[str, Any]]:
    """Copies of a real record (``tests/data/record-v1.json``, 5 repeats) as ``runs`` records of each of ``commits``
    clean commits, four days apart from 2026-10-01 (so two months), per machine (its id with ``-a``, ``-b``, ...);
    every timing of a run scaled by a seeded drift of 0.4%, and of a case by ``steps`` {(case, first commit): ratio}
    from that commit on (machine ``a`` only). Returns the documents, oldest first per machine."""
    import hashlib
    import random

    from measure.record.io import load_record, write_record

    base = load_record(ROOT / "tests" / "data" / "record-v1.json")
    rng = random.Random(20261205)
    out = []
    for machine in machines:
        for c in range(commits):
            for r in range(runs):
                d = copy.deepcopy(base)
                d["machine_id"] = f"{base['machine_id']}-{machine}"
                when = datetime(2026, 10, 1, 8) + timedelta(days=4 * c, minutes=30 * r)
                d["started_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
                d["run_id"] = when.strftime("%Y%m%dT%H%M%SZ") + f"-{len(out):06x}"
                d["environment"]["git"] = {"commit": hashlib.sha1(str(c).encode()).hexdigest(), "dirty": False}
                drift = rng.lognormvariate(0, 0.004)
                for name, case in d["wallclock"]["cases"].items():
                    f = drift
                    for (stepped, at), ratio in (steps or {}).items():
                        f *= ratio if machine == "a" and stepped == name and c >= at else 1.0
                    for key, value in case.items():
                        if key.endswith("_s") and value and isinstance(value[0], list):
                            case[key] = [[x * f for x in rep] for rep in value]
                write_record(results / d["machine_id"] / f"{d['run_id']}.json", d)
                out.append(d)
    return out


REAL_SIZE_SECONDS = 2000.0
"""How much slower than the lm fixture's a real-size tier's rows are: seconds per row, hundreds of ms per token."""


def real_size_record(repeats: int = 3) -> dict:
    """tests/data/record-v3-lm.json at the magnitudes a 135M-parameter model gives: every timed sample times
    :data:`REAL_SIZE_SECONDS` (seconds per row), worker peaks in the hundreds of MB, ``repeats`` repeats (a
    short interval level at 3), and a budgeted run's plan with what it cut."""
    import json

    doc = json.loads((DATA_DIR / "record-v3-lm.json").read_text(encoding="utf-8"))
    wc = doc["wallclock"]
    for case in wc["cases"].values():
        for key in ("wall_s", "run_s", "cpu_s", "first_token_s", "drafter_run_s", "verifier_run_s", "tokenize_s"):
            if key in case:
                case[key] = [[v * REAL_SIZE_SECONDS * (1 + 0.03 * i) for v in rep] for i, rep in enumerate(case[key])]
                case[key] = case[key][:repeats]
    wc["repeats"] = wc["repeats_done"] = repeats
    for tier in (wc.get("profile") or {}).get("tiers", {}).values():
        tier["peak_rss_bytes"] = [v * 12 for v in tier["peak_rss_bytes"]]
        tier["load_cold_s"] = [v * 100 for v in tier["load_cold_s"]]
    rows = list(range(doc["golden"]["rows"]))
    doc["plan"] = {
        "budget_s": 900.0,
        "elapsed_s": 190.0,
        "minimum_s": 420.0,
        "estimate_s": 880.0,
        "shape": {
            "wallclock_rows": len(rows),
            "repeats": repeats,
            "framing_rows": len(rows),
            "prefill_rows": 4,
            "profile_workers": 1,
            "profile_rows": 2,
            "warm_loads": 1,
            "call_cost_rows": 4,
            "call_cost_repeats": 3,
        },
        "wallclock_rows": rows,
        "framing_rows": rows,
        "max_repeats": 18,
        "steps": {"wallclock": 500.0, "framing": 190.0},
        "cut": [
            "profile workers 3 -> 1",
            f"{repeats} repeats: intervals below 95% (the ratios and verdicts say at which level)",
        ],
        "outcome": {"stopped": "budget", "top_up_rounds": 0, "added_repeats": {}, "spent_s": 893.5},
    }
    return doc


def causal_rows(tier: Any, golden: Any, n: int) -> tuple[list[Any], list[list[int]]]:
    """The first ``n`` golden rows of a decoder-only tier as a JavaScript leg takes them, and Python's decodes."""
    from measure.suites.legs import node_driver

    rows, decoded = [], []
    for row in golden.rows[:n]:
        ids = tier.source_ids(row.input)
        tokens = [int(t) for t in tier.greedy(row.input).tokens]
        prefix = node_driver.prefix(tier, ids, tokens)
        rows.append(node_driver.NodeRow(ids, prefix, tier.default_max_new_tokens(len(ids)), row.line, row.input))
        decoded.append(tokens)
    return rows, decoded


def python_causal_facts(tier: Any, rows: list[Any], blocks: list[int | str]) -> dict[str, list[dict[str, Any]]]:
    """The Python leg's block and prefill facts for the very ids a JavaScript leg was given."""
    from measure.suites.legs.python import _Diff, _framed_row, _prefill_row

    diffs = {b: _Diff(tier.shape.layers) for b in blocks}
    prefill = {b: _Diff(tier.shape.layers) for b in blocks}
    for row in rows:
        _framed_row(tier, row.source_ids, row.prefix[1:], diffs)
        _prefill_row(tier, row.source_ids, prefill)
    return {"blocks": [diffs[b].facts(b) for b in blocks], "prefill": [prefill[b].facts(b) for b in blocks]}


def assert_same_framing(js: dict[str, Any], python: dict[str, Any], tolerance: float) -> None:
    """A JavaScript leg's framing facts against Python's on the same ids: argmax totals equal, every layer's
    present difference and the logits difference within ``tolerance`` of Python's (a runtime's own rounding)."""
    for part in ("blocks", "prefill"):
        for j, p in zip(js[part], python[part], strict=True):
            assert j["block"] == p["block"]
            assert j["argmax_total"] == p["argmax_total"] > 0
            assert abs(j["logits_max_abs_diff"] - p["logits_max_abs_diff"]) <= tolerance, (part, j["block"])
            for lj, lp in zip(j["layers"], p["layers"], strict=True):
                for key in ("key_max_abs_diff", "value_max_abs_diff"):
                    assert abs(lj[key] - lp[key]) <= tolerance, (part, j["block"], lj["layer"], key)
                assert abs(lj["key_mean_abs"] - lp["key_mean_abs"]) <= max(1e-3 * lp["key_mean_abs"], tolerance)


def with_bandwidth(doc: dict[str, Any], weights: dict[str, int], read_s: float = 0.1, llc: int | None = 32 * 2**20):
    """``doc`` with each tier of ``weights`` reading that many bytes per decode step (no cache) and a bandwidth
    probe of 1 GB read in ``read_s`` seconds at every pass, beside caches of ``llc`` bytes (None: unknown)."""
    from measure.record.model.bandwidth import CacheLevel, Caches, bandwidth_part

    doc = copy.deepcopy(doc)
    for name, size in weights.items():
        doc["tiers"][name]["traffic"] = {
            "graph": "model.onnx",
            "weights_bytes": size,
            "embedding_bytes": 0,
            "kv_bytes_per_position": 0,
            "cross_bytes_per_source_token": 0,
            "weights": 1,
        }
    caches = Caches("sysfs", (CacheLevel(3, "Unified", llc, 1),)) if llc else Caches("unknown", ())
    part = bandwidth_part("test", 10**9, {1: [read_s] * 5}, caches, "linux x86_64")
    doc["wallclock"].setdefault("profile", {})["bandwidth"] = part
    return doc
