"""Runs: a page per recent run, and an index that stays small however long the history grows.

The newest runs of each machine get a page of their own; every run is
listed on the archive page of its start month (split when a month is long),
and the index lists the newest runs and links the months.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from measure.analysis.summary import Summary
from measure.analysis.verdict import Verdict
from measure.record.model import Record
from measure.site.context import KIND, Md, RunLinks, RunRef, Setting, md, month_slug, trusted
from measure.site.escape import pre

PAGES_PER_MACHINE = 20
"""Runs per machine, newest first, that get a page of their own."""
INDEX_RUNS = 50
"""Newest runs listed on the index itself."""
MONTH_ROWS = 500
"""Rows per archive page; a longer month is split into parts."""


@dataclass(frozen=True)
class FileRow:
    tier: Md
    name: Md
    bytes: int
    sha256: Md


@dataclass(frozen=True)
class TierKind:
    """A tier's model kind and, decoder-only, its prompt template (untrusted text, escaped)."""

    kind: Md
    prompt: Md


@dataclass(frozen=True)
class RunPage:
    run: RunRef
    environment: tuple[Setting, ...]
    tiers: tuple[Setting, ...]
    files: tuple[FileRow, ...]
    golden: Md
    config: Md
    """The resolved config as escaped JSON for a <pre> block."""
    command: Md
    error: Md | None
    verdicts: Md
    """How many verdicts this run gave, by outcome."""
    record: Md
    """The record file, published beside the page."""
    kinds: tuple[TierKind, ...] = ()
    """One per tier of ``tiers`` where the record holds a decoder-only tier; empty for encoder-decoder ones only."""


@dataclass(frozen=True)
class RunRow:
    run: RunRef
    commit: Md
    verdicts: Md


@dataclass(frozen=True)
class MonthRef:
    title: Md
    link: Md
    runs: int


@dataclass(frozen=True)
class RunsIndex:
    runs: tuple[RunRow, ...]
    total: int
    months: tuple[MonthRef, ...]


@dataclass(frozen=True)
class RunsMonth:
    title: Md
    runs: tuple[RunRow, ...]
    per_machine: int = PAGES_PER_MACHINE
    """How many of each machine's newest runs have a page of their own (the rows that link to one)."""


def paged_runs(summaries: list[Summary]) -> list[Summary]:
    """The runs that get a page: the newest :data:`PAGES_PER_MACHINE` of each machine."""
    per_machine: dict[str, list[Summary]] = defaultdict(list)
    for s in sorted(summaries, key=lambda s: (s.started_at, s.run_id), reverse=True):
        if len(per_machine[s.machine_id]) < PAGES_PER_MACHINE:
            per_machine[s.machine_id].append(s)
    return [s for runs in per_machine.values() for s in runs]


def outcome_counts(found: tuple[Verdict, ...]) -> str:
    tally = Counter(v.outcome for v in found)  # one pass: the Runs pages count a year of records' verdicts
    parts = ", ".join(f"{tally[o]} {o}" for o in ("success", "failure", "warning", "inconclusive", "info") if tally[o])
    return f"{len(found)} verdicts: {parts}." if found else "No verdicts (no suite finished)."


def _config_argument(path: str | None) -> list[str]:
    """How to name the config again: nothing for the bundled demo's, else its file name (not the machine's path)."""
    if not path or PurePosixPath(path).as_posix().endswith("measure/demo/demo.toml"):
        return []
    return ["--config", PurePosixPath(path).name]


def _portable(value: Any, config_path: str | None) -> Any:
    """The resolved config without the measuring machine's absolute paths: relative to the config's folder."""
    base = str(PurePosixPath(config_path).parent) + "/" if config_path else None
    if isinstance(value, dict):
        return {k: _portable(v, config_path) for k, v in value.items()}
    if isinstance(value, list):
        return [_portable(v, config_path) for v in value]
    if isinstance(value, str) and value.startswith("/"):
        if base and value.startswith(base):
            return value.removeprefix(base)
        return ".../" + "/".join(PurePosixPath(value).parts[-2:])
    return value


def run_page(record: Record, summary: Summary, links: RunLinks) -> RunPage:
    env = record.environment
    m, git = env.machine, env.git
    environment = [
        ("machine id", record.machine_id),
        ("cpu", f"{m.cpu} ({m.arch}, {m.cores} cores)"),
        ("memory", f"{(m.memory_bytes or 0) / 2**30:.1f} GiB"),
        ("os", m.platform),
        ("python", env.python),
        ("onnxruntime", f"{env.onnxruntime} ({', '.join(env.providers)})"),
        ("numpy / tokenizers", f"{env.numpy} / {env.tokenizers}"),
        ("git", f"{git.commit or 'not a git checkout'}{' (dirty)' if git.dirty else ''}"),
        ("measure", record.tool_version),
        ("schema", record.schema_version),
        ("started / finished", f"{record.started_at} / {record.finished_at or 'not finished'}"),
    ]
    tiers = [(n, f"{t.role}, {t.precision}, {t.layout} layout, {t.layers} layers") for n, t in record.tiers.items()]
    files = tuple(FileRow(md(n), md(f.name), f.bytes, md(f.sha256)) for n, t in record.tiers.items() for f in t.files)
    kinds = ()
    if any(t.decoder_only for t in record.tiers.values()):
        kinds = tuple(
            TierKind(md(KIND[t.kind]), trusted(f"<code>{md(t.prompt)}</code>") if t.prompt is not None else md("-"))
            for t in record.tiers.values()
        )
    command = ["measure", "run", *_config_argument(record.config.path)]
    for s in record.suites:
        command += ["--suite", s]
    ref = links.ref(record, "")
    return RunPage(
        ref,
        tuple(Setting(md(k), md(v)) for k, v in environment),
        tuple(Setting(md(k), md(v)) for k, v in tiers),
        files,
        md(f"{record.golden.rows} rows, sha256 {record.golden.sha256}"),
        pre(json.dumps(_portable(record.config.raw, record.config.path), indent=2, ensure_ascii=False)),
        md(" ".join(command)),
        md(record.error) if record.error else None,
        md(outcome_counts(summary.verdicts)),
        trusted(str(ref.link).removesuffix(".md") + ".json"),
        kinds,
    )


def _row(s: Summary, links: RunLinks, prefix: str) -> RunRow:
    return RunRow(links.ref(s, prefix), md(s.short_commit), md(outcome_counts(s.verdicts)))


def runs_pages(summaries: list[Summary], links: RunLinks) -> tuple[RunsIndex, dict[str, RunsMonth]]:
    """The index and the archive pages (slug -> page), newest first everywhere."""
    ordered = sorted(summaries, key=lambda s: (s.started_at, s.run_id), reverse=True)
    by_month: dict[str, list[Summary]] = defaultdict(list)
    for s in ordered:
        by_month[month_slug(s)].append(s)
    months, pages = [], {}
    for month, runs in by_month.items():
        for part, start in enumerate(range(0, len(runs), MONTH_ROWS)):
            chunk = runs[start : start + MONTH_ROWS]
            name = month if part == 0 else f"{month}-part-{part + 1}"
            title = month if len(runs) <= MONTH_ROWS else f"{month} (part {part + 1})"
            pages[name] = RunsMonth(md(title), tuple(_row(s, links, "") for s in chunk), PAGES_PER_MACHINE)
            months.append(MonthRef(md(title), md(f"{name}.md"), len(chunk)))
    index = RunsIndex(tuple(_row(s, links, "") for s in ordered[:INDEX_RUNS]), len(ordered), tuple(months))
    return index, pages
