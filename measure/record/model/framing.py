"""The framing section: facts per runtime leg and tier, acceptance, and the onnxruntime-genai leg's own facts.

Written, read and viewed here: the classes (with the sums pages print as properties), the reader
(:meth:`Framing.from_dict`) and the builders the suites and legs fill (in the record's key order). What another
runtime answers (its blocks, timing, execution) arrives from its leg's script already in the record's shape and is
stored as it came. The onnxruntime-genai leg is a leg like the Node and browser ones, plus what only that runtime
answers: its compiled loop's time per decode step beside measure's on the same graph and rows (a tier's
``genai``), and its draft-model speculative decoding beside measure's for the same pair (the leg's
``speculative``).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

Part = dict[str, Any]

FP32 = ("fp32", "fp16")
"""Precisions whose framing or speculative differences are bugs (the policy gates them)."""


@dataclass(frozen=True)
class LayerDiff:
    layer: int
    key_mean_abs_diff: float
    value_mean_abs_diff: float
    key_max_abs_diff: float
    value_max_abs_diff: float


@dataclass(frozen=True)
class Block:
    """One batched block size replayed on top of single-step prefixes."""

    block: int | str
    """k, or "whole"."""
    present_max_abs_diff: float
    logits_max_abs_diff: float
    argmax_agree: int
    argmax_total: int
    first_divergent_step: tuple[int | None, ...]
    """Per golden row: the first step whose argmax the block changes, or None."""
    layers: tuple[LayerDiff, ...]


@dataclass(frozen=True)
class Miss:
    line: int
    input: str
    expected: str
    output: str


@dataclass(frozen=True)
class Quality:
    rows: int
    exact: int
    cer_mean: float
    misses: tuple[Miss, ...]


@dataclass(frozen=True)
class Divergence:
    """Where another runtime's greedy decode of one golden row first leaves Python onnxruntime's."""

    row: int
    """0-based index into the golden rows."""
    line: int | None
    step: int
    """The decoder step (0: the call fed the start token); the output token's 1-based position is step + 1."""
    token: int
    """This runtime's argmax there."""
    expected: int
    """Python onnxruntime's token (eos where Python stopped)."""
    margin: float
    """This runtime's logit of ``token`` minus its logit of ``expected``."""
    python_margin: float | None
    """Python onnxruntime's logit of ``expected`` minus its logit of ``token`` at the same step."""


@dataclass(frozen=True)
class LegTiming:
    """Greedy passes over every golden row under one runtime, the first being the one that recorded the decodes."""

    greedy_ms: tuple[float, ...]
    tokens: int
    """Output tokens of one pass."""

    @property
    def timed_ms(self) -> tuple[float, ...]:
        """The passes a figure is taken from: all but the first (its calls warm the runtime up), if there are more."""
        return self.greedy_ms[1:] or self.greedy_ms

    @property
    def ms_per_token(self) -> tuple[float, ...]:
        return tuple(ms / max(1, self.tokens) for ms in self.timed_ms)


@dataclass(frozen=True)
class Adapter:
    """The WebGPU adapter a page ran on, as ``navigator.gpu.requestAdapter()`` described it."""

    vendor: str
    architecture: str
    device: str
    description: str
    fallback: bool
    software: bool
    """It renders on the CPU (SwiftShader and the like): its numerics are WebGPU's kernels, its timings mean nothing."""

    @property
    def name(self) -> str:
        said = " ".join(w for w in (self.vendor, self.architecture, self.device or self.description) if w)
        return said or "an unnamed adapter"

    @property
    def note(self) -> str:
        """What the pages and ``show`` say of it."""
        kind = SOFTWARE_ADAPTER if self.software else "hardware adapter"
        return f"{self.name} ({kind})"


SOFTWARE_ADAPTER = "software adapter: numerics only, no timing"
"""The words for a leg on a software WebGPU adapter, wherever its speed would be shown."""


@dataclass(frozen=True)
class Execution:
    """How a runtime ran, as the browser page found it: provider, threads, isolation, SIMD, the WebGPU adapter."""

    provider: str
    threads: int
    threads_requested: int | None
    cross_origin_isolated: bool
    simd: bool
    hardware_concurrency: int | None
    adapter: Adapter | None = None


@dataclass(frozen=True)
class FramingTier:
    """One tier's framing facts under one runtime; quality only on the Python leg."""

    tier: str
    precision: str
    status: str
    reason: str
    blocks: tuple[Block, ...]
    outputs: tuple[str, ...]
    output_ids: tuple[tuple[int, ...], ...] | None
    quality: Quality | None
    divergence: tuple[Divergence, ...] = ()
    """Other runtimes' legs: rows whose greedy decode leaves Python's, where and by what margin."""
    timing: LegTiming | None = None
    """Other runtimes' legs: greedy passes timed under that runtime."""
    prefill: tuple[Block, ...] = ()
    """Decoder-only tiers on the Python leg: the prompt fed token by token against blocks of k and whole."""
    genai: GenaiTier | None = None
    """The onnxruntime-genai leg: its compiled loop beside measure's on this tier."""

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    @property
    def fp32(self) -> bool:
        return self.precision in FP32

    @property
    def argmax_agree(self) -> int:
        return sum(b.argmax_agree for b in self.blocks)

    @property
    def argmax_total(self) -> int:
        return sum(b.argmax_total for b in self.blocks)

    @property
    def present_max_abs_diff(self) -> float:
        return max((b.present_max_abs_diff for b in self.blocks), default=0.0)

    @property
    def logits_max_abs_diff(self) -> float:
        return max((b.logits_max_abs_diff for b in self.blocks), default=0.0)

    @property
    def rows(self) -> int:
        return len(self.blocks[0].first_divergent_step) if self.blocks else len(self.outputs)

    @property
    def rows_same(self) -> int:
        """Rows where no batched block changes any argmax of the single-step decode."""
        if not self.blocks:
            return len(self.outputs)
        per_row = zip(*(b.first_divergent_step for b in self.blocks), strict=True)
        return sum(all(step is None for step in row) for row in per_row)


@dataclass(frozen=True)
class Leg:
    """One runtime that decoded the tiers; the first leg is always Python onnxruntime."""

    runtime: str
    language: str
    version: str | None
    host: str | None
    status: str
    reason: str
    tiers: tuple[FramingTier, ...]
    execution: Execution | None = None
    """The browser leg: execution provider, threads, cross-origin isolation, SIMD."""
    speculative: tuple[GenaiPair, ...] = ()
    """The onnxruntime-genai leg: its draft-model speculative decoding per decoder-only pair."""
    provider: str | None = None
    """What sets this leg apart from another of its runtime (``webgpu``: onnxruntime-web's WebGPU leg)."""

    @property
    def browser(self) -> bool:
        """The leg ran in a browser page (onnxruntime-web)."""
        return self.language == "browser"

    @property
    def name(self) -> str:
        version = f" {self.version}" if self.version else ""
        provider = f", {self.provider}" if self.provider else ""
        return f"{self.runtime}{version} ({self.language}{provider})"

    @property
    def software_adapter(self) -> bool:
        """It ran on a software WebGPU adapter: numerics only, no timing."""
        adapter = self.execution.adapter if self.execution else None
        return adapter is not None and adapter.software

    @property
    def measured(self) -> bool:
        return self.status == "measured"

    def tier(self, name: str) -> FramingTier | None:
        return next((t for t in self.tiers if t.tier == name), None)


@dataclass(frozen=True)
class Counts:
    accepted: int
    proposed: int

    @property
    def ratio(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None


@dataclass(frozen=True)
class Differing:
    line: int
    input: str
    speculative: str
    greedy: str


@dataclass(frozen=True)
class Acceptance:
    """A drafter/verifier pair at the probe k: acceptance three ways and output preservation."""

    drafter: str
    verifier: str
    self_pair: bool
    k: int
    probe: Counts
    runtime: Counts
    rows: int
    preserved: int
    differing: tuple[Differing, ...]

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"


@dataclass(frozen=True)
class Framing:
    blocks: tuple[int | str, ...]
    legs: tuple[Leg, ...]
    acceptance: tuple[Acceptance, ...]

    @classmethod
    def from_dict(cls, fr: Part | None) -> Framing | None:
        """None for a run that measured no framing."""
        return _framing(fr)

    @property
    def python_tiers(self) -> tuple[FramingTier, ...]:
        """The Python onnxruntime leg's tiers: the ones that also carry quality."""
        return self.legs[0].tiers if self.legs else ()


@dataclass(frozen=True)
class Spread:
    """One figure per repeat and their median (None where no repeat had a step to time)."""

    median: float | None
    samples: tuple[float, ...]

    @property
    def lo(self) -> float | None:
        return min(self.samples) if self.samples else None

    @property
    def hi(self) -> float | None:
        return max(self.samples) if self.samples else None


@dataclass(frozen=True)
class GenaiTier:
    """One decoder-only tier under og's generate loop and measure's, paired repeat by repeat on the same rows."""

    config: str
    """"folder" (the genai folder's own genai_config.json) or "generated" (written for an optimum export)."""
    share_buffer: bool
    """og's cache mode: one buffer of max_length shared by past and present, or grown each step."""
    equal_rows: int
    logits_max_abs_diff: float
    steps: int
    measure_steps: int
    ms_per_step: Spread
    measure_ms_per_step: Spread
    measure_over_og: Spread
    """measure's ms per decode step over og's, per repeat: the overhead of measure's loop over a compiled one."""


@dataclass(frozen=True)
class GenaiPair:
    """og's draft-model speculative decoding of one decoder-only pair, beside measure's at the same k."""

    drafter: str
    verifier: str
    k: int
    status: str
    reason: str
    rows: int
    acceptance: Counts
    speedup: float | None
    equal_greedy_rows: int
    measure_acceptance: Counts
    measure_speedup: float | None
    measure_equal_greedy_rows: int

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"

    @property
    def measured(self) -> bool:
        return self.status == "measured"


# ------------------------------------------------------------------ reading


def _block(b: dict[str, Any]) -> Block:
    return Block(
        block=b["block"],
        present_max_abs_diff=float(b["present_max_abs_diff"]),
        logits_max_abs_diff=float(b["logits_max_abs_diff"]),
        argmax_agree=int(b["argmax_agree"]),
        argmax_total=int(b["argmax_total"]),
        first_divergent_step=tuple(b["first_divergent_step"]),
        layers=tuple(
            LayerDiff(
                int(x["layer"]),
                float(x.get("key_mean_abs_diff", 0.0)),
                float(x.get("value_mean_abs_diff", 0.0)),
                float(x.get("key_max_abs_diff", 0.0)),
                float(x.get("value_max_abs_diff", 0.0)),
            )
            for x in b.get("layers", ())
        ),
    )


def _quality(q: dict[str, Any] | None) -> Quality | None:
    if q is None:
        return None
    misses = tuple(Miss(int(m["line"]), m["input"], m["expected"], m["output"]) for m in q.get("misses", ()))
    return Quality(int(q["rows"]), int(q["exact"]), float(q["cer_mean"]), misses)


def _framing_tier(t: dict[str, Any]) -> FramingTier:
    ids = t.get("output_ids")
    return FramingTier(
        tier=t["tier"],
        precision=t.get("precision", "?"),
        status=t.get("status", "measured"),
        reason=t.get("reason", ""),
        blocks=tuple(_block(b) for b in t.get("blocks", ())),
        outputs=tuple(t.get("outputs", ())),
        output_ids=None if ids is None else tuple(map(tuple, ids)),
        quality=_quality(t.get("quality")),
        divergence=tuple(_divergence(d) for d in t.get("divergence", ())),
        timing=_leg_timing(t.get("timing")),
        prefill=tuple(_block(b) for b in t.get("prefill", ())),
        genai=_genai(t.get("genai")),
    )


def _spread(s: dict[str, Any] | None) -> Spread:
    s = s or {}
    m = s.get("median")
    return Spread(None if m is None else float(m), tuple(float(x) for x in s.get("samples", ())))


def _genai(g: dict[str, Any] | None) -> GenaiTier | None:
    if not g:
        return None
    return GenaiTier(
        config=g["config"],
        share_buffer=bool((g.get("cache") or {}).get("past_present_share_buffer", False)),
        equal_rows=int(g["equal_rows"]),
        logits_max_abs_diff=float(g["logits_max_abs_diff"]),
        steps=int(g["steps"]),
        measure_steps=int(g["measure_steps"]),
        ms_per_step=_spread(g.get("ms_per_step")),
        measure_ms_per_step=_spread(g.get("measure_ms_per_step")),
        measure_over_og=_spread(g.get("measure_over_og")),
    )


def _counts(c: dict[str, Any] | None) -> Counts:
    return Counts(int((c or {}).get("accepted", 0)), int((c or {}).get("proposed", 0)))


def _genai_pair(p: dict[str, Any]) -> GenaiPair:
    ours = p.get("measure") or {}
    return GenaiPair(
        drafter=p["drafter"],
        verifier=p["verifier"],
        k=int(p["k"]),
        status=p["status"],
        reason=p.get("reason", ""),
        rows=int(p.get("rows", 0)),
        acceptance=_counts(p.get("acceptance")),
        speedup=p.get("speedup"),
        equal_greedy_rows=int(p.get("equal_greedy_rows", 0)),
        measure_acceptance=_counts(ours.get("acceptance")),
        measure_speedup=ours.get("speedup"),
        measure_equal_greedy_rows=int(ours.get("equal_greedy_rows", 0)),
    )


def _divergence(d: dict[str, Any]) -> Divergence:
    python = d.get("python_margin")
    return Divergence(
        row=int(d["row"]),
        line=d.get("line"),
        step=int(d["step"]),
        token=int(d["token"]),
        expected=int(d["expected"]),
        margin=float(d["margin"]),
        python_margin=None if python is None else float(python),
    )


def _leg_timing(t: dict[str, Any] | None) -> LegTiming | None:
    if not t:
        return None
    return LegTiming(tuple(float(ms) for ms in t["greedy_ms"]), int(t["tokens"]))


def _execution(e: dict[str, Any] | None) -> Execution | None:
    if not e:
        return None
    return Execution(
        provider=e["provider"],
        threads=int(e["threads"]),
        threads_requested=e.get("threads_requested"),
        cross_origin_isolated=bool(e["cross_origin_isolated"]),
        simd=bool(e["simd"]),
        hardware_concurrency=e.get("hardware_concurrency"),
        adapter=_adapter(e.get("adapter")),
    )


def _adapter(a: dict[str, Any] | None) -> Adapter | None:
    if not a:
        return None
    return Adapter(
        vendor=a["vendor"],
        architecture=a["architecture"],
        device=a.get("device", ""),
        description=a.get("description", ""),
        fallback=bool(a["fallback"]),
        software=bool(a["software"]),
    )


def _acceptance(a: dict[str, Any]) -> Acceptance:
    return Acceptance(
        drafter=a["drafter"],
        verifier=a["verifier"],
        self_pair=bool(a["self"]),
        k=int(a["k"]),
        probe=Counts(int(a["probe"]["accepted"]), int(a["probe"]["proposed"])),
        runtime=Counts(int(a["runtime"]["accepted"]), int(a["runtime"]["proposed"])),
        rows=int(a["rows"]),
        preserved=int(a["preserved"]),
        differing=tuple(Differing(int(d["line"]), d["input"], d["speculative"], d["greedy"]) for d in a["differing"]),
    )


def _framing(fr: dict[str, Any] | None) -> Framing | None:
    """The ``framing`` part: the blocks, each runtime's leg with its tiers, and the acceptance facts."""
    if not fr:
        return None
    legs = tuple(
        Leg(
            runtime=leg["runtime"],
            language=leg["language"],
            version=leg.get("version"),
            host=leg.get("host"),
            status=leg["status"],
            reason=leg.get("reason", ""),
            tiers=tuple(_framing_tier(t) for t in leg.get("tiers", ())),
            execution=_execution(leg.get("execution")),
            speculative=tuple(_genai_pair(p) for p in leg.get("speculative", ())),
            provider=leg.get("provider"),
        )
        for leg in fr.get("legs", ())
    )
    return Framing(tuple(fr.get("blocks", ())), legs, tuple(_acceptance(a) for a in fr.get("acceptance", ())))


# ------------------------------------------------------------------ the parts a run fills in place


MEASURED = "measured"
"""A leg's or a leg tier's ``status`` when it ran; ``skipped`` or ``failed`` carry a ``reason``."""


def framing_part(blocks: list[int | str], python: Part) -> Part:
    """The framing section as it starts: the block sizes compared, the Python leg first, no acceptance yet."""
    return {"blocks": blocks, "legs": [python], "acceptance": []}


def python_leg(version: str | None) -> Part:
    """The Python onnxruntime leg: always there, at the environment's onnxruntime version."""
    return {"runtime": "onnxruntime", "language": "python", "version": version, "status": MEASURED, "tiers": []}


def runtime_leg(runtime: str, language: str, provider: str | None = None) -> Part:
    """A later leg (onnxruntime-node, -web) as it starts: version and host are filled once it answers.
    ``provider`` names a leg that differs from another of the same runtime only by it (onnxruntime-web's webgpu)."""
    leg: Part = {
        "runtime": runtime,
        "language": language,
        "version": None,
        "host": None,
        "status": MEASURED,
        "tiers": [],
    }
    return leg | ({"provider": provider} if provider else {})


def layer_facts(
    layer: int, key_mean: float, key_max: float, value_mean: float, value_max: float, key_abs: float, value_abs: float
) -> Part:
    """One layer's |single - batched| of present keys and values (mean and max) and their mean magnitude."""
    return {
        "layer": layer,
        "key_mean_abs_diff": key_mean,
        "key_max_abs_diff": key_max,
        "value_mean_abs_diff": value_mean,
        "value_max_abs_diff": value_max,
        "key_mean_abs": key_abs,
        "value_mean_abs": value_abs,
    }


def block_facts(
    block: int | str,
    layers: list[Part],
    present_max: float,
    logits_max: float,
    agree: int,
    total: int,
    first_divergent: list[int | None],
) -> Part:
    """One block size's comparison over the golden rows (``first_divergent``: one step or None per row)."""
    return {
        "block": block,
        "layers": layers,
        "present_max_abs_diff": present_max,
        "logits_max_abs_diff": logits_max,
        "argmax_agree": agree,
        "argmax_total": total,
        "first_divergent_step": first_divergent,
    }


def miss(line: int, source: str, expected: str, output: str) -> Part:
    return {"line": line, "input": source, "expected": expected, "output": output}


def quality_part(rows: int, exact: int, cer_mean: float, cer: list[float], misses: list[Part]) -> Part:
    return {"rows": rows, "exact": exact, "cer_mean": cer_mean, "cer": cer, "misses": misses}


def python_tier(
    tier: str,
    precision: str,
    blocks: list[Part],
    quality: Part,
    outputs: list[str],
    output_ids: list[list[int]],
    prefill: list[Part] | None = None,
) -> Part:
    """One tier on the Python leg: its parity blocks, quality against the golden rows, and its greedy decodes;
    a decoder-only tier adds its prefill blocks (the prompt token by token against blocks and whole)."""
    part = {"tier": tier, "precision": precision, "status": MEASURED, "blocks": blocks}
    if prefill is not None:
        part["prefill"] = prefill
    return part | {"quality": quality, "outputs": outputs, "output_ids": output_ids}


def leg_tier(tier: str, precision: str) -> Part:
    """One tier on a later leg, before it runs (a skip or failure adds ``status`` and ``reason``)."""
    return {"tier": tier, "precision": precision}


def leg_tier_measured(
    entry: Part, blocks: list[Part], output_ids: list[list[int]], outputs: list[str], divergence: list[Part]
) -> Part:
    """A later leg's tier that ran: the runtime's parity blocks, greedy decodes and where they leave Python's."""
    return entry | {
        "status": MEASURED,
        "blocks": blocks,
        "output_ids": output_ids,
        "outputs": outputs,
        "divergence": divergence,
    }


def differing(line: int, source: str, speculative: str, greedy: str) -> Part:
    """A row whose speculative output is not the verifier's greedy one."""
    return {"line": line, "input": source, "speculative": speculative, "greedy": greedy}


def acceptance_part(
    drafter: str,
    verifier: str,
    is_self: bool,
    k: int,
    probe: tuple[int, int],
    runtime: tuple[int, int],
    rows: int,
    differs: list[Part],
) -> Part:
    """One pair's acceptance, (accepted, proposed) by the probe and by the runtime, and its output preservation."""
    return {
        "drafter": drafter,
        "verifier": verifier,
        "self": is_self,
        "k": k,
        "probe": {"accepted": probe[0], "proposed": probe[1]},
        "runtime": {"accepted": runtime[0], "proposed": runtime[1]},
        "rows": rows,
        "preserved": rows - len(differs),
        "differing": differs,
    }


def stopped(status: str, reason: str) -> Part:
    """What a leg or a leg's tier that did not run (``skipped``) or broke (``failed``) adds: why."""
    return {"status": status, "reason": reason}


def divergence(found: Part, line: int, python_margin: float) -> Part:
    """A row where a runtime's decode leaves Python's (as its leg reported it), with the golden line and the
    margin Python onnxruntime had there."""
    return found | {"line": line, "python_margin": python_margin}


def framing_sample_part(rows: list[int], prefill_rows: int) -> Part:
    """The framing suite's rows where a plan sampled them (0-based), and how many of them the prompt framings ran
    on (the first ones): stated in the framing section beside what they measured."""
    return {"rows": rows, "prefill_rows": prefill_rows}


# ------------------------------------------------------------------ the onnxruntime-genai leg


RUNTIME = "onnxruntime-genai"
LANGUAGE = "c++"
"""og's generate loop is compiled C++; Python only calls into it once per token."""
HOST = "a C++ generate loop (og.Generator) called from Python"
SEQ2SEQ_SKIP = "onnxruntime-genai runs decoder-only models"


def genai_leg_part(version: str | None) -> Part:
    """The leg as it starts: measured until the runtime is found missing; draft-model pairs follow the tiers."""
    return runtime_leg(RUNTIME, LANGUAGE) | {"version": version, "host": HOST, "speculative": []}


def _spread_part(samples: list[float | None]) -> Part:
    kept = [float(x) for x in samples if x is not None]
    return {"median": median(kept) if kept else None, "samples": kept}


def _passes(rows: list[Part], prefix: str) -> list[float]:
    """Wall ms of each repeat's pass over every row (first token + decode steps), as the other legs' greedy_ms."""
    repeats = len(rows[0][f"{prefix}decode_ms"]) if rows else 0
    return [sum(r[f"{prefix}first_token_ms"][k] + r[f"{prefix}decode_ms"][k] for r in rows) for k in range(repeats)]


def genai_tier_part(name: str, precision: str, answer: Part, outputs: list[str], lines: list[int]) -> Part:
    """One decoder-only tier's answer from ``run_genai_tier``: failed with og's message, or measured."""
    entry = leg_tier(name, precision)
    if answer.get("status") != "ok":
        return entry | stopped("failed", answer.get("message", "onnxruntime-genai failed"))
    rows = answer["rows"]
    ours, theirs = _passes(rows, "measure_"), _passes(rows, "")
    per_step = [
        (m / answer["measure_steps"]) / (o / answer["steps"]) if answer["steps"] and answer["measure_steps"] else None
        for m, o in zip(
            [sum(r["measure_decode_ms"][k] for r in rows) for k in range(len(ours))],
            [sum(r["decode_ms"][k] for r in rows) for k in range(len(theirs))],
            strict=True,
        )
        if o > 0
    ]
    divergence = [
        r["divergence"] | {"row": i, "line": lines[i]} for i, r in enumerate(rows) if r.get("divergence") is not None
    ]
    return entry | {
        "status": MEASURED,
        "blocks": [],
        "output_ids": [r["tokens"] for r in rows],
        "outputs": outputs,
        "divergence": divergence,
        "timing": {"greedy_ms": theirs, "tokens": sum(len(r["tokens"]) for r in rows)},
        "genai": {
            "config": answer["config"],
            "cache": answer["cache"],
            "equal_rows": answer["equal_rows"],
            "logits_max_abs_diff": max((r["logits_max_abs_diff"] for r in rows), default=0.0),
            "steps": answer["steps"],
            "measure_steps": answer["measure_steps"],
            "first_token_ms": answer["first_token_ms"],
            "ms_per_step": _spread_part(answer["ms_per_step"]["samples"]),
            "measure_first_token_ms": answer["measure_first_token_ms"],
            "measure_ms_per_step": _spread_part(answer["measure_ms_per_step"]["samples"]),
            "measure_greedy_ms": ours,
            "measure_over_og": _spread_part(per_step) | {"row_median": answer["measure_over_og"]},
        },
    }


def genai_pair_part(drafter: str, verifier: str, k: int, answer: Part) -> Part:
    """og's draft-model speculative decoding of one decoder-only pair beside measure's at the same draft length."""
    entry: Part = {"drafter": drafter, "verifier": verifier, "k": k}
    if answer.get("status") != "ok":
        return entry | stopped(answer["status"], answer.get("reason") or answer.get("message", ""))
    rows = answer["rows"]

    def total(key: Any) -> int:
        return int(sum(key(r) or 0 for r in rows))

    return entry | {
        "status": MEASURED,
        "rows": len(rows),
        "acceptance": {
            "accepted": total(lambda r: r["draft_tokens_accepted"]),
            "proposed": total(lambda r: r["draft_tokens_proposed"]),
        },
        "speedup": answer["speedup"],
        "equal_greedy_rows": answer["equal_greedy_rows"],
        "differing_rows": answer["differing_rows"],
        "measure": {
            "acceptance": {
                "accepted": total(lambda r: r["measure"]["accepted"]),
                "proposed": total(lambda r: r["measure"]["proposed"]),
            },
            "speedup": answer["measure_speedup"],
            "equal_greedy_rows": sum(r["measure"]["equal_greedy"] for r in rows),
        },
    }
