"""``measure run`` end to end: config -> tiers -> record on disk -> suites, saving after every case.

With ``[instructions] enabled`` (or ``measure run --instructions``) the
callgrind counts come last; valgrind and the extra are checked before
anything is timed.

Bad golden rows are refused before anything is timed; an error or an
interrupt mid-run leaves the record on disk marked incomplete with what was
measured so far.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from measure import __version__
from measure.engine.load import detect_kind, load_tier
from measure.engine.session import AfterRun, Slowdown
from measure.engine.speculative import Pair, open_pair
from measure.engine.tier import Tier
from measure.errors import MeasureError, SettingError
from measure.record.io import SCHEMA_VERSION, new_run_id, now_iso
from measure.record.model.write import document, golden_part, tier_part
from measure.record.writer import RecordWriter
from measure.suites import Loader, Progress, Save, no_progress
from measure.suites.callgrind import check_instructions, run_instructions
from measure.suites.calls import run_call_costs, run_layouts
from measure.suites.config import SUITES, SuiteConfig
from measure.suites.environment import environment
from measure.suites.fidelity import Judged, check_streams, resolve_references, run_fidelity
from measure.suites.framing import run_framing
from measure.suites.golden import GoldenRows, load_golden
from measure.suites.profile import run_memory_and_load, run_thread_sweep
from measure.suites.wallclock import run_wallclock


def check_rows(tiers: dict[str, Tier], golden: GoldenRows) -> None:
    for row in golden.rows:
        for tier in tiers.values():
            try:
                tier.source_ids(row.input)
            except MeasureError as exc:
                raise MeasureError(f"{golden.path}:{row.line}: tier {tier.name}: {exc}") from exc


def check_decodes(tiers: dict[str, Tier], golden: GoldenRows, config: Path) -> None:
    """Refuse, before anything is timed or written, a tier that decodes no token on any golden row: its first
    step picks end-of-sequence on every one (a broken prompt template or export). One untimed step per row."""
    for tier in tiers.values():
        empty = sum(not tier.greedy_ids(tier.source_ids(r.input), max_new_tokens=1).tokens for r in golden.rows)
        if empty and empty == len(golden):
            fix = (
                f"check its prompt template ({tier.path}/tier.json prompt, or the tier's prompt in {config}) "
                "and its eos_token_id"
                if tier.kind == "causal"
                else "check its decoder_start_token_id and eos_token_id"
            )
            raise MeasureError(
                f"{golden.path}: tier {tier.name} decoded no token on {empty}/{len(golden)} rows "
                f"(end-of-sequence first on each): {fix}; nothing was measured"
            )


def references(config: SuiteConfig, tiers: dict[str, Tier], golden: GoldenRows) -> list[Judged]:
    """Each tier's reference for the fidelity pass, loaded and checked before anything is measured."""

    def load(folder: Path, name: str, prompt: str | None) -> Tier:
        causal = detect_kind(folder) == "causal"
        return load_tier(
            folder, config.session, label=f"{name}~reference", name=name, prompt=prompt if causal else None
        )

    judged = resolve_references(tiers, {t.name: t.reference for t in config.tiers}, load, config.path)
    check_streams(judged, golden)
    return judged


def load_tiers(config: SuiteConfig, hooks: Mapping[str, AfterRun]) -> dict[str, Tier]:
    """Every tier's sessions; a session option onnxruntime refuses (a provider it lacks) names the config file,
    a prompt given to an encoder-decoder tier names its ``tiers[i].prompt``."""
    tiers = {}
    for i, t in enumerate(config.tiers):
        try:
            tiers[t.name] = load_one(config, t.name, label=t.name, after_run=hooks.get(t.name))
        except SettingError as exc:
            raise exc.located(f"{config.path}: ") from exc
        if t.prompt is not None and tiers[t.name].kind != "causal":
            raise MeasureError(
                f"{config.path}: tiers[{i}].prompt: {t.name} is an encoder-decoder tier; a prompt template is for "
                f"decoder-only tiers"
            )
    return tiers


def load_one(config: SuiteConfig, name: str, label: str, after_run: AfterRun | None = None) -> Tier:
    """One tier of the config, loaded as its entry says (session options, prompt override)."""
    spec = config.tier(name)
    prompt = spec.prompt if detect_kind(spec.path) == "causal" else None
    return load_tier(spec.path, config.session, label=label, after_run=after_run, name=name, prompt=prompt)


def speculative_pairs(config: SuiteConfig, tiers: dict[str, Tier]) -> dict[str, Pair]:
    """Each ``[[pairs]]`` entry through :func:`open_pair`; its refusal (two kinds, two vocabularies) names the entry."""
    pairs = {}
    for i, spec in enumerate(config.pairs):
        drafter = tiers[spec.drafter]
        if spec.drafter == spec.verifier:
            drafter = load_one(config, spec.drafter, label=f"{spec.drafter}~drafter")
        try:
            pairs[spec.name] = open_pair(drafter, tiers[spec.verifier])
        except MeasureError as exc:
            raise MeasureError(f"{config.path}: pairs[{i}] ({spec.name}): {exc}") from exc
    return pairs


def _self_pairs(config: SuiteConfig, tiers: dict[str, Tier]) -> dict[str, Pair]:
    """A self-pair (same artifact loaded twice) for every tier a pair uses."""
    used = list(dict.fromkeys(n for spec in config.pairs for n in (spec.drafter, spec.verifier)))
    return {f"{n}->{n}": open_pair(load_one(config, n, label=f"{n}~drafter"), tiers[n]) for n in used}


def run(
    config: SuiteConfig,
    suites: list[str],
    results: Path,
    argv: list[str] | None = None,
    progress: Progress = no_progress,
    after_run: Mapping[str, AfterRun] | None = None,
) -> Path:
    """Measure and return the record's path.

    ``after_run``: test-only session hooks by tier name, called inside the timing after
    every call of that tier (a :class:`~measure.engine.session.Slowdown` shows a suite a slower
    tier; its factor is written to the record as ``test_slowdown_factor``).
    """
    hooks = dict(after_run or {})
    for suite in suites:
        if suite not in SUITES:
            raise MeasureError(f"--suite {suite!r}: expected one of {', '.join(SUITES)}")
    golden = load_golden(config.golden)
    valgrind = check_instructions(config) if config.instructions.enabled else None  # before anything is timed
    tiers = load_tiers(config, hooks)
    check_rows(tiers, golden)
    check_decodes(tiers, golden, config.path)
    pairs = speculative_pairs(config, tiers)
    judged = references(config, tiers, golden) if "framing" in suites and config.framing.fidelity else None
    env = environment(argv=argv)
    doc = new_document(config, suites, golden, tiers, env)
    note_slowdowns(doc, hooks)
    writer = RecordWriter(results, doc)
    with failing(writer):
        if "wallclock" in suites:
            texts = [r.input for r in golden.rows]
            _wallclock_part(config, doc, texts, fresh_loader(config, tiers, pairs, hooks), writer.save, progress)
        if "framing" in suites:
            doc["framing"] = {}
            selves = _self_pairs(config, tiers)
            framing = (tiers, pairs, selves, golden, config.framing, doc["framing"], writer.save, progress)
            run_framing(*framing, runtime_version=env["onnxruntime"])
            if judged is not None:
                doc["fidelity"] = {}
                drafted = [(p.drafter, p.verifier) for p in pairs.values()]
                run_fidelity(judged, drafted, golden, doc["fidelity"], writer.save, progress)
        if valgrind is not None:  # last: 30x slower than the suites, and they are saved whatever happens here
            doc["instructions"] = {}
            run_instructions(config, golden, valgrind, doc["instructions"], writer.save, progress)
    return writer.finish()


def note_slowdowns(doc: dict[str, Any], hooks: Mapping[str, AfterRun]) -> None:
    """A test's known slowdowns go into the record (``test_slowdown_factor``), so no one reads it as a real run."""
    slowdowns = {name: hook.factor for name, hook in hooks.items() if isinstance(hook, Slowdown)}
    if slowdowns:
        doc["test_slowdown_factor"] = slowdowns


def _wallclock_part(
    config: SuiteConfig, doc: dict[str, Any], texts: list[str], load: Loader, save: Save, progress: Progress
) -> None:
    """The wall-clock section: the timed cases, then the call costs, the layouts and the cost profile asked for."""
    wallclock = doc["wallclock"] = {}
    run_wallclock(load, texts, config.wallclock, wallclock, save, progress)
    if config.wallclock.call_costs and config.pairs:
        costs = wallclock["call_costs"] = {}
        run_call_costs(load, texts, config.wallclock, costs, save, progress)
    if config.layouts:
        found = wallclock["layouts"] = {}
        run_layouts(config.layouts, config.session, texts, config.wallclock, found, save, progress)
    if config.wallclock.profile or config.wallclock.threads:
        profile = wallclock["profile"] = {}
        if config.wallclock.profile:
            run_memory_and_load(config, texts, profile, save, progress)
        if config.wallclock.threads:
            profile["threads"] = {}
            run_thread_sweep(config, texts, profile["threads"], save, progress)


@contextlib.contextmanager
def failing(*writers: RecordWriter | Iterable[RecordWriter]) -> Iterator[None]:
    """On an error or an interrupt, finish every record incomplete, saying why, and re-raise.

    A writer may be given as a collection still being filled (a dict's ``values()``): the ones there when it
    fails are finished.
    """
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            error = "interrupted"
        elif isinstance(exc, MeasureError):
            error = str(exc)
        elif isinstance(exc, Exception):
            error = f"{type(exc).__name__}: {exc}"
        else:
            raise
        for writer in _each(writers):
            finish_failed(writer, error)
        raise


def _each(writers: tuple[RecordWriter | Iterable[RecordWriter], ...]) -> list[RecordWriter]:
    return [w for item in writers for w in ([item] if isinstance(item, RecordWriter) else item)]


def fresh_loader(
    config: SuiteConfig, tiers: dict[str, Tier], pairs: dict[str, Pair], hooks: Mapping[str, AfterRun]
) -> Loader:
    """The wall-clock suite's loader: the sessions loaded (and fingerprinted) first, then fresh ones each call."""
    loaded = [(tiers, pairs)]

    def load() -> tuple[dict[str, Tier], dict[str, Pair]]:
        if loaded:
            return loaded.pop()
        fresh = load_tiers(config, hooks)
        return fresh, speculative_pairs(config, fresh)

    return load


def new_document(
    config: SuiteConfig, suites: list[str], golden: GoldenRows, tiers: dict[str, Tier], env: dict[str, Any]
) -> dict[str, Any]:
    """A record as it starts: ids, environment, config, golden rows, tier fingerprints; no suite measured yet."""
    return document(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        run_id=new_run_id(),
        started_at=now_iso(),
        suites=suites,
        environment=env,
        config=config.to_dict(),
        golden=golden_part(str(golden.path), golden.sha256, len(golden)),
        tiers={
            name: tier_part(
                config.tier(name).role,
                str(tier.path),
                tier.kind,
                getattr(tier, "prompt", None),
                tier.fingerprint().to_dict(),
            )
            for name, tier in tiers.items()
        },
    )


def finish_failed(writer: RecordWriter, error: str) -> None:
    """Record why the run stopped; when even that cannot be written (a full disk), the file keeps the last
    record that was, valid and marked unfinished, and the original error is the one reported."""
    with contextlib.suppress(MeasureError):
        writer.finish(error=error)
