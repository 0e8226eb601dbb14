"""Machines: the newest complete record of each machine side by side (the platform parity axis)."""

from __future__ import annotations

from dataclasses import dataclass

from measure.parity import machine_parity
from measure.report import Analysis
from measure.site.context import Md, RunLinks, RunRef, fmt_ci, md


@dataclass(frozen=True)
class MachineColumn:
    machine: Md
    cpu: Md
    arch: Md
    run: RunRef


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


def machines_page(latest: dict[str, Analysis], links: RunLinks) -> Machines:
    ordered = sorted(latest.items())
    cols = tuple(
        MachineColumn(
            md(m),
            md(a.record.environment.machine.cpu),
            md(a.record.environment.machine.arch),
            links.ref(a.record),
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
    for row in machine_parity({m: a.record for m, a in ordered}):
        framing.append(
            MachineRow(
                md(row.tier),
                tuple(md(f"{c.tier.argmax_agree}/{c.tier.argmax_total}" if c.tier else "-") for c in row.cells),
            )
        )
        outputs.append(MachineRow(md(f"{row.tier} ({row.precision})"), tuple(md(c.outputs) for c in row.cells)))
    return Machines(cols, tuple(timing), tuple(framing), tuple(outputs))
