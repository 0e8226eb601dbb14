"""Every option of one ``measure run``, resolved into one frozen value before anything runs (as hyperfine's
``Options``): the suite config with ``--instructions`` applied, the suites, the results tree, and the budget with
where it came from (``--budget`` over the config's ``[run] budget``). The runner reads this value, never a flag."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from measure.errors import MeasureError
from measure.suites.config import SUITES, SuiteConfig, load_config
from measure.suites.plan import parse_budget


@dataclass(frozen=True)
class Budget:
    """The wall time a run plans itself into."""

    seconds: float
    given: str | None = None
    """Where it came from, as a refusal names it: None for the ``--budget`` flag (named ``--budget 1s``), else the
    config file and its key (``<path>: [run] budget = "1s"``)."""


@dataclass(frozen=True)
class RunOptions:
    """One run, resolved: what :func:`measure.suites.runner.run` measures and where it writes."""

    config: SuiteConfig
    """The suite config as the run uses it (``--instructions`` enables its ``[instructions]`` table)."""
    suites: tuple[str, ...]
    """The suites asked for, in the order given, each once."""
    results: Path
    budget: Budget | None = None
    """None: no plan, the run measures exactly what the config asks."""
    argv: tuple[str, ...] | None = None
    """The command line the record's environment states."""
    fidelity_row_s: Mapping[str, float] = field(default_factory=dict)
    """What a caller saw the fidelity pass take per golden row and tier (:attr:`Asks.fidelity_row_s`)."""

    @property
    def fidelity(self) -> bool:
        """Whether the framing suite's fidelity pass runs (it rides on the framing suite)."""
        return "framing" in self.suites and self.config.framing.fidelity

    @property
    def first(self) -> str:
        """The suite whose decode length the up-front checks load the tiers with."""
        return "wallclock" if "wallclock" in self.suites else "framing"


def run_options(
    config: SuiteConfig,
    suites: Iterable[str] | None,
    results: Path,
    *,
    budget_s: float | None = None,
    instructions: bool = False,
    argv: Iterable[str] | None = None,
) -> RunOptions:
    """The options of a run of ``config``: ``suites`` checked (None: every suite), ``--instructions`` merged into
    the config, and the budget: ``budget_s`` (``--budget``, parsed) else the config's ``[run] budget``."""
    chosen = tuple(dict.fromkeys(SUITES if suites is None else suites))
    for suite in chosen:
        if suite not in SUITES:
            raise MeasureError(f"--suite {suite!r}: expected one of {', '.join(SUITES)}")
    if instructions:
        config = replace(config, instructions=replace(config.instructions, enabled=True))
    budget = None if budget_s is None else Budget(budget_s)
    if budget is None and config.run.budget is not None and config.run.budget_s is not None:
        budget = Budget(config.run.budget_s, f"{config.path}: [run] budget = {json.dumps(config.run.budget)}")
    return RunOptions(config, chosen, results, budget, None if argv is None else tuple(argv))


def options_from_args(
    config_path: Path | None,
    suites: Iterable[str] | None,
    results: Path,
    budget: str | None,
    instructions: bool,
    argv: Iterable[str],
) -> RunOptions:
    """``measure run``'s flags resolved in the order their errors are reported: ``--budget``, then the config."""
    budget_s = None if budget is None else parse_budget(budget, "--budget")
    config = load_config(config_path)
    return run_options(config, suites, results, budget_s=budget_s, instructions=instructions, argv=argv)
