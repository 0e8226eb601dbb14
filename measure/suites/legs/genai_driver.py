"""The onnxruntime-genai leg: decoder-only tiers decoded by onnxruntime-genai's compiled loop, beside measure's.

onnxruntime-genai (``og``) runs the whole generate loop in C++: on the same graph it
is the lower bound of what a loop over onnxruntime costs, and so the anchor for
measure's own overhead. Per tier (a genai folder as it is, an optimum export through
a generated ``genai_config.json``, :mod:`measure.engine.causal.genai_export`) and golden row:
og's greedy tokens against measure's, og's logits against measure's on the same
prefix, and the compiled loop's time to first token and per decode step, ``repeats``
times with raw samples. Prompts are fed as ids tokenized by measure (``og.Tokenizer``
may refuse a ``tokenizer.json`` the tokenizers library reads).

Timing: a generator is made untimed; the clock runs from ``append_tokens`` (the prefill)
to the last ``get_next_tokens``. ``get_logits`` makes og run the model at once instead of
in the next ``generate_next_token``, so logits are read in a pass of their own, untimed.
``get_next_tokens`` returns the eos og stops on (``get_sequence`` leaves it out); the
tokens here leave it out, as measure's do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from statistics import median
from time import perf_counter
from typing import Any

import numpy as np

from measure.engine.causal.genai_export import genai_folder
from measure.engine.causal.tier import CausalTier


def og_import() -> tuple[Any, str | None]:
    """The module, or None and why not (never raises: a missing runtime is a skipped leg)."""
    try:
        import onnxruntime_genai as og
    except Exception as exc:  # ImportError, or a broken install failing in its own way
        return None, f"onnxruntime_genai is not importable ({type(exc).__name__}: {str(exc).splitlines()[0]})"
    return og, None


_OPT_LEVELS = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED"}


def og_model(og: Any, folder: Path, tier: CausalTier, draft: bool = False) -> Any:
    """og's model for ``folder`` with the tier's session options (threads, graph optimizations) overlaid, so both
    loops run the graph under the same onnxruntime settings (og's default is all cores)."""
    c = tier.config
    options = {
        "intra_op_num_threads": c.intra_op_threads,
        "inter_op_num_threads": c.inter_op_threads,
        "graph_optimization_level": _OPT_LEVELS.get(c.graph_optimization, "ORT_ENABLE_ALL"),
    }
    config = og.Config(str(folder))
    graphs = ("decoder", "draft") if draft else ("decoder",)
    config.overlay(json.dumps({"model": {g: {"session_options": options} for g in graphs}}))
    return og.Model(config)


def _generator(og: Any, model: Any, max_length: int, draft_tokens: int | None = None) -> Any:
    params = og.GeneratorParams(model)
    params.set_search_options(do_sample=False, max_length=max_length)
    if draft_tokens is not None:
        params.set_speculative_options(max_draft_tokens=draft_tokens)
    return og.Generator(model, params)


def og_decode(og: Any, model: Any, ids: list[int], limit: int, eos: int) -> dict[str, Any]:
    """One timed greedy decode under og: tokens (eos left out), why it stopped, first-token and step times."""
    gen = _generator(og, model, len(ids) + limit)
    out: list[int] = []
    stamps: list[float] = []
    start = perf_counter()
    gen.append_tokens(ids)
    while not gen.is_done():
        gen.generate_next_token()
        out.append(int(gen.get_next_tokens()[0]))
        stamps.append(perf_counter())
    stopped = "eos" if out and out[-1] == eos else "max_new_tokens"
    steps = [b - a for a, b in pairwise(stamps)]
    return {
        "tokens": out[:-1] if stopped == "eos" else out,
        "stopped": stopped,
        "first_token_s": stamps[0] - start if stamps else None,
        "steps_s": steps,
    }


def og_logits(og: Any, model: Any, ids: list[int], tokens: list[int], limit: int) -> np.ndarray:
    """og's logits deciding each of ``tokens`` and the one after (untimed): ``(len(tokens) + 1, vocab)``."""
    gen = _generator(og, model, len(ids) + limit)
    gen.append_tokens(ids)
    rows = [np.array(gen.get_logits()).reshape(-1)]
    for _ in tokens:
        if gen.is_done():
            break
        gen.generate_next_token()
        if gen.is_done():
            break
        rows.append(np.array(gen.get_logits()).reshape(-1))
    return np.stack(rows)


def _paired(
    og: Any, model: Any, tier: CausalTier, ids: list[int], limit: int, repeats: int
) -> tuple[list[dict[str, Any]], list[Any]]:
    """``repeats`` decodes of one row by each loop, back to back and the order alternating, so drift hits both."""
    theirs: list[dict[str, Any]] = []
    ours: list[Any] = []
    for k in range(repeats):
        for side in ("og", "measure") if k % 2 else ("measure", "og"):
            if side == "og":
                theirs.append(og_decode(og, model, ids, limit, tier.special.eos))
            else:
                ours.append(tier.greedy_ids(ids, max_new_tokens=limit))
    return theirs, ours


def _per_step(total_ms: float, steps: int) -> float | None:
    return total_ms / steps if steps else None


def _parted(
    tier: CausalTier, tokens: list[int], ours: list[int], at: int | None, theirs: np.ndarray, mine: np.ndarray
) -> dict[str, Any] | None:
    """Where og's decode leaves measure's: the step, both tokens (eos where one stopped) and each loop's margin
    there (og's logit of its token over measure's; measure's, the reverse), as the other legs report it."""
    if at is None or at >= len(theirs) or at >= len(mine):
        return None
    eos = tier.special.eos
    token, expected = (tokens[at] if at < len(tokens) else eos), (ours[at] if at < len(ours) else eos)
    return {
        "step": at,
        "token": int(token),
        "expected": int(expected),
        "margin": float(theirs[at][token] - theirs[at][expected]),
        "python_margin": float(mine[at][expected] - mine[at][token]),
    }


def _row(
    og: Any, model: Any, tier: CausalTier, ids: list[int], given: Sequence[int] | None, repeats: int
) -> dict[str, Any]:
    limit = tier.default_max_new_tokens(len(ids))
    runs, mine = _paired(og, model, tier, ids, limit, repeats)
    tokens = runs[0]["tokens"]
    ours = list(given) if given is not None else list(mine[0].tokens)
    differ = next((i for i, (a, b) in enumerate(zip(tokens, ours, strict=False)) if a != b), None)
    if differ is None and len(tokens) != len(ours):
        differ = min(len(tokens), len(ours))
    theirs_logits = og_logits(og, model, ids, tokens, limit)
    logits, _ = tier.feed_prefix(ids, tokens[: len(theirs_logits) - 1], 1)
    parted = _parted(tier, tokens, ours, differ, theirs_logits, logits)
    steps, our_steps = len(runs[0]["steps_s"]), mine[0].calls - 1
    decode = [sum(r["steps_s"]) * 1e3 for r in runs]
    our_decode = [(d.wall_s - (d.first_token_s or d.wall_s)) * 1e3 for d in mine]
    ratios = []
    if steps and our_steps:  # per-step cost of measure's loop over og's, repeat by repeat on this row
        ratios = [(a / our_steps) / (b / steps) for a, b in zip(our_decode, decode, strict=True) if b > 0]
    return {
        "tokens": tokens,
        "stopped": runs[0]["stopped"],
        "equal": differ is None,
        "first_difference": differ,
        "divergence": parted,
        "logits_max_abs_diff": float(np.abs(logits - theirs_logits[: len(logits)]).max()),
        "logits_rows": len(logits),
        "steps": steps,
        "first_token_ms": [(r["first_token_s"] or 0.0) * 1e3 for r in runs],
        "decode_ms": decode,
        "measure_steps": our_steps,
        "measure_first_token_ms": [(d.first_token_s or 0.0) * 1e3 for d in mine],
        "measure_decode_ms": our_decode,
        "measure_over_og": ratios,
    }


def _summary(rows: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    """Per repeat over all rows: mean first-token ms and ms per decode step (total step time / steps), each loop;
    measure over og: the median of the rows' paired per-step ratios (a row decoded by both back to back)."""
    out: dict[str, Any] = {}
    for prefix in ("", "measure_"):
        steps = sum(r[f"{prefix}steps"] for r in rows)
        first = [float(np.mean([r[f"{prefix}first_token_ms"][k] for r in rows])) for k in range(repeats)]
        per_step = [_per_step(sum(r[f"{prefix}decode_ms"][k] for r in rows), steps) for k in range(repeats)]
        out[f"{prefix}first_token_ms"] = {"median": median(first), "samples": first}
        timed = [x for x in per_step if x is not None]
        out[f"{prefix}ms_per_step"] = {"median": median(timed) if timed else None, "samples": per_step}
        out[f"{prefix}steps"] = steps
    ratios = [x for r in rows for x in r["measure_over_og"]]
    out["measure_over_og"] = median(ratios) if ratios else None
    return out


def run_genai_tier(
    og: Any, tier: CausalTier, golden: Sequence[str], measure_tokens: Sequence[Sequence[int]] | None, repeats: int
) -> dict[str, Any]:
    """One tier under og: ``failed`` with the message where og cannot load or run it."""
    repeats = max(repeats, 1)
    try:
        ids = [tier.source_ids(text) for text in golden]
        longest = max((len(i) + tier.default_max_new_tokens(len(i)) for i in ids), default=1)
        with genai_folder(tier, longest) as folder:
            model = og_model(og, folder, tier)
            for row in ids[:4]:  # warm-up, discarded: both runtimes' first calls pay onnxruntime's lazy setup
                _paired(og, model, tier, row, tier.default_max_new_tokens(len(row)), 1)
            rows = [
                _row(og, model, tier, row, measure_tokens[i] if measure_tokens else None, repeats)
                for i, row in enumerate(ids)
            ]
    except Exception as exc:  # og raises RuntimeError for a model it cannot load; all reported, none raised
        return {"status": "failed", "message": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
    cache = tier.graphs.describe().get("genai") or {"past_present_share_buffer": False, "max_length": longest}
    return {
        "status": "ok",
        "config": "folder" if tier.layout == "genai" else "generated",
        "cache": cache,
        "equal_rows": sum(r["equal"] for r in rows),
        "differing_rows": [i for i, r in enumerate(rows) if not r["equal"]],
        **_summary(rows, repeats),
        "rows": rows,
    }


def run_genai_leg(
    tiers: Sequence[CausalTier],
    golden: Sequence[str],
    measure_tokens: Mapping[str, Sequence[Sequence[int]]] | None = None,
    repeats: int = 3,
) -> dict[str, Any]:
    """Every tier under onnxruntime-genai (JSON-ready); ``skipped`` with the reason where it is not importable.

    ``measure_tokens[tier.name][i]``: measure's greedy tokens for ``golden[i]`` (eos left out); a tier missing
    there is decoded by measure's loop here.
    """
    og, reason = og_import()
    if og is None:
        return {"status": "skipped", "reason": reason}
    mine = measure_tokens or {}
    return {
        "status": "ok",
        "runtime": {"onnxruntime_genai": getattr(og, "__version__", "unknown")},
        "repeats": max(repeats, 1),
        "tiers": {t.name: run_genai_tier(og, t, golden, mine.get(t.name), repeats) for t in tiers},
    }


def _speculative_row(og: Any, models: tuple[Any, Any], pair: Any, ids: list[int], k: int) -> dict[str, Any]:
    """One row: og's speculative decode (stats, wall) beside og's greedy and measure's pair on the same prompt."""
    target = pair.verifier
    limit = target.default_max_new_tokens(len(ids))
    gen = _generator(og, models[0], len(ids) + limit, k)
    out: list[int] = []
    start = perf_counter()
    gen.append_tokens(ids)
    while not gen.is_done():
        gen.generate_next_token()
        out.extend(int(t) for t in gen.get_next_tokens())
    wall = perf_counter() - start
    if out and out[-1] == target.special.eos:
        out.pop()
    greedy = target.greedy_ids(ids, max_new_tokens=limit)
    plain = og_decode(og, models[1], ids, limit, target.special.eos)
    ours = pair.decode_ids(ids, k, max_new_tokens=limit)
    stats = gen.get_speculative_stats()
    keys = ("rounds", "draft_tokens_proposed", "draft_tokens_accepted", "draft_forward_passes", "target_forward_passes")
    return {
        "tokens": out,
        "equal_greedy": out == list(greedy.tokens),
        "og_wall_ms": wall * 1e3,
        "og_greedy_wall_ms": (plain["first_token_s"] + sum(plain["steps_s"])) * 1e3 if plain["first_token_s"] else None,
        "measure": {
            "equal_greedy": ours.tokens == greedy.tokens,
            "proposed": ours.proposed,
            "accepted": ours.accepted,
            "wall_ms": ours.wall_s * 1e3,
            "greedy_wall_ms": greedy.wall_s * 1e3,
        },
    } | {k: stats.get(k) for k in keys}


def _ratio(rows: list[dict[str, Any]], num: Any, den: Any) -> float | None:
    top, bottom = sum(num(r) or 0 for r in rows), sum(den(r) or 0 for r in rows)
    return top / bottom if bottom else None


def run_genai_speculative(
    target: CausalTier, draft: CausalTier, golden: Sequence[str], draft_tokens: int = 4
) -> dict[str, Any]:
    """og's draft-model speculative decoding (``model.draft`` in a generated config, ``max_draft_tokens``) beside
    measure's for the same pair: acceptance, speedup over each runtime's own greedy, and whether the outputs equal
    greedy, per row; ``skipped``/``failed`` with the reason."""
    og, reason = og_import()
    if og is None:
        return {"status": "skipped", "reason": reason}
    if not hasattr(og.GeneratorParams, "set_speculative_options"):
        return {"status": "skipped", "reason": f"onnxruntime-genai {og.__version__} has no speculative options"}
    from measure.engine.speculative import Pair

    try:
        pair = Pair(draft, target)
        ids = [target.source_ids(text) for text in golden]
        longest = max((len(i) + target.default_max_new_tokens(len(i)) for i in ids), default=1)
        with genai_folder(target, longest, draft=draft) as both, genai_folder(target, longest) as alone:
            models = (og_model(og, both, target, draft=True), og_model(og, alone, target))
            for row in ids[:4]:  # warm-up, discarded: every session's first calls pay onnxruntime's lazy setup
                _speculative_row(og, models, pair, row, draft_tokens)
            rows = [_speculative_row(og, models, pair, row, draft_tokens) for row in ids]
    except Exception as exc:
        return {"status": "failed", "message": f"{type(exc).__name__}: {' '.join(str(exc).split())}"}
    return {
        "status": "ok",
        "target": target.name,
        "draft": draft.name,
        "max_draft_tokens": draft_tokens,
        "acceptance": _ratio(rows, lambda r: r["draft_tokens_accepted"], lambda r: r["draft_tokens_proposed"]),
        "speedup": _ratio(rows, lambda r: r["og_greedy_wall_ms"], lambda r: r["og_wall_ms"]),
        "measure_acceptance": _ratio(rows, lambda r: r["measure"]["accepted"], lambda r: r["measure"]["proposed"]),
        "measure_speedup": _ratio(rows, lambda r: r["measure"]["greedy_wall_ms"], lambda r: r["measure"]["wall_ms"]),
        "equal_greedy_rows": sum(r["equal_greedy"] for r in rows),
        "differing_rows": [i for i, r in enumerate(rows) if not r["equal_greedy"]],
        "rows": rows,
    }
