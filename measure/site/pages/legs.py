"""The Framing page's runtime legs beyond the matrix: how each ran, its speed, where its decodes part.

Tables under *Runtime × precision*: each leg's host and execution (the browser's
provider, threads, cross-origin isolation, SIMD), greedy ms/token per tier and runtime
beside Python onnxruntime's, each golden row a runtime decodes differently from
Python, with the step and both logit margins, and onnxruntime-genai's speculative
decoding beside measure's.
"""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.runtime_axis import Speed, runtime_speeds
from measure.record.model import Counts, Leg, Record
from measure.site.context import Md, marked, md, trusted


@dataclass(frozen=True)
class LegHost:
    """One runtime leg: where it ran and how."""

    runtime: Md
    host: Md
    execution: Md


@dataclass(frozen=True)
class SpeedRow:
    tier: Md
    python: Md
    cells: tuple[Md, ...]


@dataclass(frozen=True)
class PartedRow:
    """A golden row whose greedy decode under another runtime leaves Python onnxruntime's."""

    runtime: Md
    tier: Md
    line: Md
    token: Md
    margins: Md
    python: Md
    other: Md
    """Both decodes with the differing characters inside <mark>."""


@dataclass(frozen=True)
class GenaiPairRow:
    """One decoder-only pair's speculative decoding under onnxruntime-genai beside measure's at the same k."""

    pair: Md
    k: int
    acceptance: Md
    measure_acceptance: Md
    speedup: Md
    measure_speedup: Md
    greedy: Md
    """Rows whose speculative output equals the verifier's greedy one: og's, then measure's."""


@dataclass(frozen=True)
class LegFacts:
    hosts: tuple[LegHost, ...]
    python_head: Md
    speed_heads: tuple[Md, ...]
    """Column heads of ``speeds``: every timed runtime after Python onnxruntime."""
    speeds: tuple[SpeedRow, ...]
    parted: tuple[PartedRow, ...]
    speculative: tuple[GenaiPairRow, ...] = ()
    """onnxruntime-genai's draft-model speculative decoding per decoder-only pair (issue 28)."""


def _accept(c: Counts) -> str:
    return "-" if c.ratio is None else f"{c.ratio:.3f} ({c.accepted}/{c.proposed})"


def _times(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}×"


def genai_pairs(record: Record) -> tuple[GenaiPairRow, ...]:
    out = []
    for leg in record.legs[1:]:
        for p in leg.pairs:
            if not p.measured:
                out.append(GenaiPairRow(md(p.name), p.k, md(f"{p.status}: {p.reason}"), *(md("-"),) * 4))
                continue
            out.append(
                GenaiPairRow(
                    md(p.name),
                    p.k,
                    md(_accept(p.acceptance)),
                    md(_accept(p.measure_acceptance)),
                    md(_times(p.speedup)),
                    md(_times(p.measure_speedup)),
                    md(f"{p.equal_greedy_rows}/{p.rows} · {p.measure_equal_greedy_rows}/{p.rows}"),
                )
            )
    return tuple(out)


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def _execution(leg: Leg, record: Record) -> str:
    e = leg.execution
    if e is None:  # Python and Node: onnxruntime's CPU provider with the session config's threads
        threads = record.config.session.get("intra_op_threads") or 0
        return f"CPU execution provider, {_threads(threads) if threads else 'onnxruntime default threads'}"
    asked = f" (asked {e.threads_requested})" if e.threads_requested and e.threads_requested != e.threads else ""
    isolated = "cross-origin isolated" if e.cross_origin_isolated else "not cross-origin isolated: one thread at most"
    cores = f", {e.hardware_concurrency} logical cores" if e.hardware_concurrency else ""
    return f"{e.provider}, {_threads(e.threads)}{asked}, {isolated}, SIMD {'on' if e.simd else 'off'}{cores}"


def _speed(s: Speed | None) -> Md:
    """The median first; the timed passes' range (or "1 pass") and the ratio to Python's on a smaller second line."""
    if s is None:
        return md("-")
    spread = f"[{s.lo:.3f}, {s.hi:.3f}]" if s.passes > 1 else "1 pass"
    ratio = f" {s.vs_python:.2f}× Python" if s.vs_python is not None else ""
    return trusted(f"{s.ms_per_token:.3f}<br><small>{md(spread)}{md(ratio)}</small>")


PARTED_PER_TIER = 10
"""Rows listed per leg and tier; the verdict and the parity table count them all."""


def _parted(record: Record) -> tuple[PartedRow, ...]:
    """Where each other runtime's greedy decode leaves Python's: the first PARTED_PER_TIER rows per leg and tier,
    both outputs with the differing characters marked."""
    python = {t.tier: t for t in record.python_tiers}
    parted = []
    for leg in record.legs[1:]:
        for t in leg.tiers:
            ref = python.get(t.tier)
            for d in (t.divergence or ())[:PARTED_PER_TIER]:
                ours = ref.outputs[d.row] if ref and d.row < len(ref.outputs) else ""
                theirs = t.outputs[d.row] if d.row < len(t.outputs) else ""
                a, b = marked(ours, theirs)
                margins = f"{d.margin:.3g}" + (f" / {d.python_margin:.3g}" if d.python_margin is not None else "")
                step = md(f"{d.step + 1}: {d.expected} → {d.token}")
                line = md("-" if d.line is None else str(d.line))
                parted.append(PartedRow(md(leg.name), md(t.tier), line, step, md(margins), a, b))
    return tuple(parted)


def leg_facts(record: Record) -> LegFacts:
    python_host = f"Python {(record.environment.python.split() or ['(version not recorded)'])[0]}"
    hosts = tuple(
        LegHost(md(leg.name), md(leg.host or (python_host if i == 0 else "-")), md(_execution(leg, record)))
        for i, leg in enumerate(record.legs)
        if leg.measured
    )
    speeds = runtime_speeds(record)
    heads = tuple(md(leg.name) for leg in speeds.legs) if speeds else ()
    rows = tuple(
        SpeedRow(
            md(f"{t.tier} ({t.precision})"),
            md("-" if t.python is None else f"{t.python:.3f}"),
            tuple(_speed(s) for s in t.legs),
        )
        for t in (speeds.tiers if speeds else ())
    )
    python_head = md(record.legs[0].name if record.legs else "onnxruntime (python)")
    return LegFacts(hosts, python_head, heads, rows, _parted(record), genai_pairs(record))
