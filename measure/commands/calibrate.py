"""Calibrate each machine's run-to-run drift from A/A pairs: consecutive records of one clean build.

Prints, per machine, the pairs found, the drift (sd of log ms/token beyond each
run's own noise; weak under three pairs), the |ratio - 1| quantile and the worst
case; ``--write`` records it as ``RESULTS/<machine-id>/calibration.json``, which
``measure compare`` and the site's History page then add to their intervals. A
machine without any pair is written with a null drift and tolerance.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=Path, metavar="RESULTS", help="a results tree (<machine-id>/<run-id>.json)")
    p.add_argument("--write", action="store_true", help="write each machine's calibration.json into RESULTS")
    p.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="reuse the site build's per-record summary cache in this folder (default: $MEASURE_CACHE, else none)",
    )
    p.add_argument("--quantile", type=float, default=0.95, help="the quantile of |A/A ratio - 1| reported (0.95)")


def run(args: argparse.Namespace) -> int:
    from measure.analysis.calibration import calibrate
    from measure.errors import MeasureError
    from measure.results.cache import SummaryCache
    from measure.results.calibration_file import write
    from measure.results.reader import load_results
    from measure.terminal import clean

    if not args.results.is_dir():
        raise MeasureError(f"{args.results}: not a results tree (expected a folder of <machine-id>/<run-id>.json)")
    folder = args.cache or (Path(os.environ["MEASURE_CACHE"]) if os.environ.get("MEASURE_CACHE") else None)
    summaries = load_results(args.results, SummaryCache(folder)).summaries
    found = [calibrate(summaries, m, args.quantile) for m in sorted({s.machine_id for s in summaries})]
    if not found:
        raise MeasureError(f"{args.results}: no run records (expected <machine-id>/<run-id>.json)")
    for cal in found:
        if cal.tolerance is None:
            print(f"{cal.machine_id}: no A/A pairs (two consecutive complete records of one clean commit); policy kept")
        else:
            run_id, case, ratio = cal.worst or ("-", "-", 1.0)
            cpu = "" if cal.cpu_drift_sd is None else f"CPU drift {cal.cpu_drift_sd:.1%} from {cal.cpu_pairs} pair(s); "
            if cal.instructions_drift_sd is not None:
                sd, n = cal.instructions_drift_sd, cal.instructions_pairs
                cpu += f"instructions drift {sd:.3%} from {n} pair(s); "
            print(
                f"{cal.machine_id}: {len(cal.pairs)} A/A pair(s), {cal.values} case ratios; "
                f"drift {cal.drift_sd or 0:.1%} (sd of log ms/token beyond each run's own noise)"
                f"{'; weak: fewer than 3 pairs' if cal.weak else ''}; "
                f"{cpu}"
                f"tolerance {cal.tolerance:.1%} (q{cal.quantile:g} of |ratio - 1|); "
                f"worst {clean(case)} {ratio:.3f} in {run_id}"
            )
        if args.write:
            print(f"  wrote {write(args.results, cal)}")
    return 0
