"""Parity across runtimes and machines: do the same artifacts decode the same? Pure functions of records.

* runtime x precision: for each runtime leg, rows whose single-step decode
  no batched block changes, summed over the tiers of one kind and precision;
* runtime agreement: per runtime, the tiers whose greedy decodes equal Python
  onnxruntime's on every row, and the others;
* runtime parity: each other runtime's greedy decodes against Python
  onnxruntime's, token by token;
* machine parity: each machine's greedy decodes against the first machine
  that measured the same tier files on the same golden rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.record.model import FramingTier, Leg, Record

PRECISION_ORDER = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4")
"""Column order of precision tables; other precision labels follow, sorted."""


def ordered_precisions(found: set[str]) -> list[str]:
    return [p for p in PRECISION_ORDER if p in found] + sorted(found - set(PRECISION_ORDER))


@dataclass(frozen=True)
class Cell:
    """One runtime's tiers of one precision: rows framing leaves unchanged and the worst differences."""

    rows_same: int
    rows: int
    present_max_abs_diff: float
    logits_max_abs_diff: float
    unmeasured: int
    """Tiers of this precision the leg did not measure."""
    decodes: bool = False
    """A leg that replays no blocks (onnxruntime-genai): ``rows_same`` counts greedy decodes equal to Python's
    and ``logits_max_abs_diff`` is the worst difference from Python's logits on the runtime's own prefixes."""


@dataclass(frozen=True)
class MatrixRow:
    """The tiers of one kind and one precision, across the runtime columns."""

    kind: str
    """``seq2seq`` or ``causal`` (decoder-only)."""
    precision: str
    cells: tuple[Cell | str, ...]
    """One per leg, in the record's order: a :class:`Cell`, or why the leg measured none of these tiers."""


@dataclass(frozen=True)
class RuntimeMatrix:
    legs: tuple[Leg, ...]
    """The columns: Python onnxruntime first, then every other leg (WebGPU is a leg of its own)."""
    rows: tuple[MatrixRow, ...]
    parity: tuple[tuple[FramingTier, tuple[str, ...]], ...]
    """Per Python tier: its greedy-decode parity under each other runtime, as a sentence."""


KIND_ORDER = ("seq2seq", "causal")


def _cell(leg: Leg, names: set[str]) -> Cell | str:
    """One leg's tiers among ``names``, or the status that says why none was measured."""
    tiers = [t for t in leg.tiers if t.tier in names]
    measured = [t for t in tiers if t.measured]
    if not measured:
        if not leg.measured:
            return leg.status
        return tiers[0].status if tiers else "not measured"
    unmeasured = len(names) - len(measured)
    if all(t.genai is not None and not t.blocks for t in measured):
        return _decodes_cell(measured, unmeasured)
    return Cell(
        sum(t.rows_same for t in measured),
        sum(t.rows for t in measured),
        max(t.present_max_abs_diff for t in measured),
        max(t.logits_max_abs_diff for t in measured),
        unmeasured,
    )


def _parity_sentence(leg: Leg, ref: FramingTier) -> str:
    t = leg.tier(ref.tier)
    if t is None or not t.measured:
        return t.status if t else leg.status if not leg.measured else "-"
    if ref.output_ids is None:
        return "not comparable: the Python leg kept no token ids"
    return output_parity(ref, t)


def runtime_matrix(record: Record) -> RuntimeMatrix | None:
    """Rows by kind, then precision; a column per runtime leg. None for records with one runtime leg only.

    A leg that runs only one kind (onnxruntime-genai: decoder-only) counts only the tiers it could take: its
    seq2seq rows give those tiers' status ("skipped"), and no decoder-only cell counts them as missing."""
    legs = record.legs
    if len(legs) < 2:
        return None
    kind = {name: t.kind for name, t in record.tiers.items()}
    groups: dict[tuple[str, str], set[str]] = {}
    for t in legs[0].tiers:
        if t.measured:
            groups.setdefault((kind.get(t.tier, "seq2seq"), t.precision), set()).add(t.tier)
    order = {p: i for i, p in enumerate(ordered_precisions({p for _, p in groups}))}
    keys = sorted(groups, key=lambda k: (KIND_ORDER.index(k[0]) if k[0] in KIND_ORDER else 2, order[k[1]]))
    rows = tuple(MatrixRow(k, p, tuple(_cell(leg, groups[(k, p)]) for leg in legs)) for k, p in keys)
    parity = tuple((ref, tuple(_parity_sentence(leg, ref) for leg in legs[1:])) for ref in legs[0].tiers)
    return RuntimeMatrix(tuple(legs), rows, parity)


@dataclass(frozen=True)
class Agreement:
    """One runtime after Python onnxruntime: the tiers it decodes exactly as Python does, and the others."""

    leg: Leg
    same: tuple[str, ...]
    """Tiers whose greedy decode equals Python's on every golden row, token for token."""
    differ: tuple[tuple[str, int, int], ...]
    """(tier, rows equal, rows) where some row differs."""
    unmeasured: tuple[tuple[str, str], ...]
    """(tier, status) for the Python tiers this runtime did not decode, in kinds it decoded some tiers of."""
    kinds_run: tuple[str, ...] = ()
    """The kinds (``seq2seq``, ``causal``) it decoded some tier of."""
    kinds_not_run: tuple[tuple[str, str], ...] = ()
    """(kind, status) for a kind none of whose tiers it decoded (onnxruntime-genai takes no seq2seq model)."""


def runtime_agreement(record: Record) -> tuple[Agreement, ...]:
    """Per leg after Python onnxruntime, which tiers decode every row identically: the Overview's runtime line."""
    python = [t for t in record.python_tiers if t.measured and t.output_ids is not None]
    kind = {name: t.kind for name, t in record.tiers.items()}
    out = []
    for leg in record.legs[1:]:
        same, differ, unmeasured = _leg_decodes(leg, python)
        ran = {kind.get(n, "seq2seq") for n in (*same, *(d[0] for d in differ))}
        absent = {kind.get(n, "seq2seq"): status for n, status in unmeasured if kind.get(n, "seq2seq") not in ran}
        unmeasured = [(n, status) for n, status in unmeasured if kind.get(n, "seq2seq") in ran]
        kinds_run = tuple(k for k in KIND_ORDER if k in ran)
        out.append(Agreement(leg, tuple(same), tuple(differ), tuple(unmeasured), kinds_run, tuple(absent.items())))
    return tuple(out)


def _leg_decodes(
    leg: Leg, python: list[FramingTier]
) -> tuple[list[str], list[tuple[str, int, int]], list[tuple[str, str]]]:
    """One leg's tiers against Python's decodes: those identical on every row, those that differ (rows equal, rows),
    and those it did not decode (with the status saying why)."""
    same: list[str] = []
    differ: list[tuple[str, int, int]] = []
    unmeasured: list[tuple[str, str]] = []
    for ref in python:
        t = leg.tier(ref.tier)
        if t is None or not t.measured or t.output_ids is None:
            unmeasured.append((ref.tier, t.status if t else leg.status if not leg.measured else "not measured"))
            continue
        assert ref.output_ids is not None
        equal = sum(x == y for x, y in zip(ref.output_ids, t.output_ids, strict=False))
        if equal == len(ref.output_ids) == len(t.output_ids):
            same.append(ref.tier)
        else:
            differ.append((ref.tier, equal, len(ref.output_ids)))
    return same, differ, unmeasured


def rows_as_python(record: Record, tier: str) -> tuple[tuple[str, str], ...]:
    """Per leg after Python onnxruntime: the rows ``tier`` decodes as Python does ("64/64"), or why there is no
    count ("not measured"; "-" without token ids to compare)."""
    python = record.legs[0].tier(tier) if record.legs else None
    cells = []
    for leg in record.legs[1:]:
        t = leg.tier(tier)
        if not leg.measured or t is None or not t.measured:
            cells.append((leg.name, "not measured"))
        elif python is not None and t.output_ids is not None and python.output_ids is not None:
            equal = sum(x == y for x, y in zip(python.output_ids, t.output_ids, strict=False))
            cells.append((leg.name, f"{equal}/{len(python.output_ids)}"))
        else:
            cells.append((leg.name, "-"))
    return tuple(cells)


def _decodes_cell(measured: list[FramingTier], unmeasured: int) -> Cell:
    """A leg without framing blocks: its greedy decodes and logits against Python onnxruntime's."""
    same = sum(t.genai.equal_rows for t in measured if t.genai)
    logits = max(t.genai.logits_max_abs_diff for t in measured if t.genai)
    return Cell(same, sum(len(t.outputs) for t in measured), 0.0, logits, unmeasured, decodes=True)


def output_parity(ref: FramingTier, other: FramingTier) -> str:
    """Rows decoded identically to the reference, and where the first difference is.

    Token ids when both carry them (the first divergent token), texts otherwise.
    """
    ids = ref.output_ids is not None and other.output_ids is not None
    a = ref.output_ids if ids else ref.outputs
    b = other.output_ids if ids else other.outputs
    pairs = list(zip(a or (), b or (), strict=False))
    same = sum(x == y for x, y in pairs)
    text = f"{same}/{len(pairs)} rows identical"
    for row, (x, y) in enumerate(pairs, start=1):
        if x != y:
            at = next((i for i, (u, v) in enumerate(zip(x, y, strict=False)) if u != v), min(len(x), len(y)))
            unit = "token" if ids else "character"
            return f"{text}; first divergence: row {row}, {unit} {at + 1}"
    return text


@dataclass(frozen=True)
class MachineCell:
    """One machine's framing facts for one tier, and its greedy decodes against the reference machine."""

    tier: FramingTier | None
    outputs: str


@dataclass(frozen=True)
class MachineParity:
    tier: str
    precision: str
    cells: tuple[MachineCell, ...]
    """One per machine, in the order given."""


def machine_parity(latest: dict[str, Record]) -> list[MachineParity]:
    """Per tier (by precision, then name): each machine against the first that has the tier."""
    precision: dict[str, str] = {}
    for r in latest.values():
        for name, entry in r.tiers.items():
            precision.setdefault(name, entry.precision)
    names = list(dict.fromkeys(t.tier for r in latest.values() for t in r.python_tiers))
    out = []
    for name in sorted(names, key=lambda n: (precision.get(n, "?"), n)):
        reference: tuple[Record, FramingTier] | None = None
        cells = []
        for r in latest.values():
            t = next((t for t in r.python_tiers if t.tier == name), None)
            if t is None:
                cells.append(MachineCell(None, "-"))
                continue
            if reference is None:
                reference = (r, t)
                cells.append(MachineCell(t, f"reference ({len(t.outputs)} rows)"))
                continue
            ref_record, ref = reference
            same_files = r.tiers[name].file_hashes == ref_record.tiers[name].file_hashes if name in r.tiers else False
            if not same_files or r.golden.sha256 != ref_record.golden.sha256:
                cells.append(MachineCell(t, "other artifacts or golden rows: not comparable"))
            else:
                cells.append(MachineCell(t, output_parity(ref, t)))
        out.append(MachineParity(name, precision.get(name, "?"), tuple(cells)))
    return out
