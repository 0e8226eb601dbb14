"""Typed page contexts: every number computed, every verdict decided, every string escaped.

The templates only lay these out. Untrusted text becomes :class:`Md` through
:func:`md` here and nowhere else; the Jinja environment refuses any plain
``str`` that reaches a template.
"""

from __future__ import annotations

import difflib
import html
import json
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from measure.analysis import (
    PairTiming,
    TierTiming,
    framing_legs,
    median_ms_per_token,
    pair_timings,
    python_tiers,
    ratio,
    row_agreement,
    tier_timings,
)
from measure.calibration import calibrate
from measure.comparison import compare
from measure.policy import policy_from
from measure.site import charts
from measure.site.escape import Md, json_for_attribute, md, pre, slug, trusted
from measure.stats import Estimate
from measure.verdicts import Verdict, verdicts

ADMONITION = {
    "success": "success",
    "failure": "failure",
    "warning": "warning",
    "inconclusive": "warning",
    "info": "info",
}


@dataclass(frozen=True)
class Run:
    """One loaded record and what every page says about it."""

    doc: dict[str, Any]
    path: Path
    run_id: str
    machine_id: str
    started_at: str
    date: str
    complete: bool

    @classmethod
    def of(cls, doc: dict[str, Any], path: Path) -> Run:
        return cls(
            doc,
            path,
            doc["run_id"],
            doc["machine_id"],
            doc["started_at"],
            doc["started_at"][:10],
            bool(doc["complete"]),
        )


@dataclass(frozen=True)
class Analysed:
    """A run with its derived numbers, computed once per build."""

    run: Run
    tiers: tuple[TierTiming, ...]
    pairs: tuple[PairTiming, ...]
    verdicts: tuple[Verdict, ...]


def analyse(run: Run, intervals: bool = True) -> Analysed:
    """``intervals=False`` for records only the history and run list need (verdicts keep their intervals)."""
    tiers, pairs = tuple(tier_timings(run.doc, intervals)), tuple(pair_timings(run.doc, intervals))
    return Analysed(run, tiers, pairs, tuple(verdicts(run.doc, tiers=tiers, pairs=pairs)))


# ------------------------------------------------------------------ pieces


@dataclass(frozen=True)
class RunRef:
    run_id: Md
    machine_id: Md
    date: Md
    started_at: Md
    link: Md
    """Relative link from a page under results/ to the run's page."""
    state: Md
    """"complete" or "incomplete"."""


def run_ref(run: Run, prefix: str = "runs/") -> RunRef:
    return RunRef(
        md(run.run_id),
        md(run.machine_id),
        md(run.date),
        md(run.started_at),
        trusted(f"{prefix}{run_slug(run)}.md"),
        md("complete" if run.complete else "incomplete"),
    )


def run_slug(run: Run) -> str:
    """File-name-safe page name of a run (ids are checked by the schema, the machine joins them)."""
    return f"{run.machine_id}--{run.run_id}"


def fmt(x: float | None, digits: int = 3) -> Md:
    return md("-" if x is None else f"{x:.{digits}f}")


def fmt_ci(e: Estimate | None, digits: int = 3) -> Md:
    return md("-" if e is None else f"{e.value:.{digits}f} [{e.lo:.{digits}f}, {e.hi:.{digits}f}]")


def fmt_sci(x: float | None) -> Md:
    return md("-" if x is None else f"{x:.2e}")


@dataclass(frozen=True)
class Card:
    """One verdict as an admonition."""

    kind: Md
    title: Md
    rule: Md
    measured: Md
    run: RunRef
    gate: bool
    subject: Md
    outcome: Md
    answer: Md


def card(v: Verdict, run: Run, prefix: str = "runs/") -> Card:
    if v.lo is not None and v.hi is not None and v.value is not None:
        measured = f"{v.value:.4g}, 95% interval [{v.lo:.4g}, {v.hi:.4g}]"
    elif v.value is not None:
        measured = f"{v.value:.4g}"
    else:
        measured = "-"
    label = "Inconclusive" if v.outcome == "inconclusive" else v.outcome.capitalize()
    return Card(
        md(ADMONITION[v.outcome]),
        md(f"{label} — {v.subject}: {v.answer}"),
        md(v.rule),
        md(measured),
        run_ref(run, prefix),
        v.gate,
        md(v.subject),
        md(v.outcome),
        md(v.answer),
    )


@dataclass(frozen=True)
class Topic:
    question: Md
    anchor: Md
    cards: tuple[Card, ...]


def topics(a: Analysed, prefix: str = "runs/") -> tuple[Topic, ...]:
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in a.verdicts:
        groups[v.topic].append(v)
    return tuple(
        Topic(md(vs[0].question), slug(f"{topic}-{a.run.date}"), tuple(card(v, a.run, prefix) for v in vs))
        for topic, vs in groups.items()
    )


@dataclass(frozen=True)
class Chart:
    id: Md
    title: Md
    figure: Md
    """Plotly figure JSON, escaped for the chart element's data-figure attribute."""


def _inert(value: Any) -> Any:
    """Plotly renders a subset of HTML in names and labels: escape untrusted text in them."""
    if isinstance(value, str):
        return html.escape(value, quote=False)
    if isinstance(value, list):
        return [_inert(v) for v in value]
    return value


def chart(chart_id: str, title: str, figure: dict[str, Any]) -> Chart:
    for trace in figure["data"]:
        for key in ("name", "x", "text"):
            if key in trace:
                trace[key] = _inert(trace[key])
    return Chart(slug(chart_id), md(title), json_for_attribute(json.dumps(figure, separators=(",", ":"))))


# ------------------------------------------------------------------- pages


@dataclass(frozen=True)
class Overview:
    current: RunRef | None
    machines: tuple[RunRef, ...]
    topics: tuple[Topic, ...]
    records: int


@dataclass(frozen=True)
class TierRow:
    tier: Md
    role: Md
    precision: Md
    tokens: int
    total_s: Md
    ms_per_token: Md
    tokens_per_s: Md
    ratio: Md
    exponent: Md
    overhead: Md


@dataclass(frozen=True)
class PairRow:
    case: Md
    k: int
    acceptance: Md
    mean_length: Md
    by_position: Md
    cost_ratio: Md
    predicted: Md
    observed: Md
    observed_over_predicted: Md


@dataclass(frozen=True)
class Wallclock:
    run: RunRef | None
    anchor: Md
    tiers: tuple[TierRow, ...]
    pairs: tuple[PairRow, ...]
    tier_charts: tuple[Chart, ...]
    pair_charts: tuple[Chart, ...]
    repeats: int
    warmup: int


@dataclass(frozen=True)
class DiffRow:
    pair: Md
    line: int
    source: Md
    speculative: Md
    greedy: Md
    """Both outputs with the differing characters inside <mark>."""


@dataclass(frozen=True)
class AcceptRow:
    pair: Md
    kind: Md
    k: int
    probe: Md
    runtime: Md
    preserved: Md


@dataclass(frozen=True)
class MatrixRow:
    tier: Md
    precision: Md
    cells: tuple[Md, ...]
    worst: Md
    logits: Md
    exact: Md
    cer: Md


@dataclass(frozen=True)
class MissRow:
    tier: Md
    line: int
    source: Md
    expected: Md
    output: Md


@dataclass(frozen=True)
class RuntimeRow:
    """One runtime leg across the precision columns: single == batched rows and the worst difference."""

    runtime: Md
    cells: tuple[Md, ...]


@dataclass(frozen=True)
class LegNote:
    """A leg or one of its tiers that was not measured, and why."""

    runtime: Md
    subject: Md
    status: Md
    reason: Md


@dataclass(frozen=True)
class RuntimeParity:
    """One tier's plain greedy decodes under another runtime against Python onnxruntime's."""

    tier: Md
    cells: tuple[Md, ...]


@dataclass(frozen=True)
class Runtimes:
    precisions: tuple[Md, ...]
    matrix: tuple[RuntimeRow, ...]
    others: tuple[Md, ...]
    """Column heads of ``parity``: every runtime but Python onnxruntime."""
    parity: tuple[RuntimeParity, ...]
    notes: tuple[LegNote, ...]


@dataclass(frozen=True)
class Framing:
    run: RunRef | None
    anchor: Md
    blocks: tuple[Md, ...]
    matrix: tuple[MatrixRow, ...]
    acceptance: tuple[AcceptRow, ...]
    differing: tuple[DiffRow, ...]
    charts: tuple[Chart, ...]
    misses: tuple[MissRow, ...] = ()
    """Golden rows a tier decodes differently from the expected output (first 20 per tier)."""
    runtimes: Runtimes | None = None
    """The runtime x precision matrix; None for records with one leg only."""


def marked(a: str, b: str) -> tuple[Md, Md]:
    """Escape both strings and wrap the characters where they differ in <mark>."""
    out_a, out_b = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        sa, sb = md(a[i1:i2]), md(b[j1:j2])
        if op == "equal":
            out_a.append(sa)
            out_b.append(sb)
        else:
            out_a.append(f"<mark>{sa}</mark>" if sa else "")
            out_b.append(f"<mark>{sb}</mark>" if sb else "")
    return trusted("".join(out_a)), trusted("".join(out_b))


def wallclock_page(a: Analysed | None) -> Wallclock:
    if a is None or not a.tiers:
        return Wallclock(None if a is None else run_ref(a.run), slug("wallclock"), (), (), (), (), 0, 0)
    rows = tuple(
        TierRow(
            md(t.tier),
            md(t.role),
            md(t.precision),
            t.tokens,
            fmt_ci(t.total_s),
            fmt_ci(t.ms_per_token),
            fmt_ci(t.tokens_per_s, 0),
            fmt_ci(t.ratio_vs_plain, 2),
            fmt_ci(t.exponent, 2),
            md(f"{t.overhead:.1%}"),
        )
        for t in a.tiers
    )
    pairs = tuple(
        PairRow(
            md(p.pair),
            p.k,
            fmt(p.acceptance, 4),
            fmt(p.mean_accepted_length, 2),
            md(" ".join("-" if x is None else f"{x:.2f}" for x in p.acceptance_by_position)),
            fmt(p.cost_ratio, 2),
            fmt(p.predicted_speedup, 2),
            fmt_ci(p.observed_speedup, 2),
            fmt(p.observed_over_predicted, 2),
        )
        for p in a.pairs
    )
    tier_charts = (
        chart("wallclock-ms-per-token", "ms per token by tier (median, 95% CI)", charts.ms_per_token(a.tiers)),
        chart("wallclock-growth", "row time against output length (log-log)", charts.growth(a.run.doc, a.tiers)),
    )
    pair_charts = ()
    if a.pairs:
        pair_charts = (
            chart("wallclock-speculative", "predicted vs observed speedup across k", charts.speedup(a.pairs)),
            chart("wallclock-acceptance", "acceptance by draft position", charts.by_position(a.pairs)),
        )
    wc = a.run.doc["wallclock"]
    return Wallclock(
        run_ref(a.run),
        slug(f"wallclock-{a.run.date}"),
        rows,
        pairs,
        tier_charts,
        pair_charts,
        wc["repeats_done"],
        wc["warmup"],
    )


PRECISION_ORDER = ("fp32", "fp16", "int8-dynamic", "int8-static", "int4")
"""Column order of the runtime matrix; other precision labels follow, sorted."""


def _leg_name(leg: dict[str, Any]) -> str:
    version = f" {leg['version']}" if leg.get("version") else ""
    return f"{leg['runtime']}{version} ({leg['language']})"


def runtimes_section(doc: dict[str, Any]) -> Runtimes | None:
    """Runtime x precision: rows of single-step == batched decodes per cell, and each runtime's greedy parity."""
    legs = framing_legs(doc)
    if len(legs) < 2:
        return None
    found = {t["precision"] for leg in legs for t in leg["tiers"] if t["status"] == "measured"}
    precisions = [p for p in PRECISION_ORDER if p in found] + sorted(found - set(PRECISION_ORDER))
    matrix, notes = [], []
    for leg in legs:
        name = _leg_name(leg)
        if leg["status"] != "measured" and not leg["tiers"]:
            notes.append(LegNote(md(name), md("every tier"), md(leg["status"]), md(leg.get("reason", ""))))
        cells = []
        for precision in precisions:
            tiers = [t for t in leg["tiers"] if t.get("precision") == precision]
            measured = [row_agreement(t) for t in tiers if t["status"] == "measured"]
            if not measured:
                cells.append(md(leg["status"] if leg["status"] != "measured" else "not measured"))
                continue
            same, rows = sum(x.rows_same for x in measured), sum(x.rows for x in measured)
            worst = max(x.present_max_abs_diff for x in measured)
            logits = max(x.logits_max_abs_diff for x in measured)
            missing = len(tiers) - len(measured)
            extra = f" ({missing} tier{'s' if missing > 1 else ''} not measured)" if missing else ""
            text = f"{same}/{rows} rows · present ≤ {worst:.1e} · logits ≤ {logits:.1e}{extra}"
            cells.append(md(text))
        matrix.append(RuntimeRow(md(name), tuple(cells)))
        notes.extend(
            LegNote(md(name), md(t["tier"]), md(t["status"]), md(t.get("reason", "")))
            for t in leg["tiers"]
            if t["status"] != "measured"
        )
    python = {t["tier"]: t for t in legs[0]["tiers"]}
    parity = []
    for name, ref in python.items():
        cells = []
        for leg in legs[1:]:
            t = next((t for t in leg["tiers"] if t["tier"] == name), None)
            if t is None or t["status"] != "measured":
                cells.append(md(t["status"] if t else leg["status"] if leg["status"] != "measured" else "-"))
            elif "output_ids" not in ref:
                cells.append(md("not comparable: the Python leg kept no token ids"))
            else:
                cells.append(md(output_parity(ref, t)))
        parity.append(RuntimeParity(md(f"{name} ({ref['precision']})"), tuple(cells)))
    others = tuple(md(_leg_name(leg)) for leg in legs[1:])
    return Runtimes(tuple(md(p) for p in precisions), tuple(matrix), others, tuple(parity), tuple(notes))


def framing_page(a: Analysed | None) -> Framing:
    fr = (a.run.doc.get("framing") if a else None) or None
    if a is None or not fr:
        return Framing(None if a is None else run_ref(a.run), slug("framing"), (), (), (), (), ())
    blocks = tuple(md(f"k={b}") for b in fr["blocks"])
    matrix = tuple(
        MatrixRow(
            md(t["tier"]),
            md(t["precision"]),
            tuple(md(f"{b['argmax_agree']}/{b['argmax_total']}") for b in t["blocks"]),
            fmt_sci(max(b["present_max_abs_diff"] for b in t["blocks"])),
            fmt_sci(max(b["logits_max_abs_diff"] for b in t["blocks"])),
            md(f"{t['quality']['exact']}/{t['quality']['rows']}"),
            fmt(t["quality"]["cer_mean"], 4),
        )
        for t in python_tiers(a.run.doc)
    )
    acceptance = tuple(
        AcceptRow(
            md(f"{x['drafter']}->{x['verifier']}"),
            md("self" if x["self"] else "pair"),
            x["k"],
            fmt(ratio(x["probe"]), 4),
            fmt(ratio(x["runtime"]), 4),
            md(f"{x['preserved']}/{x['rows']}"),
        )
        for x in fr["acceptance"]
    )
    differing = []
    for x in fr["acceptance"]:
        for d in x["differing"]:
            spec, plain = marked(d["speculative"], d["greedy"])
            differing.append(DiffRow(md(f"{x['drafter']}->{x['verifier']}"), d["line"], md(d["input"]), spec, plain))
    misses = []
    for t in python_tiers(a.run.doc):
        for x in t["quality"].get("misses", [])[:20]:
            expected, output = marked(x["expected"], x["output"])
            misses.append(MissRow(md(t["tier"]), x["line"], md(x["input"]), expected, output))
    found = (
        chart(
            "framing-layers",
            "present key/value difference per layer, single-step vs batched (log)",
            charts.layer_diffs(python_tiers(a.run.doc)),
        ),
    )
    return Framing(
        run_ref(a.run),
        slug(f"framing-{a.run.date}"),
        blocks,
        matrix,
        acceptance,
        tuple(differing),
        found,
        tuple(misses),
        runtimes_section(a.run.doc),
    )


@dataclass(frozen=True)
class Span:
    """Consecutive records that gave one verdict the same outcome."""

    kind: Md
    answer: Md
    first: Md
    last: Md
    records: int
    run: RunRef
    superseded: Md | None
    """Date of the record that changed the verdict, or None for the current entry."""


@dataclass(frozen=True)
class Series:
    question: Md
    subject: Md
    machine: Md
    anchor: Md
    spans: tuple[Span, ...]
    """Newest first."""


@dataclass(frozen=True)
class Change:
    """A wall-clock case that a record measured faster or slower than the record before it."""

    case: Md
    outcome: Md
    ratio: Md
    """NEW / BASE ms/token with its 95% interval."""
    base: RunRef
    new: RunRef
    commit: Md


@dataclass(frozen=True)
class MetricHistory:
    """One machine's ms/token over its records, and the changes the calibrated gate calls."""

    machine: Md
    anchor: Md
    chart: Chart
    records: int
    compared: int
    """Consecutive record pairs compared (same golden rows, a wall-clock case in common)."""
    tolerance: Md
    calibration: Md
    """Where the tolerance comes from: the policy, or the A/A pairs and their worst drift."""
    changes: tuple[Change, ...]
    """Newest first."""


@dataclass(frozen=True)
class History:
    metrics: tuple[MetricHistory, ...]
    series: tuple[Series, ...]
    records: int


def _short(doc: dict[str, Any]) -> str:
    git = doc["environment"]["git"]
    if not git.get("commit"):
        return "no commit"
    return git["commit"][:10] + (" (dirty)" if git.get("dirty") else "")


def metric_history(machine: str, runs: list[Run]) -> MetricHistory:
    """ms/token per greedy tier over time; each record compared with the one before (Holm, A/A tolerance)."""
    runs = [r for r in runs if (r.doc.get("wallclock") or {}).get("cases")]
    cal = calibrate([r.doc for r in runs], machine)
    series: dict[str, list[tuple[str, float, str]]] = defaultdict(list)
    for r in runs:
        label = f"{r.run_id}, commit {_short(r.doc)}"
        when = r.started_at.replace("T", " ").removesuffix("Z")  # Plotly's date axis: UTC, no zone suffix
        for case, c in sorted(r.doc["wallclock"]["cases"].items()):
            if c["kind"] == "greedy" and c["wall_s"]:
                series[case].append((when, median_ms_per_token(c), label))
    policy = policy_from(runs[-1].doc["config"].get("policy") if runs else None)
    tol = max(policy.compare_tolerance, cal.tolerance or 0.0)
    changes, compared, medians = [], 0, {}
    for base, new in pairwise(runs):
        if base.doc["golden"]["sha256"] != new.doc["golden"]["sha256"]:
            continue
        found = compare(base.doc, new.doc, tolerance=cal.tolerance, medians=medians)
        if not found:
            continue
        compared += 1
        changes += [
            Change(md(c.case), md(c.outcome), fmt_ci(c.ratio), run_ref(base), run_ref(new), md(_short(new.doc)))
            for c in found
            if c.outcome in ("faster", "slower")
        ]
    if cal.tolerance is None:
        source = "the policy's compare_tolerance (no A/A pairs yet: two consecutive records of one clean commit)"
    else:
        run_id, case, r = cal.worst or ("-", "-", 1.0)
        source = (
            f"A/A calibration: {len(cal.pairs)} pair(s) of same-build records, {cal.values} case ratios, "
            f"q{cal.quantile:g} of |ratio - 1| = {cal.tolerance:.1%} (worst {case} {r:.3f} in {run_id}); "
            "never narrower than the policy"
        )
    return MetricHistory(
        md(machine),
        slug(f"ms-per-token-{machine}"),
        chart(f"history-{machine}", f"ms per token over time on {machine}", charts.over_time(dict(series))),
        len(runs),
        compared,
        md(f"±{tol:.1%}"),
        md(source),
        tuple(reversed(changes)),
    )


def history_page(analysed: list[Analysed]) -> History:
    seq: dict[tuple[str, str, str], list[tuple[Analysed, Verdict]]] = defaultdict(list)
    by_machine: dict[str, list[Run]] = defaultdict(list)
    for a in sorted(analysed, key=lambda a: (a.run.started_at, a.run.run_id)):
        if not a.run.complete:
            continue
        by_machine[a.run.machine_id].append(a.run)
        for v in a.verdicts:
            seq[(a.run.machine_id, v.topic, v.subject)].append((a, v))
    series = []
    for (machine, topic, subject), items in seq.items():
        spans: list[list[tuple[Analysed, Verdict]]] = []
        for item in items:
            if spans and spans[-1][-1][1].outcome == item[1].outcome:
                spans[-1].append(item)
            else:
                spans.append([item])
        out = []
        for i, span in enumerate(spans):
            later = spans[i + 1][0][0].run.date if i + 1 < len(spans) else None
            first, last = span[0][0].run, span[-1][0].run
            out.append(
                Span(
                    md(ADMONITION[span[-1][1].outcome]),
                    md(span[-1][1].answer),
                    md(first.date),
                    md(last.date),
                    len(span),
                    run_ref(last),
                    md(later) if later else None,
                )
            )
        question = items[0][1].question
        series.append(
            Series(md(question), md(subject), md(machine), slug(f"{topic}-{subject}-{machine}"), tuple(reversed(out)))
        )
    metrics = tuple(metric_history(m, runs) for m, runs in sorted(by_machine.items()))
    return History(metrics, tuple(series), sum(1 for a in analysed if a.run.complete))


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


def _precision_of(latest: dict[str, Analysed], tier: str) -> str:
    docs = (a.run.doc for a in latest.values() if tier in a.run.doc["tiers"])
    return next((d["tiers"][tier]["fingerprint"]["precision"] for d in docs), "?")


def _golden_of(latest: dict[str, Analysed], machine: str) -> str:
    return latest[machine].run.doc["golden"]["sha256"]


def output_parity(ref: dict[str, Any], other: dict[str, Any]) -> str:
    """Rows decoded identically to the reference machine, and where the first difference is.

    Token ids when both records carry them (the first divergent token), texts otherwise.
    """
    key = "output_ids" if "output_ids" in ref and "output_ids" in other else "outputs"
    pairs = list(zip(ref[key], other[key], strict=False))
    same = sum(x == y for x, y in pairs)
    text = f"{same}/{len(pairs)} rows identical"
    for row, (x, y) in enumerate(pairs, start=1):
        if x != y:
            at = next((i for i, (u, v) in enumerate(zip(x, y, strict=False)) if u != v), min(len(x), len(y)))
            unit = "token" if key == "output_ids" else "character"
            return f"{text}; first divergence: row {row}, {unit} {at + 1}"
    return text


def machines_page(latest: dict[str, Analysed]) -> Machines:
    cols = tuple(
        MachineColumn(
            md(m),
            md(a.run.doc["environment"]["machine"]["cpu"]),
            md(a.run.doc["environment"]["machine"]["arch"]),
            run_ref(a.run),
        )
        for m, a in sorted(latest.items())
    )
    names = list(dict.fromkeys(t.tier for a in latest.values() for t in a.tiers))
    timing = []
    for name in names:
        cells = []
        for _, a in sorted(latest.items()):
            t = next((t for t in a.tiers if t.tier == name), None)
            cells.append(fmt_ci(t.ms_per_token) if t else md("-"))
        timing.append(MachineRow(md(name), tuple(cells)))
    framing, outputs = [], []
    fnames = list(dict.fromkeys(t["tier"] for a in latest.values() for t in python_tiers(a.run.doc)))
    reference: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {}
    for name in sorted(fnames, key=lambda n: (_precision_of(latest, n), n)):
        cells, out_cells = [], []
        for machine, a in sorted(latest.items()):
            t = next((t for t in python_tiers(a.run.doc) if t["tier"] == name), None)
            if t is None:
                cells.append(md("-"))
                out_cells.append(md("-"))
                continue
            agree = sum(b["argmax_agree"] for b in t["blocks"])
            total = sum(b["argmax_total"] for b in t["blocks"])
            cells.append(md(f"{agree}/{total}"))
            artifacts = tuple(f["sha256"] for f in a.run.doc["tiers"][name]["fingerprint"]["files"])
            ref_machine, ref, ref_artifacts = reference.setdefault(name, (machine, t, artifacts))
            if ref_machine == machine:
                out_cells.append(md(f"reference ({len(t['outputs'])} rows)"))
            elif artifacts != ref_artifacts or a.run.doc["golden"]["sha256"] != _golden_of(latest, ref_machine):
                out_cells.append(md("other artifacts or golden rows: not comparable"))
            else:
                out_cells.append(md(output_parity(ref, t)))
        label = f"{name} ({_precision_of(latest, name)})"
        framing.append(MachineRow(md(name), tuple(cells)))
        outputs.append(MachineRow(md(label), tuple(out_cells)))
    return Machines(cols, tuple(timing), tuple(framing), tuple(outputs))


@dataclass(frozen=True)
class Setting:
    name: Md
    value: Md


@dataclass(frozen=True)
class Methods:
    run: RunRef | None
    settings: tuple[Setting, ...]
    policy: tuple[Setting, ...]


def methods_page(a: Analysed | None) -> Methods:
    if a is None:
        return Methods(None, (), ())
    cfg = a.run.doc["config"]
    wc, fr, session = cfg["wallclock"], cfg["framing"], cfg["session"]
    settings = [
        ("golden rows", f"{a.run.doc['golden']['rows']} rows, sha256 {a.run.doc['golden']['sha256']}"),
        ("warm-up passes", wc["warmup"]),
        ("timed repeats (interleaved)", wc["repeats"]),
        ("speculative k swept", ", ".join(map(str, wc["k"]))),
        ("bootstrap", f"{wc['bootstrap']} resamples, seed {wc['seed']}, percentile 95% intervals"),
        ("framing blocks", ", ".join(map(str, fr["k"])) + (", whole prefix" if fr["whole_prefix"] else "")),
        ("acceptance k", fr["probe_k"]),
        ("session", ", ".join(f"{k} {v}" for k, v in session.items())),
        *(
            (
                f"runtime leg {i + 1}",
                f"{_leg_name(leg)}{' on ' + leg['host'] if leg.get('host') else ''}: {leg['status']}",
            )
            for i, leg in enumerate(framing_legs(a.run.doc))
        ),
    ]
    policy = policy_from(cfg.get("policy"))
    return Methods(
        run_ref(a.run),
        tuple(Setting(md(k), md(v)) for k, v in settings),
        tuple(Setting(md(k), md(v)) for k, v in vars(policy).items()),
    )


@dataclass(frozen=True)
class FileRow:
    tier: Md
    name: Md
    bytes: int
    sha256: Md


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


def run_page(a: Analysed) -> RunPage:
    doc = a.run.doc
    env = doc["environment"]
    m = env["machine"]
    git = env["git"]
    environment = [
        ("machine id", doc["machine_id"]),
        ("cpu", f"{m['cpu']} ({m['arch']}, {m['cores']} cores)"),
        ("memory", f"{(m.get('memory_bytes') or 0) / 2**30:.1f} GiB"),
        ("os", m.get("platform", m["os"])),
        ("python", env["python"]),
        ("onnxruntime", f"{env['onnxruntime']} ({', '.join(env['onnxruntime_providers'])})"),
        ("numpy / tokenizers", f"{env['numpy']} / {env.get('tokenizers')}"),
        ("git", f"{git['commit'] or 'not a git checkout'}{' (dirty)' if git['dirty'] else ''}"),
        ("measure", doc["tool"]["version"]),
        ("schema", doc["schema_version"]),
        ("started / finished", f"{doc['started_at']} / {doc['finished_at'] or 'not finished'}"),
    ]
    tiers = [
        (
            n,
            f"{t['role']}, {t['fingerprint']['precision']}, {t['fingerprint']['layout']} layout, "
            f"{t['fingerprint']['layers']} layers",
        )
        for n, t in doc["tiers"].items()
    ]
    files = tuple(
        FileRow(md(n), md(f["name"]), f["bytes"], md(f["sha256"]))
        for n, t in doc["tiers"].items()
        for f in t["fingerprint"]["files"]
    )
    config = doc["config"]
    command = ["measure", "run", "--config", str(config.get("path", "suite.toml"))]
    for s in doc["suites"]:
        command += ["--suite", s]
    return RunPage(
        run_ref(a.run, ""),
        tuple(Setting(md(k), md(v)) for k, v in environment),
        tuple(Setting(md(k), md(v)) for k, v in tiers),
        files,
        md(f"{doc['golden']['rows']} rows, sha256 {doc['golden']['sha256']}"),
        pre(json.dumps(config, indent=2, ensure_ascii=False)),
        md(" ".join(command)),
        md(doc["error"]) if doc.get("error") else None,
        md(_outcome_counts(a.verdicts)),
    )


def _outcome_counts(found: tuple[Verdict, ...]) -> str:
    counts = {o: sum(v.outcome == o for v in found) for o in ("success", "failure", "warning", "inconclusive", "info")}
    parts = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
    return f"{len(found)} verdicts: {parts}." if found else "No verdicts (no suite finished)."


@dataclass(frozen=True)
class RunsIndex:
    runs: tuple[RunRef, ...]


@dataclass
class Site:
    """All contexts of one build, and the headline numbers for metrics.json."""

    overview: Overview
    wallclock: Wallclock
    framing: Framing
    history: History
    machines: Machines
    methods: Methods
    runs: list[tuple[str, RunPage]] = field(default_factory=list)
    runs_index: RunsIndex = field(default_factory=lambda: RunsIndex(()))
    metrics: dict[str, Any] = field(default_factory=dict)


def metrics(latest: dict[str, Analysed]) -> dict[str, Any]:
    out: dict[str, Any] = {"machines": {}}
    for machine, a in sorted(latest.items()):
        out["machines"][machine] = {
            "run_id": a.run.run_id,
            "date": a.run.date,
            "tiers": {
                t.tier: {
                    "ms_per_token": t.ms_per_token.to_dict(),
                    "ratio_vs_plain": t.ratio_vs_plain.to_dict() if t.ratio_vs_plain else None,
                    "exponent": t.exponent.to_dict() if t.exponent else None,
                    "overhead": t.overhead,
                }
                for t in a.tiers
            },
            "pairs": {
                p.case: {
                    "acceptance": p.acceptance,
                    "predicted_speedup": p.predicted_speedup,
                    "observed_speedup": p.observed_speedup.to_dict(),
                }
                for p in a.pairs
            },
            "framing": {
                t["tier"]: {
                    "argmax_agree": sum(b["argmax_agree"] for b in t["blocks"]),
                    "argmax_total": sum(b["argmax_total"] for b in t["blocks"]),
                    "present_max_abs_diff": max(b["present_max_abs_diff"] for b in t["blocks"]),
                }
                for t in python_tiers(a.run.doc)
            },
            "verdicts": [
                {
                    "topic": v.topic,
                    "subject": v.subject,
                    "outcome": v.outcome,
                    "answer": v.answer,
                    "value": v.value,
                    "lo": v.lo,
                    "hi": v.hi,
                }
                for v in a.verdicts
            ],
        }
    return out


def build_site(runs: list[Run]) -> Site:
    newest: dict[str, Run] = {}
    for r in sorted((r for r in runs if r.complete), key=lambda r: (r.started_at, r.run_id)):
        newest[r.machine_id] = r
    full = {id(r) for r in newest.values()}
    analysed = [analyse(r, intervals=id(r) in full) for r in runs]
    complete = sorted((a for a in analysed if a.run.complete), key=lambda a: (a.run.started_at, a.run.run_id))
    latest: dict[str, Analysed] = {}
    for a in complete:
        latest[a.run.machine_id] = a
    current = complete[-1] if complete else None
    overview = Overview(
        run_ref(current.run) if current else None,
        tuple(run_ref(a.run) for _, a in sorted(latest.items())),
        topics(current) if current else (),
        len(analysed),
    )
    ordered = sorted(analysed, key=lambda a: (a.run.started_at, a.run.run_id), reverse=True)
    return Site(
        overview=overview,
        wallclock=wallclock_page(current),
        framing=framing_page(current),
        history=history_page(analysed),
        machines=machines_page(latest),
        methods=methods_page(current),
        runs=[(run_slug(a.run), run_page(a)) for a in ordered],
        runs_index=RunsIndex(tuple(run_ref(a.run, "") for a in ordered)),
        metrics=metrics(latest),
    )
