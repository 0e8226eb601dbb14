"""Machines: each machine's current results side by side (the platform parity axis), the reference machine first."""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.parity import machine_parity
from measure.site.context import Md, RunLinks, RunRef, States, fmt_ci, md, provenance


@dataclass(frozen=True)
class MachineColumn:
    machine: Md
    cpu: Md
    arch: Md
    run: RunRef
    """The newest run its current results take a part from."""
    sources: Md
    """Each part's run and date."""


@dataclass(frozen=True)
class MachineRow:
    label: Md
    cells: tuple[Md, ...]


@dataclass(frozen=True)
class Machines:
    columns: tuple[MachineColumn, ...]
    timing: tuple[MachineRow, ...]
    framing: tuple[MachineRow, ...]
    outputs: tuple[MachineRow, ...]


def machines_page(states: States, links: RunLinks) -> Machines:
    ordered = [(m, states.analyses[m]) for m in states.machines]
    cols = tuple(
        MachineColumn(
            md(m),
            md(a.record.environment.machine.cpu),
            md(a.record.environment.machine.arch),
            links.ref(states.states[m].newest),
            provenance(states.states[m], links),
        )
        for m, a in ordered
    )
    names = list(dict.fromkeys(t.tier for _, a in ordered for t in a.tiers))
    timing = []
    for name in names:
        cells = []
        for _, a in ordered:
            t = next((t for t in a.tiers if t.tier == name), None)
            cells.append(fmt_ci(t.ms_per_token) if t else md("-"))
        timing.append(MachineRow(md(name), tuple(cells)))
    framing, outputs = [], []
    # each machine's framing part as it was measured: its outputs belong to that run's tier files and golden rows
    measured = {m: states.states[m].source("framing") or states.states[m].record for m in states.machines}
    for row in machine_parity(measured):
        framing.append(
            MachineRow(
                md(row.tier),
                tuple(md(f"{c.tier.argmax_agree}/{c.tier.argmax_total}" if c.tier else "-") for c in row.cells),
            )
        )
        outputs.append(MachineRow(md(f"{row.tier} ({row.precision})"), tuple(md(c.outputs) for c in row.cells)))
    return Machines(cols, tuple(timing), tuple(framing), tuple(outputs))
