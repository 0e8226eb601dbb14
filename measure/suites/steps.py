"""Sessions loaded for one step at a time, so a run's memory is its largest step's, not the sum of its tiers.

A *unit* is what one wall-clock step decodes with: one tier (its greedy case) or one speculative pair (its
cases at every k, drafter and verifier loaded together). :class:`Sessions` loads a unit's tiers when a step
asks for them, with the suite's decode length; the step lets go of them (:func:`release`) before the next
loads, so at most one unit's sessions (two tiers for a pair), and during the framing suite one tier with its
other-runtime copy, are alive at once. With ``fresh_sessions = false`` the wall-clock suite keeps what it
loaded, as before (its memory is then every tier's).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import sys
from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from measure.engine.load import load_tier
from measure.engine.session import AfterRun
from measure.engine.speculative import Pair, open_pair
from measure.engine.tier import Tier
from measure.errors import MeasureError, SettingError
from measure.suites import Progress, Save
from measure.suites.config import PairSpec, SuiteConfig
from measure.suites.golden import GoldenRows


class Sessions:
    """Loads the config's tiers and pairs on demand for one suite (``wallclock`` or ``framing``: whose
    ``max_new_tokens`` a tier without its own takes); ``hooks`` are test-only slowdowns by tier name."""

    def __init__(self, config: SuiteConfig, suite: str, hooks: Mapping[str, AfterRun] | None = None) -> None:
        self.config = config
        self.suite = suite
        self.hooks = dict(hooks or {})
        self.units = [t.name for t in config.tiers] + [p.name for p in config.pairs]
        """Every wall-clock unit, in the order its cases are timed: each tier, then each pair."""

    def tier(self, name: str, label: str | None = None) -> Tier:
        """One tier as the config states it; a session option onnxruntime refuses names the config file."""
        config = self.config
        spec = config.tier(name)
        causal = spec.kind == "causal"
        hook = self.hooks.get(name) if label is None else None
        try:
            return load_tier(
                spec.path,
                config.session,
                label=label or name,
                after_run=hook,
                name=name,
                prompt=spec.prompt if causal else None,
                max_new_tokens=config.new_tokens(self.suite, name),
            )
        except SettingError as exc:
            raise exc.located(f"{config.path}: ") from exc

    def pair(self, spec: PairSpec) -> Pair:
        """A pair's two tiers (one artifact twice, as drafter and verifier, when they name the same tier); a
        refusal (two kinds, two vocabularies) names the ``pairs[i]`` entry."""
        i = self.config.pairs.index(spec)
        verifier = self.tier(spec.verifier)
        drafter = self.tier(spec.drafter, label=f"{spec.drafter}~drafter" if spec.drafter == spec.verifier else None)
        try:
            return open_pair(drafter, verifier)
        except MeasureError as exc:
            release(drafter, verifier)
            raise MeasureError(f"{self.config.path}: pairs[{i}] ({spec.name}): {exc}") from exc

    def self_pair(self, name: str) -> Pair:
        """One tier as its own drafter (the same artifact loaded twice): anything but full acceptance is framing."""
        return open_pair(self.tier(name, label=f"{name}~drafter"), self.tier(name))

    def unit(self, name: str) -> tuple[dict[str, Tier], dict[str, Pair]]:
        """One unit's sessions, as the wall-clock suite's cases take them: ``({tier: ...}, {})`` or ``({}, {pair:
        ...})``."""
        spec = next((p for p in self.config.pairs if p.name == name), None)
        if spec is None:
            return {name: self.tier(name)}, {}
        return {}, {name: self.pair(spec)}


@dataclass(frozen=True)
class RunContext:
    """What every step of one run shares: its config, golden rows and test hooks, and where it reports."""

    config: SuiteConfig
    golden: GoldenRows
    hooks: Mapping[str, AfterRun]
    save: Save
    progress: Progress

    def sessions(self, suite: str) -> Sessions:
        """The config's tiers and pairs, loaded on demand with ``suite``'s decode length."""
        return Sessions(self.config, suite, self.hooks)


def release(*held: Any) -> None:
    """Let go of tiers and pairs (their sessions and buffers) and hand the freed memory back to the system."""
    for item in held:
        for tier in (item.drafter, item.verifier) if isinstance(item, Pair) else (item,):
            tier.close()
    gc.collect()  # decodes leave reference cycles (traces, closures) that hold arrays until collected
    trim()


def trim() -> None:
    """glibc keeps freed heap pages for reuse; ``malloc_trim`` hands them back, so one step's peak is not carried
    into the next as resident memory (a no-op where there is no glibc)."""
    malloc_trim = _malloc_trim()
    if malloc_trim is not None:
        malloc_trim(0)


@cache
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, looked up once: ``find_library`` runs ``ldconfig`` in a child process, and a child
    forked from a process holding a 135M model's sessions counts that memory again until it execs (a 3.2 GB
    "peak" of the process tree in a run that held 1.6 GB)."""
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


class OneAtATime(Mapping[str, Any]):
    """Tiers (or pairs) by name, each loaded when it is reached and let go of when the next one is: what the
    framing suite iterates, so it holds one tier's sessions at a time. ``kinds`` answers which model kinds are
    there without loading any."""

    def __init__(
        self,
        names: list[str],
        load: Any,
        kinds: Mapping[str, str],
        threads: int,
        folders: Mapping[str, Path] | None = None,
    ) -> None:
        self.names = names
        self.load = load
        self.kinds = dict(kinds)
        self.threads = threads
        """The sessions' intra-op threads (what the web leg's page takes)."""
        self.folders = dict(folders or {})
        """Each tier's folder, where these are tiers: how large a tier is, without loading it."""

    def __getitem__(self, name: str) -> Any:
        if name not in self.names:
            raise KeyError(name)
        return self.load(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def values(self) -> ValuesView[Any]:
        return _LoadedValues(self)

    def items(self) -> ItemsView[str, Any]:
        return _LoadedItems(self)


class _LoadedValues(ValuesView[Any]):
    """A :class:`OneAtATime`'s values, each loaded as iteration reaches it and let go of when it moves on."""

    _mapping: OneAtATime

    def __iter__(self) -> Iterator[Any]:
        for name in self._mapping.names:
            item = self._mapping.load(name)
            yield item
            release(item)
            del item


class _LoadedItems(ItemsView[str, Any]):
    """A :class:`OneAtATime`'s items, loaded one at a time as :class:`_LoadedValues` are."""

    _mapping: OneAtATime

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from zip(self._mapping.names, self._mapping.values(), strict=True)


def session_threads(tiers: Mapping[str, Tier]) -> int:
    """The intra-op threads of the tiers' sessions, without loading one when they are loaded one at a time."""
    if isinstance(tiers, OneAtATime):
        return tiers.threads
    return next(iter(tiers.values())).config.intra_op_threads if tiers else 0


def first_folder(tiers: Mapping[str, Tier]) -> Path | None:
    """The folder of the tier reached first, without loading it when they are loaded one at a time."""
    if isinstance(tiers, OneAtATime):
        return tiers.folders.get(tiers.names[0]) if tiers.names else None
    return next((t.path for t in tiers.values()), None)


def kinds_of(tiers: Mapping[str, Tier]) -> set[str]:
    """The model kinds among the tiers, without loading one when they are loaded one at a time."""
    if isinstance(tiers, OneAtATime):
        return set(tiers.kinds.values())
    return {t.kind for t in tiers.values()}
