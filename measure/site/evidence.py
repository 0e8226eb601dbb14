"""Where each verdict's evidence is: the page and the table row (or section) it rests on.

Row anchors are made here and nowhere else, by the page builders that lay out
the rows and by the Overview that links to them, so a link always resolves.
Anchors carry no date: a shared link to the current evidence keeps working.
"""

from __future__ import annotations

from measure.analysis.verdict import Verdict
from measure.site.escape import Md, slug

ROWS = {
    "decode-linear": ("wallclock.md", "tier"),
    "harness-overhead": ("wallclock.md", "tier"),
    "speculative-speedup-k": ("wallclock.md", "case"),
    "speculative-speedup": ("wallclock.md", "pair"),
    "framing-parity": ("framing.md", "framing"),
    "prompt-framing-parity": ("framing.md", "prefill"),
    "runtime-framing-parity": ("framing.md", "runtime"),
    "runtime-parity": ("framing.md", "runtime"),
    "browser-parity": ("framing.md", "runtime"),
    "output-preservation": ("framing.md", "accept"),
    "self-acceptance": ("framing.md", "accept"),
    "acceptance": ("framing.md", "accept"),
    "fidelity": ("framing.md", "fidelity"),
    "lite-smaller": ("index.md", "summary"),  # bytes on disk: the summary's size column (records without a profile too)
    "lite-lighter": ("wallclock.md", "profile"),
    "lite-faster-load": ("wallclock.md", "profile"),
    "ship": ("index.md", "decision"),  # the Overview's answers (measure.analysis.judgments): its decision block
    "speculative-viable": ("wallclock.md", "pair"),
    "precision": ("wallclock.md", "tier"),
}
"""Verdict topic -> (page under the results prefix, kind of row its key names)."""


def row_id(kind: str, key: str) -> Md:
    """The id of the table row that shows ``key`` (a tier, case, pair or runtime) on its page."""
    return slug(f"{kind}-{key}")


def evidence(v: Verdict) -> str:
    """Relative link from a page under the results prefix to the row the verdict rests on."""
    page, kind = ROWS.get(v.topic, ("methods.md", "policy"))
    if v.topic in ("runtime-parity", "browser-parity") and v.outcome == "info":
        return f"{page}#runtimes"
    if kind == "decision":
        return "index.md#decision"
    if kind == "summary" or (v.topic == "fidelity" and v.value is None):  # a tier not judged: no figures to show
        return "index.md#summary" if v.topic == "fidelity" else f"{page}#summary"
    return f"{page}#{row_id(kind, v.key)}"


def verdict_id(v: Verdict) -> Md:
    """The Overview's stable anchor of one verdict: its question and the entity, no date."""
    return slug(f"{v.topic}-{v.subject}")


def anchor(text: Md) -> Md:
    """An empty element carrying an id, for the first cell of a table row."""
    return Md(f'<span id="{text}"></span>')
