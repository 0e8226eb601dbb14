"""Single onnxruntime calls timed on their own, and one model's two decoder layouts timed against each other.

Speculative decoding's prediction needs what a verifier call of k + 1 tokens
costs against a single step, and what a drafter step costs: measured here,
apart from any decode loop, so "observed below predicted" can be told apart
into the calls (the model's cost) and the loop (measure's own work). Calls
run on top of a realistic cache: half of the tier's own greedy output of the
row, the mean length a speculative round's verifier call sees over a row.

The layout comparison decodes the golden rows greedily (token ids in -> ids out,
as the wall-clock suite times them) with the merged
(``decoder_model_merged.onnx``, one ``If`` graph) and the split layout of the
same weights, repeats interleaved (M S M S ...), so the layout's own cost is
measured side by side. Nothing is summarised here: samples go to the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.engine.load import load_tier
from measure.engine.options import SessionConfig
from measure.engine.result import Decoded
from measure.engine.session import Trace
from measure.engine.speculative import Pair
from measure.engine.tier import Lane, Tier
from measure.record.model.call_costs import (
    add_call_repeat,
    add_layout_repeat,
    call_costs_part,
    layout_pair,
    layout_variant,
)
from measure.suites import Loader, Progress, Save, no_progress, us
from measure.suites.config import LayoutSpec, WallclockConfig
from measure.suites.steps import release


@dataclass(frozen=True)
class _Point:
    """One row's place for the timed calls: the source, the outputs the cache holds, the real tokens that follow
    (padded by repeating the last). A lane is opened on it for each set of sessions (:meth:`open`)."""

    ids: tuple[int, ...]
    kept: int
    """Outputs of the tier's own greedy decode the cache holds (about half of them)."""
    outputs: tuple[int, ...]
    follow: tuple[int, ...]

    def open(self, tier: Tier) -> Lane:
        """The lane after the start token (decoder-only: the prompt) and the kept outputs, on ``tier``'s sessions:
        each timed call is fed on it, then trimmed off (as a rejected draft is). Untimed."""
        trace = Trace()
        opening = tier.open_speculative(list(self.ids), len(self.outputs) + len(self.follow) + 1, trace)
        lane = opening.lane
        assert lane is not None, "an opening allowed at least one output token has a lane"
        done = len(opening.seq) - opening.prompt  # outputs the opening already decided (decoder-only: the first)
        if opening.stopped is None and self.kept >= done:  # the lane lacks the last committed token, then the rest
            for token in [opening.seq[-1], *self.outputs[done : self.kept]]:
                lane.feed([token], trace)
        return lane


def _point(tier: Tier, text: str, most: int) -> _Point:
    """The first half of the tier's own greedy output of ``text`` kept, and what follows it."""
    out = list(tier.greedy(text).tokens)
    ids = tier.source_ids(text)
    keep = len(out) // 2
    if tier.max_target_tokens:  # room for the longest call on top of the cache
        keep = max(0, min(keep, tier.max_target_tokens - most - 1))
    if tier.context is not None:  # decoder-only: prompt and output share the positions
        keep = max(0, min(keep, tier.context - len(ids) - most - 1))
    rest = out[keep:] or [tier.special.eos]
    return _Point(tuple(ids), keep, tuple(out), tuple((rest + [rest[-1]] * most)[:most]))


def _call(lane: Lane, point: _Point, n: int, trace: Trace) -> None:
    """One call of ``n`` following tokens on the lane, which is trimmed back to where it was."""
    before = lane.length
    lane.feed(list(point.follow[:n]), trace)
    lane.trim(before)


def _sweep(
    lanes: dict[str, list[Lane]], points: dict[str, list[_Point]], widths: dict[str, list[int]], shift: int, rows: int
) -> dict[str, list[list[float]]]:
    """Tier -> per width, per row: the seconds inside ``session.run`` of one call of that many tokens.

    Each tier's calls run back to back, as a decode runs them (the demo's models fit in a core's L2 cache, so
    a call right after another model's runs measurably slower); tiers take turns first across repeats. Widths
    are interleaved row by row, their order rotated, so a burst of load lands on every width alike.
    """
    out = {name: [[0.0] * rows for _ in n] for name, n in widths.items()}
    names = list(widths)
    start = shift % len(names) if names else 0
    for name in names[start:] + names[:start]:
        n = widths[name]
        for i in range(rows):
            r = (shift + i) % len(n)
            for j in [*range(r, len(n)), *range(r)]:
                trace = Trace()
                _call(lanes[name][i], points[name][i], n[j], trace)
                out[name][j][i] = us(trace.run_s())
    return out


def _widths(tiers: dict[str, Tier], pairs: dict[str, Pair], ks: tuple[int, ...]) -> dict[str, list[int]]:
    """Tier name -> the call widths to time: 1 .. max(k) + 1 for a verifier, 1 for a drafter."""
    widths: dict[str, list[int]] = {}
    for pair in pairs.values():
        widths.setdefault(pair.drafter.name, [1])
    for pair in pairs.values():
        widths[pair.verifier.name] = list(range(1, max(ks, default=1) + 2))
    return {name: n for name, n in widths.items() if name in tiers}


def run_call_costs(
    load: Loader,
    texts: list[str],
    config: WallclockConfig,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Fill ``out`` (the record's ``wallclock.call_costs``) in place.

    Each repeat times every tier and, row by row, every width once; with ``fresh_sessions`` every repeat after the first
    loads new sessions and opens each row's cache on them again.
    """
    tiers, pairs = load()
    widths = _widths(tiers, pairs, config.k)
    rows = texts[: config.call_cost_rows]
    most = max((max(n) for n in widths.values()), default=1)
    points = {name: [_point(tiers[name], text, most) for text in rows] for name in widths}
    lanes = {name: [p.open(tiers[name]) for p in points[name]] for name in widths}
    cache_tokens = {name: [lane.length for lane in lanes[name]] for name in widths}
    out.update(call_costs_part(len(rows), config.fresh_sessions, {n: (w, cache_tokens[n]) for n, w in widths.items()}))
    for rep in range(config.repeats):
        if rep and config.fresh_sessions:  # the same places, opened on the new sessions, the old ones let go first
            lanes = {}
            release(*tiers.values())
            tiers = load()[0]
            lanes = {name: [p.open(tiers[name]) for p in points[name]] for name in widths}
        if rep == 0 or config.fresh_sessions:  # untimed: a new session's first calls allocate
            _sweep(lanes, points, widths, 0, min(2, len(rows)))
        add_call_repeat(out, _sweep(lanes, points, widths, rep, len(rows)), rep + 1)
        progress(f"call costs repeat {rep + 1}/{config.repeats}", rep + 1, config.repeats)
        save()
    lanes = {}
    release(*tiers.values())
    return out


def _variant(path: str, tier: Tier, results: list[Decoded]) -> dict[str, Any]:
    return layout_variant(path, tier.layout, [len(d.tokens) for d in results], [d.calls for d in results])


def run_layouts(
    layouts: tuple[LayoutSpec, ...],
    session: SessionConfig,
    texts: list[str],
    config: WallclockConfig,
    out: dict[str, Any],
    save: Save,
    progress: Progress = no_progress,
) -> dict[str, Any]:
    """Fill ``out`` (the record's ``wallclock.layouts``): per model, both layouts' greedy samples, interleaved."""

    def loaded(spec: LayoutSpec) -> dict[str, Tier]:
        return {
            side: load_tier(
                folder, session, label=f"{spec.name}~{side}", name=spec.name, max_new_tokens=config.max_new_tokens
            )
            for side, folder in (("merged", spec.merged), ("split", spec.split))
        }

    for spec in layouts:
        sides = loaded(spec)
        # tokenized once per side, untimed: the timed region is ids in -> ids out
        ids = {side: [tier.source_ids(t) for t in texts] for side, tier in sides.items()}
        first = {side: [tier.greedy_ids(i) for i in ids[side]] for side, tier in sides.items()}  # warm-up, untimed
        variants = {side: _variant(str(getattr(spec, side)), sides[side], first[side]) for side in sides}
        same = [d.tokens for d in first["merged"]] == [d.tokens for d in first["split"]]
        entry = out[spec.name] = layout_pair(same, variants["merged"], variants["split"])
        for rep in range(config.repeats):
            if rep and config.fresh_sessions:
                release(*sides.values())
                sides = loaded(spec)
                for side, tier in sides.items():
                    tier.greedy_ids(ids[side][0])
            order = ("merged", "split") if rep % 2 == 0 else ("split", "merged")
            results = {side: [sides[side].greedy_ids(i) for i in ids[side]] for side in order}
            samples = {
                side: ([us(d.wall_s) for d in found], [us(d.run_s) for d in found]) for side, found in results.items()
            }
            add_layout_repeat(entry, samples, rep + 1)
            progress(f"layouts {spec.name} repeat {rep + 1}/{config.repeats}", rep + 1, config.repeats)
            save()
        release(*sides.values())
    return out
