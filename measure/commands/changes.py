"""List the change points in a results tree's history: where each series stepped, by how much, how sure.

Per machine, tier (or pair at k) and metric (ms/token by wall and CPU time, first token, row p90, memory,
instructions per token where counted), the records are ordered by commit and a commit's runs pooled; a
change point names the last good and the first bad commit, the ratio of the segments' geometric means with
its 95% interval and its evidence (see :mod:`measure.analysis.change_fit`). Every list states the false
alarms expected of it, measured on its own series. ``--new`` judges records that are not in the tree (a
pull request's) against the history up to ``--base-commit``: would they start a slower segment?
``--confirmed-by`` lists the change points that a commit's records (a merge's) confirmed. Nothing is written.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from measure.analysis.commit_series import Commit
    from measure.analysis.history_changes import ChangeList, ChangePoint, Start
    from measure.analysis.summary import Summary


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=Path, metavar="RESULTS", help="a results tree (<machine-id>/<run-id>.json)")
    p.add_argument("--machine", default=None, metavar="M", help="only this machine's series")
    p.add_argument("--since", default=None, metavar="SHA", help="only change points after this commit's runs")
    p.add_argument("--json", action="store_true", help="print JSON instead of lines")
    p.add_argument(
        "--new",
        type=Path,
        nargs="+",
        default=None,
        metavar="RECORD",
        help="records not in RESULTS (files or a tree): would they start a slower segment on their machine's series?",
    )
    p.add_argument(
        "--base-commit", default=None, metavar="SHA", help="with --new: the history up to this commit (if recorded)"
    )
    p.add_argument(
        "--confirmed-by", default=None, metavar="SHA", help="only the change points this commit's records confirmed"
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="reuse the site build's per-record summary cache in this folder (default: $MEASURE_CACHE, else none)",
    )


def _commit(c: Commit) -> dict[str, Any]:
    return {"commit": c.commit, "run_id": c.first.run_id, "started_at": c.first.started_at}


def _to_dict(c: ChangePoint) -> dict[str, Any]:
    return {
        "machine": c.key.machine,
        "metric": c.key.metric,
        "case": c.key.case,
        "basis": c.key.basis,
        "direction": c.direction,
        "ratio": c.ratio.value,
        "ratio_95": [c.ratio.lo, c.ratio.hi],
        "z": c.z,
        "creep": c.creep,
        "last_good": _commit(c.last_good),
        "first_bad": _commit(c.first_bad),
        "most_likely": _commit(c.at),
        "commits_before": c.before,
        "commits_after": c.after,
    }


def line(c: ChangePoint) -> str:
    """One change point in a line (what the CLI prints and the CI summaries list)."""
    from measure.analysis.commit_series import METRICS

    r = c.ratio
    where = f"between {c.last_good.short} (last good) and {c.first_bad.short} (first bad)"
    if c.between > 1:
        where += f", most likely {c.at.short}"
    kind = "crept" if c.creep else "stepped"
    return (
        f"{c.key.machine}: {c.key.case} {METRICS[c.key.metric]} {kind} {c.direction} x{r.value:.3f} "
        f"[{r.lo:.3f}, {r.hi:.3f}] {where}; z {abs(c.z):.1f}, {c.before} | {c.after} commits"
    )


def _start_line(s: Start) -> str:
    from measure.analysis.commit_series import METRICS

    return (
        f"{s.key.machine}: {s.key.case} {METRICS[s.key.metric]} x{s.ratio:.3f} over its last segment "
        f"(z {s.z:.1f}, {s.runs} run(s)): a change if the next commit measures the same"
    )


def _summary(found: ChangeList, listed: int, by: str | None) -> str:
    from measure.analysis.changepoints import MIN_COMMITS

    if not found.searched:
        if not found.compared:
            return "no change points: nothing could be compared yet (every series has one commit's runs)"
        return f"no change points: fewer than {MIN_COMMITS} commits in every series"
    said = f"{len(found.searched)} series, up to {found.commits} commits each; "
    said += f"expected false alarms in this history: {found.expected_false_alarms:.1f}"
    what = f" confirmed by {by[:10]}" if by else ""
    return f"{listed} change point(s){what}, newest first ({said})" if listed else f"no change points{what} ({said})"


def _load(args: argparse.Namespace) -> tuple[list[Summary], dict]:
    from measure.errors import MeasureError
    from measure.results.cache import SummaryCache
    from measure.results.calibration_file import load_calibration
    from measure.results.reader import load_results

    if not args.results.is_dir():
        raise MeasureError(f"{args.results}: not a results tree (expected a folder of <machine-id>/<run-id>.json)")
    folder = args.cache or (Path(os.environ["MEASURE_CACHE"]) if os.environ.get("MEASURE_CACHE") else None)
    summaries = load_results(args.results, SummaryCache(folder)).summaries
    if not summaries:
        raise MeasureError(f"{args.results}: no run records (expected <machine-id>/<run-id>.json)")
    machines = sorted({s.machine_id for s in summaries})
    if args.machine is not None and args.machine not in machines:
        raise MeasureError(f"--machine {args.machine}: no records of it in {args.results} ({', '.join(machines)})")
    return summaries, {m: load_calibration(args.results, m) for m in machines}


def _first_run(summaries: list[Summary], sha: str, flag: str) -> str:
    """When ``sha`` (a prefix of four or more hex digits) was first measured in the tree."""
    from measure.errors import MeasureError

    want = sha.lower()
    found = [s.started_at for s in summaries if len(want) >= 4 and s.commit and s.commit.lower().startswith(want)]
    if not found:
        raise MeasureError(f"{flag} {sha}: no record of that commit in the results tree")
    return min(found)


def _new(args: argparse.Namespace) -> list[Summary]:
    from measure.analysis.summary import summarize_record
    from measure.record.io import load, read_bytes
    from measure.results.cache import SummaryCache, file_sha256
    from measure.results.reader import load_results

    out = []
    for path in args.new:
        if path.is_dir():
            out += load_results(path, SummaryCache(None)).summaries
        else:
            out.append(summarize_record(load(path), file_sha256(read_bytes(path))))
    return out


def _until(summaries: list[Summary], sha: str | None) -> tuple[list[Summary], str]:
    """The history as it stood at commit ``sha`` (every run of the commits first measured by then), and what was
    taken; the whole history when the tree has no record of ``sha``."""
    if not sha:
        return summaries, "the whole history"
    first: dict[str, str] = {}
    for s in summaries:
        key = s.commit or s.run_id
        first[key] = min(first.get(key, s.started_at), s.started_at)
    want = sha.lower()
    cut = [t for c, t in first.items() if len(want) >= 4 and c.lower().startswith(want)]
    if not cut:
        return summaries, f"the whole history, which has no record of {sha[:10]}"
    return [s for s in summaries if first[s.commit or s.run_id] <= min(cut)], f"the history up to {sha[:10]}"


def _starts(args: argparse.Namespace, summaries: list[Summary], calibrations: dict) -> int:
    """``--new``: what records outside the tree would start on the series of the history up to --base-commit."""
    from measure.analysis.history_changes import find_changes, starts
    from measure.terminal import clean, strict_json

    base, said = _until(summaries, args.base_commit)
    history = find_changes(base, calibrations, args.machine)
    found = starts(history, _new(args))
    if args.json:
        print(strict_json({"searched": len(history.searched), "starts": [_start(s) for s in found]}, indent=1))
        return 0
    what = f"{len(history.searched)} series of {said}"  # said: where the base was cut
    print(
        f"{len(found)} series the new records would start a slower segment on ({what})"
        if found
        else f"the new records start no slower segment on the {what}"
    )
    for s in found:
        print(clean(f"- {_start_line(s)}"))
    return 0


def run(args: argparse.Namespace) -> int:
    from measure.analysis.history_changes import confirmed, find_changes, without_commit
    from measure.terminal import clean, strict_json

    summaries, calibrations = _load(args)
    if args.new is not None:
        return _starts(args, summaries, calibrations)
    found = find_changes(summaries, calibrations, args.machine)
    if args.since:
        found = found.since(_first_run(summaries, args.since, "--since"))
    listed = found.changes
    if args.confirmed_by:  # a commit without records (a merge no runner measured) confirmed nothing
        before = find_changes(without_commit(summaries, args.confirmed_by), calibrations, args.machine)
        listed = confirmed(before, found)
    if args.json:
        doc = {"expected_false_alarms": found.expected_false_alarms, "series": len(found.searched)}
        print(strict_json(doc | {"changes": [_to_dict(c) for c in listed]}, indent=1))
        return 0
    print(clean(_summary(found, len(listed), args.confirmed_by)))
    for c in listed:
        print(clean(f"- {line(c)}"))
    return 0


def _start(s: Start) -> dict[str, Any]:
    k = s.key
    return {"machine": k.machine, "metric": k.metric, "case": k.case, "ratio": s.ratio, "z": s.z, "runs": s.runs}
