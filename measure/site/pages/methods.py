"""Methods: the protocol and the verdict policy as the records behind the current results state them."""

from __future__ import annotations

from dataclasses import dataclass

from measure.analysis.change_fit import CAP, CREEP_GAIN, PERMUTATIONS, PERMUTED_COMMITS, RANGE, WINDOW
from measure.analysis.changepoints import DOWNWEIGHT, MIN_SEGMENT, PENALTY
from measure.analysis.current import Current
from measure.analysis.record_analysis import Analysis
from measure.analysis.runtime_axis import GENAI
from measure.site.context import Md, RunLinks, RunRef, Setting, md, prompt_templates, provenance

TIMED = {
    "ids": "token ids in -> ids out (tokenizing timed on its own)",
    "text": "source text in -> ids out (tokenizing included)",
}


@dataclass(frozen=True)
class Methods:
    run: RunRef | None
    settings: tuple[Setting, ...]
    policy: tuple[Setting, ...]
    sources: Md | None = None
    """Each part's run and date: each suite's settings are its own run's."""
    differences: tuple[Md, ...] = ()
    decoder_only: bool = False
    """Whether the record holds decoder-only tiers: then the page says how their prompt and decode are timed."""
    genai: bool = False
    """Whether the record holds an onnxruntime-genai leg: then the page says how it runs and what it times."""
    changes: tuple[Setting, ...] = ()
    """The change-point search's settings (History's changes)."""


def change_settings() -> tuple[Setting, ...]:
    """The settings of History's change-point search, from the constants the search uses."""
    low, high = DOWNWEIGHT
    few, most = PERMUTATIONS
    rows = [
        ("penalty", f"a change must save z^2 >= {PENALTY:g} (its segments differ by z >= {PENALTY**0.5:.2f})"),
        ("shortest segment", f"{MIN_SEGMENT} commits: one commit alone is an outlier until the next agrees"),
        (
            "loaded runners",
            f"a run {low:g} sd or more from the commits on both sides loses weight, all of it at {high:g}",
        ),
        ("placement", f"each run's squared error capped at {CAP:g}^2 sd^2, {WINDOW} commits either side"),
        ("range", f"steps costing at most {RANGE:g} more than the best (a likelihood ratio of 1 in 20)"),
        ("creep", f"a ramp that beats every step by {CREEP_GAIN:g} (chi-square, 1 df, 1%)"),
        (
            "false alarms",
            f"each series' commits shuffled within its segments {few}-{most} times, {PERMUTED_COMMITS:,} commits",
        ),
    ]
    return tuple(Setting(md(k), md(v)) for k, v in rows)


def _resolution(seconds: float) -> str:
    """A wall-clock sample's resolution in words: what the record says its samples were rounded to."""
    if seconds >= 1e-6:
        return f"{seconds * 1e6:g} µs, every sample rounded to it"
    return f"{seconds * 1e9:g} ns, every sample rounded to it"


def _policy_value(v: object) -> str:
    """A policy figure, or one per role ("plain 0.01, lite 0.05, default 0.05")."""
    if isinstance(v, dict):
        return ", ".join(f"{role} {value:g}" for role, value in v.items())
    return str(v)


def methods_page(a: Analysis | None, links: RunLinks, state: Current | None = None) -> Methods:
    if a is None:
        return Methods(None, (), (), changes=change_settings())
    r = a.record
    wc, fr = r.config.wallclock, r.config.framing
    settings = [
        ("golden rows", f"{r.golden.rows} rows, sha256 {r.golden.sha256}"),
        ("warm-up passes", wc.warmup),
        ("timed repeats (interleaved)", wc.repeats),
        ("timed region", TIMED.get(r.wallclock.timed if r.wallclock else "text", "")),
        *((("sample resolution", _resolution(r.wallclock.resolution_s)),) if r.wallclock else ()),
        ("speculative k swept", ", ".join(map(str, wc.k))),
        ("bootstrap", f"{wc.bootstrap} resamples, seed {wc.seed}: the exponent's interval"),
        ("framing blocks", ", ".join(map(str, fr.k)) + (", whole prefix" if fr.whole_prefix else "")),
        ("acceptance k", fr.probe_k),
        ("session", ", ".join(f"{k} {v}" for k, v in r.config.session.items())),
        *(
            (f"runtime leg {i + 1}", f"{leg.name}{' on ' + leg.host if leg.host else ''}: {leg.status}")
            for i, leg in enumerate(r.legs)
        ),
    ]
    causal = any(t.decoder_only for t in r.tiers.values())
    if causal:
        users = prompt_templates(r).items()
        settings.append(("prompt templates (decoder-only tiers)", "; ".join(f"{p} ({', '.join(n)})" for p, n in users)))
        settings.append(
            ("prompt framings (decoder-only tiers)", "the framing blocks, on the prompt from an empty cache")
        )
    ins = r.instructions
    if ins is not None:
        settings.append(("instruction counts", f"callgrind ({ins.valgrind}), first {ins.rows} rows, {ins.runs} runs"))
    return Methods(
        links.ref(r),
        tuple(Setting(md(k), md(v)) for k, v in settings),
        tuple(Setting(md(k), md(_policy_value(v))) for k, v in vars(r.config.policy).items()),
        provenance(state, links) if state is not None else None,
        tuple(md(d) for d in state.differences()) if state is not None else (),
        causal,
        any(leg.runtime == GENAI for leg in r.legs),
        change_settings(),
    )
