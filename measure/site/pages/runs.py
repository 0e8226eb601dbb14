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
from measure.site.context import KIND, Md, RunLinks, RunRef, Setting, md, megabytes, month_slug, trusted
from measure.site.escape import pre

PAGES_PER_MACHINE = 20
"""Runs per machine, newest first, that get a page of their own."""
INDEX_RUNS = 50
"""Newest runs listed on the index itself."""
MONTH_ROWS = 500
"""Rows per archive page; a longer month is split into parts."""


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
    files: Md
    """The tiers' files as ``sha256sum`` lists them (``<sha256>  <tier>/<file>``), escaped for a <pre> block:
    ``sha256sum -c`` checks a copy of the tiers against it."""
    golden: Md
    config: Md
    """The resolved config as escaped JSON for a <pre> block."""
    command: Md
    error: Md | None
    verdicts: Md
    """How many verdicts this run gave, by outcome."""
    record: Md
    """The record file, published beside the page as the results tree stores it (``.json`` or ``.json.gz``)."""
    record_name: Md
    """That file's name: the run id and the suffix it is stored with."""
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


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def _folder(path: str, name: str) -> str:
    """The tier's folder as the measuring machine named it (its last part: where a copy would be checked)."""
    return PurePosixPath(path.replace("\\", "/")).name or name


def _sum_line(sha256: str, path: str) -> str:
    """One line of a ``sha256sum`` listing; a name holding a backslash or a line break is escaped as
    GNU coreutils does (the line then starts with a backslash), so every file stays one line."""
    if "\\" in path or "\n" in path or "\r" in path:
        return "\\" + sha256 + "  " + path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return f"{sha256}  {path}"


RUN_FACTS_VERSION = 1
"""Bump whenever :func:`run_facts` changes what it takes from a record: every cached entry is then made again."""


@dataclass(frozen=True)
class RunFacts:
    """What a run page shows of its record, as the record's plain text (escaped only when the page is made).

    Kept in the build's cache per record (:func:`facts_entry`): a warm build makes each paged run's page without
    parsing its record, and an entry, being text, can never carry markup into a page."""

    environment: tuple[tuple[str, str], ...]
    tiers: tuple[tuple[str, str], ...]
    kinds: tuple[tuple[str, str | None], ...]
    """Per tier, its model kind and prompt template, where the record holds a decoder-only tier; else empty."""
    files: str
    golden: str
    config: str
    command: str
    error: str | None


def run_facts(record: Record) -> RunFacts:
    env = record.environment
    m, git = env.machine, env.git
    environment = tuple(
        (name, str(value))
        for name, value in (
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
        )
    )
    tiers = tuple(
        (
            n,
            f"{t.role}, {t.precision}, {t.layout} layout, {t.layers} layers; {_files(len(t.files))}, "
            f"{megabytes(t.total_bytes)}",
        )
        for n, t in record.tiers.items()
    )
    # a listing in one <pre>, not a table of a row per file: 45 files were most of a run page's HTML tags, and
    # mkdocs parses each page's HTML twice (a build of 1,000 runs renders 100 such pages)
    files = "\n".join(
        _sum_line(f.sha256, f"{_folder(t.path, n)}/{f.name}") for n, t in record.tiers.items() for f in t.files
    )
    kinds: tuple[tuple[str, str | None], ...] = ()
    if any(t.decoder_only for t in record.tiers.values()):
        kinds = tuple((KIND[t.kind], t.prompt) for t in record.tiers.values())
    command = ["measure", "run", *_config_argument(record.config.path)]
    for s in record.suites:
        command += ["--suite", s]
    return RunFacts(
        environment,
        tiers,
        kinds,
        files,
        f"{record.golden.rows} rows, sha256 {record.golden.sha256}",
        json.dumps(_portable(record.config.raw, record.config.path), indent=2, ensure_ascii=False),
        " ".join(command),
        record.error or None,
    )


def _pairs(value: Any, second: type | tuple[type, ...] = str) -> tuple[tuple[Any, Any], ...]:
    if type(value) is not list or not all(
        type(p) is list and len(p) == 2 and type(p[0]) is str and isinstance(p[1], second) for p in value
    ):
        raise TypeError("run facts: expected a list of [text, text] pairs")
    return tuple((a, b) for a, b in value)


def facts_from_entry(entry: Any, sha256: str) -> RunFacts | None:
    """The facts an entry of :func:`facts_entry` holds for this record; None for anything else (then made again)."""
    try:
        if type(entry) is not dict or entry.get("version") != RUN_FACTS_VERSION or entry.get("sha256") != sha256:
            return None
        env, tiers, kinds, files, golden, config, command, error = entry["facts"]
        if not all(type(t) is str for t in (files, golden, config, command)) or type(error) not in (str, type(None)):
            return None
        return RunFacts(
            _pairs(env), _pairs(tiers), _pairs(kinds, (str, type(None))), files, golden, config, command, error
        )
    except (KeyError, TypeError, ValueError):
        return None


def facts_entry(facts: RunFacts, sha256: str) -> dict[str, Any]:
    f = facts
    what = [f.environment, f.tiers, f.kinds, f.files, f.golden, f.config, f.command, f.error]
    return {"version": RUN_FACTS_VERSION, "sha256": sha256, "facts": what}


def run_page(facts: RunFacts, summary: Summary, links: RunLinks, suffix: str = ".json") -> RunPage:
    """A paged run's page: its record's facts, escaped, and the verdict counts of its summary; ``suffix``: the
    record file's (``.json`` or ``.json.gz``), as it is published beside the page."""
    ref = links.ref(summary, "")
    kinds = tuple(
        TierKind(md(kind), trusted(f"<code>{md(prompt)}</code>") if prompt is not None else md("-"))
        for kind, prompt in facts.kinds
    )
    return RunPage(
        ref,
        tuple(Setting(md(k), md(v)) for k, v in facts.environment),
        tuple(Setting(md(k), md(v)) for k, v in facts.tiers),
        pre(facts.files),
        md(facts.golden),
        pre(facts.config),
        md(facts.command),
        md(facts.error) if facts.error else None,
        md(outcome_counts(summary.verdicts)),
        trusted(str(ref.link).removesuffix(".md") + suffix),
        md(summary.run_id + suffix),
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
