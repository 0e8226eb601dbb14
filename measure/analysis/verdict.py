"""A verdict: one question about a record, answered yes / no / inconclusive with its value, rule and evidence.

The rules that make verdicts live in :mod:`measure.analysis.rules`; this is what they make, what the summary
cache stores and what the pages link to their evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from measure.analysis.stats import Estimate

OUTCOMES = ("success", "failure", "warning", "inconclusive", "info")


@dataclass(frozen=True)
class Verdict:
    topic: str
    """Stable slug of the question, e.g. ``decode-linear``."""
    question: str
    """Phrased so that "yes" is the good outcome."""
    subject: str
    key: str
    """The record entity the verdict rests on: a tier, a wall-clock case, a pair (drafter->verifier) or a runtime."""
    outcome: str
    answer: str
    """Short answer: yes / no / inconclusive, with the deciding count where there is one."""
    rule: str
    measured: str
    """The value with its unit and interval, as pages print it."""
    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    gate: bool = False
    """A failure here fails ``measure check``."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))  # every field a scalar: asdict's deep copy cost a cold build seconds


_NAMES = tuple(f.name for f in fields(Verdict))
_TEXTS = 8
"""The leading fields that are text (topic .. measured): a table stores each distinct one once.
:func:`from_table` names them one by one (a test keeps it in step with the dataclass)."""


def to_table(found: tuple[Verdict, ...] | list[Verdict]) -> dict[str, list[Any]]:
    """Verdicts as a cache stores them: ``texts`` (each distinct string once) and one row per verdict, its text
    fields as indices into ``texts``, then value, lo, hi and gate. A record's hundred verdicts ask a dozen
    questions under a dozen rules: as rows they take a third of the bytes of keyed objects, and parse as quickly."""
    texts: dict[str, int] = {}
    rows = []
    for v in found:
        d = vars(v)
        rows.append([texts.setdefault(d[n], len(texts)) for n in _NAMES[:_TEXTS]] + [d[n] for n in _NAMES[_TEXTS:]])
    return {"texts": list(texts), "rows": rows}


def from_table(table: dict[str, Any]) -> tuple[Verdict, ...]:
    """The verdicts :func:`to_table` stored; raises KeyError/TypeError/ValueError/IndexError on anything else."""
    if table.keys() != {"texts", "rows"}:
        raise KeyError("verdict table fields")
    texts, rows = table["texts"], table["rows"]
    if type(texts) is not list or type(rows) is not list or not all(type(t) is str for t in texts):
        raise TypeError("verdict texts and rows")
    out = []
    new = object.__new__
    for t0, t1, t2, t3, t4, t5, t6, t7, value, lo, hi, gate in rows:  # another length: ValueError
        if t0 | t1 | t2 | t3 | t4 | t5 | t6 | t7 < 0:  # a negative index would read from the end; a str raises
            raise ValueError("verdict row")
        verdict = new(Verdict)  # fields set at once, bypassing the frozen __init__'s object.__setattr__: 5x quicker
        verdict.__dict__.update(
            topic=texts[t0],
            question=texts[t1],
            subject=texts[t2],
            key=texts[t3],
            outcome=texts[t4],
            answer=texts[t5],
            rule=texts[t6],
            measured=texts[t7],
            value=value,
            lo=lo,
            hi=hi,
            gate=gate,
        )
        out.append(verdict)
    return tuple(out)


def against(e: Estimate, threshold: float, want_above: bool) -> tuple[str, str]:
    """An interval against a threshold: wholly on the wanted side, wholly on the other, or straddling it."""
    good, bad = (e.lo > threshold, e.hi < threshold) if want_above else (e.hi <= threshold, e.lo > threshold)
    if good:
        return "success", "yes"
    if bad:
        return "failure", "no"
    return "inconclusive", "inconclusive"


def ci(e: Estimate, digits: int = 2, unit: str = "") -> str:
    return f"{e.value:.{digits}f}{unit} [{e.lo:.{digits}f}, {e.hi:.{digits}f}]"


LABELS = {
    "framing-parity": "batched framing",
    "prompt-framing-parity": "the prompt in blocks",
    "runtime-framing-parity": "batched framing",
    "runtime-parity": "greedy decodes",
    "browser-parity": "greedy decodes in the browser",
    "harness-overhead": "harness overhead",
    "decode-linear": "decoding O(T)",
    "lite-smaller": "size on disk",
    "lite-lighter": "memory",
    "lite-faster-load": "cold load",
}
"""A judgment's topic as a ship line names what it accepts."""
PYTHON = "Python onnxruntime"


def _answer(v: Verdict) -> str:
    """The answer, with its measured value where the answer is a bare yes / no / inconclusive."""
    return v.answer if v.answer.strip() not in ("yes", "no", "inconclusive") else f"{v.answer} ({v.measured})"


def clause(v: Verdict) -> str:
    """One verdict as a clause of a sentence: "decoding O(T): no (exponent 1.28 [1.05, 1.51])"."""
    return f"{LABELS.get(v.topic, v.topic)}: {_answer(v)}"


def accepted(found: tuple[Verdict, ...]) -> tuple[str, ...]:
    """What a shipped tier accepts, one item per topic and answer, the runtimes it holds under named together:
    "batched framing (Python onnxruntime, onnxruntime-node): yes, 2,836/2,836 argmax hold, but presents move by up
    to 0.21"; a bare yes / no / inconclusive carries its measured value."""
    groups: dict[tuple[str, str], list[str]] = {}
    for v in found:
        runtime = v.subject.split(" under ", 1)[1] if " under " in v.subject else PYTHON
        groups.setdefault((LABELS.get(v.topic, v.topic), _answer(v)), []).append(runtime)
    out = []
    for (label, answer), runtimes in groups.items():
        where = f" ({', '.join(runtimes)})" if runtimes != [PYTHON] else ""
        out.append(f"{label}{where}: {answer}")
    return tuple(out)
