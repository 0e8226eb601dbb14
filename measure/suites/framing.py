"""Framing-parity suite: does feeding k tokens per call decode like feeding one?

For each tier and golden row: decode single-step, then replay the very same
token prefix in blocks of k (and the whole prefix in one call) and compare
present keys/values per layer, logits and argmax. Then acceptance three ways
for each speculative pair and self-pair (probe, runtime, self), output
preservation, and quality against the golden outputs. What is measured is
recorded; nothing is assumed about which precision should differ.

Each runtime is a *leg*: Python onnxruntime always; onnxruntime-node
(:mod:`measure.suites.node_leg`) and onnxruntime-web in Chromium (:mod:`measure.suites.web_leg`)
too, on the very prefixes the Python leg decoded, plus their own greedy decodes
(timed, and where they leave Python's), so the page can set runtime against precision;
onnxruntime-genai's compiled loop on the decoder-only tiers and pairs (:mod:`measure.suites.genai_framing`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from measure.engine.speculative import Pair
from measure.engine.tier import Tier
from measure.record.model.write_framing import (
    MEASURED,
    acceptance_part,
    block_facts,
    differing,
    divergence,
    framing_part,
    layer_facts,
    leg_tier,
    leg_tier_measured,
    miss,
    python_leg,
    python_tier,
    quality_part,
    runtime_leg,
    stopped,
)
from measure.suites import Progress, Save, no_progress, node_leg, web_leg
from measure.suites.config import FramingConfig
from measure.suites.finite import require_finite
from measure.suites.genai_framing import GenaiLeg
from measure.suites.golden import GoldenRows, char_error_rate
from measure.suites.single_step import decode_single_step
from measure.suites.steps import OneAtATime, first_folder, kinds_of, release, session_threads

Framed = tuple[np.ndarray, tuple[np.ndarray, ...]]
"""A replay's logits and its cache's key/value per layer (:meth:`measure.engine.tier.Tier.feed_framed`)."""


class _Diff:
    """Running sums for one block size of one tier: per-layer |single - batched| and magnitudes."""

    def __init__(self, layers: int) -> None:
        self.sum = np.zeros((layers, 2))
        self.max = np.zeros((layers, 2))
        self.mag = np.zeros((layers, 2))
        self.count = np.zeros(layers)
        self.logits_max = 0.0
        self.agree = 0
        self.total = 0
        self.first_divergent: list[int | None] = []

    def add(self, single: Framed, batched: Framed) -> None:
        """One row: the single-step replay's logits and key/value per layer against one block size's."""
        (ls, cs), (lb, cb) = single, batched
        for layer in range(len(self.count)):
            for part in (0, 1):  # key, value
                s, b = cs[2 * layer + part], cb[2 * layer + part]
                d = np.abs(s.astype(np.float64) - b)
                self.sum[layer, part] += d.sum()
                self.max[layer, part] = max(self.max[layer, part], float(d.max()))
                self.mag[layer, part] += np.abs(s).sum(dtype=np.float64)
            self.count[layer] += cs[2 * layer].size
        self.logits_max = max(self.logits_max, float(np.abs(ls - lb).max()))
        same = ls.argmax(-1) == lb.argmax(-1)
        self.agree += int(same.sum())
        self.total += int(same.size)
        self.first_divergent.append(None if same.all() else int(np.argmin(same)))

    def facts(self, block: int | str) -> dict[str, Any]:
        n = self.count
        layers = [
            layer_facts(
                i,
                key_mean=float(self.sum[i, 0] / n[i]),
                key_max=float(self.max[i, 0]),
                value_mean=float(self.sum[i, 1] / n[i]),
                value_max=float(self.max[i, 1]),
                key_abs=float(self.mag[i, 0] / n[i]),
                value_abs=float(self.mag[i, 1] / n[i]),
            )
            for i in range(len(n))
        ]
        present = float(self.max.max())
        return block_facts(block, layers, present, self.logits_max, self.agree, self.total, self.first_divergent)


Pair = Pair
"""A speculative pair of either model kind (acceptance reads both alike)."""


def _framed_row(
    tier: Tier, ids: list[int], tokens: list[int], diffs: dict[int | str, _Diff], single: Framed | None = None
) -> None:
    """The decode (seq2seq: start token and output; decoder-only: the output on the prompt's cache) fed
    single-step (``single``: as the greedy decode already fed it), then in each block size and whole."""
    single = single or tier.feed_framed(ids, tokens, 1)
    for b, diff in diffs.items():
        diff.add(single, tier.feed_framed(ids, tokens, None if b == "whole" else int(b)))


def _prefill_row(tier: Tier, ids: list[int], prefill: dict[int | str, _Diff]) -> None:
    """A decoder-only prompt fed token by token, then in blocks and whole (as a decode feeds it)."""
    single = tier.prefill_framed(ids, 1)
    for b, diff in prefill.items():
        diff.add(single, tier.prefill_framed(ids, None if b == "whole" else int(b)))


def tier_parity(
    tier: Tier, golden: GoldenRows, config: FramingConfig, prefill_rows: int | None = None
) -> dict[str, Any]:
    """One tier's parity blocks (and, decoder-only, prefill blocks: on the first ``prefill_rows`` rows where a
    budget's plan cut them), quality and greedy decodes."""
    blocks: list[int | str] = [*config.k, *(["whole"] if config.whole_prefix else [])]
    diffs = {b: _Diff(tier.shape.layers) for b in blocks}
    framed = tier.kind == "causal" and prefill_rows != 0  # a budget may cut the prompt framings to none
    prefill = {b: _Diff(tier.shape.layers) for b in blocks} if framed else None
    outputs, output_ids = [], []
    for i, row in enumerate(golden.rows):
        ids = tier.source_ids(row.input)
        found = decode_single_step(tier, ids)  # decoder-only: the greedy decode is the single-step replay
        tokens = [int(t) for t in (tier.greedy_ids(ids).tokens if found is None else found[0])]
        outputs.append(tier.tokenizer.decode(tokens))
        output_ids.append(tokens)
        single = tier.feed_framed(ids, tokens, 1) if found is None else found[1]
        require_finite(single[0], tier.name, golden.path, row.line, "the framing suite's single-step replay")
        _framed_row(tier, ids, tokens, diffs, single)
        if prefill is not None and (prefill_rows is None or i < prefill_rows):  # a decoder-only prompt's framings
            _prefill_row(tier, ids, prefill)
    exact = sum(o == r.output for o, r in zip(outputs, golden.rows, strict=True))
    cer = [char_error_rate(o, r.output) for o, r in zip(outputs, golden.rows, strict=True)]
    misses = [miss(r.line, r.input, r.output, o) for o, r in zip(outputs, golden.rows, strict=True) if o != r.output]
    quality = quality_part(len(golden), exact, float(np.mean(cer)), cer, misses)
    facts = [diffs[b].facts(b) for b in blocks]
    prefill_facts = None if prefill is None else [prefill[b].facts(b) for b in blocks]
    return python_tier(tier.name, tier.fingerprint().precision, facts, quality, outputs, output_ids, prefill_facts)


class NotStarted(node_leg.LegFailed):
    """A leg's runtime would not start at its first tier: the leg fails as a whole (no tier was tried)."""


class NodeLeg:
    """The onnxruntime-node leg of one run: tries each tier, stops trying once the runtime is missing."""

    runtime = node_leg.RUNTIME
    language = "node"
    provider: str | None = None
    """Set where a runtime runs as two legs (onnxruntime-web: wasm, and webgpu as its own leg)."""

    def __init__(self, config: FramingConfig, blocks: list[int | str]) -> None:
        self.node = config.node
        self.blocks = blocks
        self.repeats = config.leg_repeats
        self.out: dict[str, Any] = runtime_leg(self.runtime, self.language, self.provider)
        try:
            self._open(config)
        except node_leg.LegSkipped as exc:
            self._skip(str(exc))

    @property
    def label(self) -> str:
        """The leg in progress lines: its runtime, and its provider where the runtime runs as two legs."""
        return f"{self.runtime}, {self.provider}" if self.provider else self.runtime

    def _open(self, config: FramingConfig) -> None:
        node_leg.find_node(self.node)

    def _run(
        self, tier: Tier, rows: list[node_leg.NodeRow], described: dict[str, Any] | None, prefill_rows: int | None
    ) -> dict[str, Any]:
        return node_leg.run_tier(
            tier,
            rows,
            self.blocks,
            node=self.node,
            timing_repeats=self.repeats,
            described=described,
            prefill_rows=prefill_rows,
        )

    def _measured(self, answer: dict[str, Any]) -> None:
        """The leg-wide facts of a tier's answer: version and host."""
        self.out.update(version=answer.get("version"), host=answer.get("node") and f"Node.js {answer['node']}")

    def _skip(self, reason: str) -> None:
        self.out.update(stopped("skipped", reason))

    def add(
        self,
        tier: Tier,
        golden: GoldenRows,
        python: dict[str, Any],
        described: dict[str, Any] | None = None,
        reopen: Callable[[], Tier] | None = None,
        prefill_rows: int | None = None,
    ) -> None:
        """Decode ``tier`` under this runtime on the Python leg's prefixes; a tier that cannot run says why.

        ``described``: the tier as :func:`~measure.suites.node_leg.describe` gave it while its sessions were
        loaded, where Python has let go of them since (the leg's process loads its own copy); ``reopen`` then
        loads them again (and the caller's :func:`~measure.suites.steps.release` lets go), only where a row left
        Python's decode and Python's margin there is needed. ``prefill_rows``: the prompt framings on the first
        rows only (a budget's cut)."""
        started = self.out["status"] == MEASURED or (self.out["tiers"] and self.out["status"] == "failed")
        if not started:  # skipped, or failed before its first tier (the browser did not start)
            return
        rows = []
        for row, out_ids in zip(golden.rows, python["output_ids"], strict=True):
            ids = tier.source_ids(row.input)
            prefix = node_leg.prefix(tier, ids, out_ids)
            rows.append(node_leg.NodeRow(ids, prefix, tier.default_max_new_tokens(len(ids)), row.line, row.input))
        entry = leg_tier(tier.name, python["precision"])
        try:
            answer = self._run(tier, rows, described, prefill_rows)
        except node_leg.LegUnavailable as exc:
            self._skip(str(exc))
            return
        except NotStarted as exc:  # before any tier: the leg fails with the reason, and no tier tries again
            self.out.update(stopped("failed", str(exc)))
            return
        except (node_leg.LegSkipped, node_leg.LegFailed) as exc:
            status = "skipped" if isinstance(exc, node_leg.LegSkipped) else "failed"
            self.out["tiers"].append(entry | stopped(status, str(exc)))
            return
        self._measured(answer)
        ids = answer["output_ids"]
        outputs = [tier.tokenizer.decode(i) for i in ids]
        found = _divergence(tier, rows, golden, answer.get("divergence", []), reopen)
        entry = leg_tier_measured(entry, answer["blocks"], ids, outputs, found)
        if answer.get("prefill"):  # a decoder-only tier: the prompt's framings too
            entry["prefill"] = answer["prefill"]
        if answer.get("timing"):
            entry["timing"] = answer["timing"]
        self.out["tiers"].append(entry)

    def finish(self) -> dict[str, Any]:
        """The leg as it stands after a tier: failed while every tier so far failed, measured again once one
        runs (a failed tier never stops the next one from trying)."""
        tiers = self.out["tiers"]
        if self.out["status"] == "skipped" or (self.out.get("reason") and not tiers):
            return self.out  # the leg never started: skipped, or failed before any tier
        if tiers and all(t["status"] == "failed" for t in tiers):
            self.out.update(stopped("failed", tiers[0]["reason"]))
        elif self.out["status"] == "failed":
            self.out["status"] = MEASURED
            self.out.pop("reason", None)
        return self.out

    def close(self) -> None:
        """Nothing outlives a tier here; the web leg holds a browser."""


# --- the onnxruntime-web leg (issue 30): the same facts in a Chromium page; a large tier's browser closed after it ---
KEEP_BROWSER_BYTES = 64 * 2**20
"""After a tier folder of at most this size the browser stays up for the next tier: starting Chromium (about 2 s)
would be most of a small tier's turn. After a larger one it is closed, since the wasm memory a page grew is never
given back (about 2 GB for a 650 MB fp32 graph) and would be held while the other legs and tiers run. Before a
large first tier the browser is not started early either: its ~0.8 GB would sit beside Python's decodes."""


def _folder_bytes(folder: Path | None) -> int:
    if folder is None or not folder.is_dir():
        return 0
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


class WebLeg(NodeLeg):
    """The onnxruntime-web leg: a browser, a loopback server and a page, started with the leg and kept while tiers
    are small; closed after a large tier (:data:`KEEP_BROWSER_BYTES`) and started again for the next."""

    runtime = web_leg.RUNTIME
    language = "browser"

    def __init__(
        self, config: FramingConfig, blocks: list[int | str], threads: int = 0, first: Path | None = None
    ) -> None:
        self.threads = threads
        """The sessions' intra-op threads: the page's wasm threads (0: onnxruntime-web's default)."""
        self.browser = config.browser
        self.web: web_leg.WebRuntime | None = None
        self.early = _folder_bytes(first) <= KEEP_BROWSER_BYTES
        """Whether the browser starts with the leg (``first``: the folder of the tier reached first)."""
        super().__init__(config, blocks)

    def _open(self, config: FramingConfig) -> None:
        web_leg.find_browser(config.browser)  # what is missing skips the leg now
        node_leg.find_node(config.node)
        # started now, so its page loads onnxruntime-web while Python decodes the first tier (unless that tier is
        # large); a browser that will not start is said as the first tier's failure, when that tier starts it again
        if self.early:
            with contextlib.suppress(node_leg.LegFailed):
                self._start()

    def _start(self) -> web_leg.WebRuntime:
        if self.web is None:
            provider = self.provider or "wasm"
            self.web = web_leg.WebRuntime(self.browser, node=self.node, threads=self.threads, provider=provider)
        return self.web

    def _run(
        self, tier: Tier, rows: list[node_leg.NodeRow], described: dict[str, Any] | None, prefill_rows: int | None
    ) -> dict[str, Any]:
        try:
            web = self._start()
        except node_leg.LegFailed as exc:  # the browser is there and would not start: a failure, not a skip
            if not self.out["tiers"]:
                raise NotStarted(str(exc)) from exc
            raise
        self.out["host"] = web.host
        try:
            return web.run_tier(
                tier, rows, self.blocks, timing_repeats=self.repeats, described=described, prefill_rows=prefill_rows
            )
        finally:
            if _folder_bytes(tier.path) > KEEP_BROWSER_BYTES:
                self.close()

    def _measured(self, answer: dict[str, Any]) -> None:
        self.out.update(version=answer.get("version"), execution=answer["execution"])

    def close(self) -> None:
        if self.web is not None:
            self.web.close()
            self.web = None


class WebGpuLeg(WebLeg):
    """onnxruntime-web's WebGPU execution provider (issue 44): the same page in a browser with WebGPU enabled.

    Without an adapter the leg is skipped with the page's reason; on a software adapter (SwiftShader, no GPU)
    the page times nothing: its numerics are WebGPU's kernels, its speed is CPU emulation.
    """

    provider = "webgpu"


def _divergence(
    tier: Tier,
    rows: list[node_leg.NodeRow],
    golden: GoldenRows,
    found: list[dict[str, Any]],
    reopen: Callable[[], Tier] | None = None,
) -> list[dict[str, Any]]:
    """Each row where another runtime's argmax leaves the Python leg's decode, with Python's own margin there.

    The runtime's margin is its logit of its token over that of Python's; Python's margin, the
    reverse under Python onnxruntime at the same step: two near-zero margins are a near-tie, one
    large margin a kernel that moved the logits.
    """
    if found and reopen is not None:  # Python let go of the tier's sessions while the leg ran: load them again
        again = reopen()
        try:
            return _divergence(again, rows, golden, found)
        finally:
            release(again)
    out = []
    for d in found:
        row = rows[d["row"]]
        if tier.kind == "causal":  # row 0 is the prompt's prefill; the prefix's first place is the prompt's
            logits, _ = tier.feed_prefix(row.source_ids, row.prefix[1 : d["step"] + 1], 1)
        else:
            logits, _ = tier.feed_prefix(row.source_ids, row.prefix[: d["step"] + 1], 1)
        step = logits[d["step"]]
        python_margin = float(step[d["expected"]]) - float(step[d["token"]])
        out.append(divergence(d, golden.rows[d["row"]].line, python_margin))
    return out


class _Greedy:
    """A greedy decode the Python leg already made: its tokens and text, as :class:`Decoded` gives them."""

    def __init__(self, tier: Tier, tokens: list[int]) -> None:
        self.tokens = tuple(tokens)
        self.text = tier.tokenizer.decode(tokens)


def pair_acceptance(
    pair: Pair, golden: GoldenRows, k: int, is_self: bool, greedy: list[list[int]] | None = None
) -> dict[str, Any]:
    """Probe (uniform single-step framing) vs runtime (batched verifier) acceptance, and output preservation;
    ``greedy``: the verifier's greedy decodes of the rows, as the Python leg recorded them (decoded here if not)."""
    probe = [0, 0]
    runtime = [0, 0]
    differs: list[dict[str, Any]] = []
    for i, row in enumerate(golden.rows):
        p = pair.decode(row.input, k, verify="single")
        r = pair.decode(row.input, k)
        plain = pair.verifier.greedy(row.input) if greedy is None else _Greedy(pair.verifier, greedy[i])
        probe[0] += p.accepted
        probe[1] += p.proposed
        runtime[0] += r.accepted
        runtime[1] += r.proposed
        if r.tokens != plain.tokens:
            differs.append(differing(row.line, row.input, r.text, plain.text))
    names = (pair.drafter.name, pair.verifier.name)
    return acceptance_part(*names, is_self, k, (probe[0], probe[1]), (runtime[0], runtime[1]), len(golden), differs)


def _let_go(tiers: dict[str, Tier], tier: Tier) -> tuple[dict[str, Any] | None, Callable[[], Tier] | None]:
    """Before the JavaScript legs: the tier as they are told it, and, where the tiers are loaded one at a time, its
    sessions let go of (each leg's process loads its own copy) with how to load them again. A caller's own tiers
    are kept as they are."""
    if not isinstance(tiers, OneAtATime):
        return None, None
    try:
        described = node_leg.describe(tier)
    except node_leg.LegSkipped:  # each leg says so for itself, from the tier's shape
        described = None
    release(tier)
    return described, lambda: tiers[tier.name]


def run_framing(
    tiers: dict[str, Tier],
    pairs: dict[str, Pair],
    self_pairs: dict[str, Pair],
    golden: GoldenRows,
    config: FramingConfig,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
    runtime_version: str | None = None,
    prefill_rows: int | None = None,
) -> dict[str, Any]:
    """Fill ``out`` (the record's ``framing`` section) in place, saving after every tier and pair.

    ``runtime_version`` is the onnxruntime version from the run's environment fingerprint,
    the one place it is read. ``tiers`` and the pairs may be loaded one at a time as they are reached
    (:class:`~measure.suites.steps.OneAtATime`); ``prefill_rows``: a budget's cut of the prompt framings.
    """
    blocks: list[int | str] = [*config.k, *(["whole"] if config.whole_prefix else [])]
    python = python_leg(runtime_version)
    out.update(framing_part(blocks, python))
    others: list[NodeLeg | GenaiLeg] = [NodeLeg(config, blocks)] if config.node_leg else []
    if config.web_leg:  # issue 30: the browser leg (one Chromium across small tiers, one per large tier)
        others.append(WebLeg(config, blocks, session_threads(tiers), first_folder(tiers)))
    if config.webgpu_leg:  # issue 44: the page again on WebGPU, where the browser offers an adapter
        others.append(WebGpuLeg(config, blocks, first=first_folder(tiers)))
    causal = "causal" in kinds_of(tiers)
    genai = GenaiLeg(config) if config.genai_leg and causal else None  # og runs decoder-only models: none, no leg
    others.extend([genai] if genai else [])
    out["legs"].extend(leg.out for leg in others)
    total = len(tiers) * (1 + len(others)) + len(pairs) + len(self_pairs) + (1 if genai else 0)
    done = 0
    progress("framing begins", done, total)  # the first tier takes minutes at real size: say what is running
    # onnxruntime-genai runs beside Python's sessions (its loop and measure's, row by row); the JavaScript legs
    # run in their own processes, so Python lets go of a tier loaded one at a time before they start
    beside = [leg for leg in others if isinstance(leg, GenaiLeg)]
    apart = [leg for leg in others if not isinstance(leg, GenaiLeg)]
    try:
        for tier in tiers.values():
            python["tiers"].append(tier_parity(tier, golden, config, prefill_rows))
            done += 1
            progress(f"framing {tier.name}", done, total)
            save()
            for leg in beside:
                leg.add(tier, golden, python["tiers"][-1])
                leg.finish()
                done += 1
                progress(f"framing {tier.name} ({leg.label})", done, total)
                save()
            described, reopen = _let_go(tiers, tier) if apart else (None, None)
            for leg in apart:
                leg.add(tier, golden, python["tiers"][-1], described, reopen, prefill_rows)
                leg.finish()
                done += 1
                progress(f"framing {tier.name} ({leg.runtime})", done, total)
                save()
    finally:
        for leg in others:
            leg.close()
    if genai is not None:  # og's draft-model speculative decoding of the decoder-only pairs, beside measure's
        genai.add_pairs(pairs.values(), golden, config.probe_k)
        done += 1
        progress("framing pairs (onnxruntime-genai)", done, total)
        save()
    decoded = {t["tier"]: t["output_ids"] for t in python["tiers"]}  # each verifier's greedy, decoded once
    for is_self, group in ((False, pairs), (True, self_pairs)):
        for name, pair in group.items():
            greedy = decoded.get(name.split("->")[-1])
            out["acceptance"].append(pair_acceptance(pair, golden, config.probe_k, is_self, greedy))
            done += 1
            progress(f"acceptance {name}", done, total)
            save()
    return out
