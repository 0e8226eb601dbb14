"""``measure run`` end to end: config -> tiers -> record on disk -> suites, saving after every case.

Sessions are held one step at a time (:mod:`measure.suites.steps`): each tier is loaded to be checked and
fingerprinted and let go, each wall-clock unit per repeat, each framing tier and pair in turn. With a budget
(``--budget``, ``[run] budget``) the warm-up times one pass of every case and the run plans itself
(:mod:`measure.suites.budget`); without one it measures exactly what the config asks.

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
from dataclasses import replace
from pathlib import Path
from time import perf_counter
from typing import Any

from measure import __version__
from measure.engine.load import load_tier
from measure.engine.meta import model_name
from measure.engine.session import AfterRun, Slowdown
from measure.engine.speculative import Pair, open_pair
from measure.engine.tier import Tier
from measure.errors import MeasureError, SettingError
from measure.record.io import SCHEMA_VERSION, new_run_id, now_iso
from measure.record.model.plan import plan_part
from measure.record.model.write import document, golden_part, tier_part
from measure.record.writer import RecordWriter
from measure.suites import Loader, Progress, Say, no_progress, no_say
from measure.suites.bandwidth import threads_of
from measure.suites.budget import finish_top_up, plan_run
from measure.suites.callgrind import check_instructions, run_instructions
from measure.suites.calls import run_call_costs, run_layouts
from measure.suites.config import PairSpec, SuiteConfig
from measure.suites.environment import environment
from measure.suites.fidelity_steps import run_fidelity_steps
from measure.suites.framing import run_framing
from measure.suites.golden import GoldenRows, load_golden
from measure.suites.heartbeat import Heartbeat
from measure.suites.kernels import kernels_part
from measure.suites.preflight import check_tiers
from measure.suites.profile import run_memory_and_load, run_thread_sweep
from measure.suites.run_options import RunOptions, run_options
from measure.suites.sizes import FramingSizes, WallclockSizes, sizes
from measure.suites.steps import OneAtATime, RunContext, Sessions
from measure.suites.units import Units
from measure.suites.wallclock import run_wallclock


def load_tiers(config: SuiteConfig, hooks: Mapping[str, AfterRun]) -> dict[str, Tier]:
    """Every tier's sessions; a session option onnxruntime refuses (a provider it lacks) names the config file."""
    tiers = {}
    for t in config.tiers:
        try:
            tiers[t.name] = load_one(config, t.name, label=t.name, after_run=hooks.get(t.name))
        except SettingError as exc:
            raise exc.located(f"{config.path}: ") from exc
    return tiers


def load_one(config: SuiteConfig, name: str, label: str, after_run: AfterRun | None = None) -> Tier:
    """One tier of the config, loaded as its entry says (session options, prompt override)."""
    spec = config.tier(name)
    prompt = spec.prompt if spec.kind == "causal" else None
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


def run(
    config: SuiteConfig,
    suites: list[str],
    results: Path,
    argv: list[str] | None = None,
    progress: Progress = no_progress,
    after_run: Mapping[str, AfterRun] | None = None,
    *,
    budget_s: float | None = None,
    say: Say = no_say,
    parts: Mapping[str, Any] | None = None,
    fidelity_row_s: Mapping[str, float] | None = None,
) -> Path:
    """:func:`execute` of these options (:func:`~measure.suites.run_options.run_options`), for callers in-process
    (tests, benchmarks): ``budget_s`` as ``--budget`` gives it, else the config's ``[run] budget``;
    ``fidelity_row_s``: what the caller saw the fidelity pass take per row (the plan charges at least that)."""
    options = run_options(config, suites, results, budget_s=budget_s, argv=argv)
    options = replace(options, fidelity_row_s=dict(fidelity_row_s or {}))
    return execute(options, progress, after_run, say=say, parts=parts)


def execute(
    options: RunOptions,
    progress: Progress = no_progress,
    after_run: Mapping[str, AfterRun] | None = None,
    *,
    say: Say = no_say,
    parts: Mapping[str, Any] | None = None,
) -> Path:
    """Measure what ``options`` ask and return the record's path.

    ``after_run``: test-only session hooks by tier name, called inside the timing after
    every call of that tier (a :class:`~measure.engine.session.Slowdown` shows a suite a slower
    tier; its factor is written to the record as ``test_slowdown_factor``). With a budget the run is planned to it
    after the warm-up (:mod:`measure.suites.plan`) and ``say`` prints the plan; a budget too small for one repeat
    of everything is refused before anything is measured. Sessions are held one step at a time
    (:mod:`measure.suites.steps`). ``parts``: sections a caller adds to the record from its first save
    (``measure explore``'s ``explore``), written as given.
    """
    started = perf_counter()
    hooks = dict(after_run or {})
    config = options.config
    golden = load_golden(config.golden)
    valgrind = check_instructions(config) if config.instructions.enabled else None  # before anything is timed
    tier_parts, planned, unjudged = check_tiers(Sessions(config, options.first, hooks), golden, options.fidelity)
    env = environment(argv=None if options.argv is None else list(options.argv))
    doc = _document(config, list(options.suites), golden, tier_parts, env) | dict(parts or {})
    note_slowdowns(doc, hooks)
    budgeted = None
    sized = sizes(config, golden)
    if options.budget is not None:
        judged = tuple((p.tier, p.reference) for p in planned) if options.fidelity else ()
        precisions = {name: part["fingerprint"]["precision"] for name, part in tier_parts.items()}
        budgeted = plan_run(options, golden, hooks, started, progress, judged, precisions)
        doc["plan"] = plan_part(budgeted.plan.to_dict())
        for line in budgeted.plan.lines(len(golden)):
            say(line)
        if isinstance(progress, Heartbeat):  # its repeated lines add the run's ETA from here on
            progress.run_end = started + budgeted.plan.estimate_s
        sized = sizes(config, golden, budgeted.plan, budgeted.passes)
    writer = RecordWriter(options.results, doc)
    context = RunContext(config, golden, hooks, writer.save, progress)
    with failing(writer):
        if "wallclock" in options.suites:
            doc["wallclock"] = {}
            _wallclock_part(context, sized.wallclock, doc["wallclock"], doc["tiers"])
        if "framing" in options.suites:
            doc["framing"] = {}
            _framing_part(context, sized.framing, doc["framing"], doc["tiers"], env)
            if options.fidelity:
                doc["fidelity"] = {}
                sessions = context.sessions("framing")
                rows = sized.fidelity_rows
                run_fidelity_steps(
                    planned, config.pairs, sessions, rows, doc["fidelity"], writer.save, progress, unjudged
                )
        if budgeted is not None:
            finish_top_up(context, doc, budgeted, started)
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
    context: RunContext, sized: WallclockSizes, wallclock: dict[str, Any], tiers: dict[str, Any]
) -> None:
    """The wall-clock section (``wallclock``, filled as it is measured): the timed cases, then the call costs,
    the layouts and the cost profile asked for, as ``sized``; ``tiers``: the record's tier parts."""
    config, wc, save, progress = sized.config, sized.wallclock, context.save, context.progress
    sessions = context.sessions("wallclock")
    texts = [r.input for r in sized.rows.rows]
    units = Units(sessions, wc.k, wc.fresh_sessions)
    try:
        run_wallclock(units, texts, wc, wallclock, save, progress, repeats=sized.repeats, warmed=sized.warmed)
    finally:
        units.close()
    all_texts = [r.input for r in context.golden.rows]
    if wc.call_costs and config.pairs:
        costs = wallclock["call_costs"] = {}
        run_call_costs(pair_loader(sessions), all_texts, sized.call_costs, costs, save, progress)
    if config.layouts:
        found = wallclock["layouts"] = {}
        run_layouts(config.layouts, config.session, texts, wc, found, save, progress)
    if wc.profile or wc.threads:
        profile = wallclock["profile"] = {}
        if wc.profile:
            run_memory_and_load(config, all_texts, profile, save, progress)
            kernels = kernels_part(tiers, profile["bandwidth"], threads_of(config.session.intra_op_threads))
            if kernels is not None:  # the matrix kernels of the tiers beyond the cache, timed alone
                profile["kernels"] = kernels
                save()
        if wc.threads:
            profile["threads"] = {}
            run_thread_sweep(config, all_texts, profile["threads"], save, progress)


def pair_loader(sessions: Sessions) -> Loader:
    """The call costs' loader: the tiers the pairs use (each once) and the pairs over them, fresh each call."""

    def load() -> tuple[dict[str, Tier], dict[str, Pair]]:
        config = sessions.config
        names = list(dict.fromkeys(n for p in config.pairs for n in (p.verifier, p.drafter)))
        tiers = {name: sessions.tier(name) for name in names}
        pairs = {p.name: open_pair(tiers[p.drafter], tiers[p.verifier]) for p in config.pairs}
        return tiers, pairs

    return load


def _framing_part(
    context: RunContext, sized: FramingSizes, framing: dict[str, Any], tiers: dict[str, Any], env: dict[str, Any]
) -> None:
    """The framing section (``framing``, filled as it is measured), its tiers and pairs loaded one at a time, on
    the rows ``sized`` gives; ``tiers``: the record's tier parts (their kinds)."""
    config = context.config
    sessions = context.sessions("framing")
    kinds = {name: part["kind"] for name, part in tiers.items()}
    threads = config.session.intra_op_threads
    folders = {t.name: t.path for t in config.tiers}
    each = OneAtATime([t.name for t in config.tiers], sessions.tier, kinds, threads, folders)
    pairs = OneAtATime([p.name for p in config.pairs], lambda n: sessions.pair(_pair(config, n)), kinds, threads)
    used = list(dict.fromkeys(n for spec in config.pairs for n in (spec.drafter, spec.verifier)))
    selves = OneAtATime([f"{n}->{n}" for n in used], lambda n: sessions.self_pair(n.split("->")[0]), kinds, threads)
    save, progress = context.save, context.progress
    run_framing(
        each, pairs, selves, sized.rows, config.framing, framing, save, progress, env["onnxruntime"], sized.prefill
    )
    if sized.sample is not None:  # only a plan cuts rows
        framing["sample"] = sized.sample
        save()


def _pair(config: SuiteConfig, name: str) -> PairSpec:
    return next(p for p in config.pairs if p.name == name)


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
    """A record as it starts from loaded tiers (``measure ab``): their fingerprints, no suite measured yet."""
    parts = {
        name: tier_part(
            config.tier(name).role,
            str(tier.path),
            tier.kind,
            getattr(tier, "prompt", None),
            tier.fingerprint().to_dict(),
            model=config.tier(name).model or model_name(tier.path),
        )
        for name, tier in tiers.items()
    }
    return _document(config, suites, golden, parts, env)


def _document(
    config: SuiteConfig, suites: list[str], golden: GoldenRows, parts: dict[str, Any], env: dict[str, Any]
) -> dict[str, Any]:
    """A record as it starts: ids, environment, config, golden rows, each tier's part; no suite measured yet."""
    return document(
        schema_version=SCHEMA_VERSION,
        tool_version=__version__,
        run_id=new_run_id(),
        started_at=now_iso(),
        suites=suites,
        environment=env,
        config=config.to_dict(),
        golden=golden_part(str(golden.path), golden.sha256, len(golden)),
        tiers=parts,
    )


def finish_failed(writer: RecordWriter, error: str) -> None:
    """Record why the run stopped; when even that cannot be written (a full disk), the file keeps the last
    record that was, valid and marked unfinished, and the original error is the one reported."""
    with contextlib.suppress(MeasureError):
        writer.finish(error=error)
