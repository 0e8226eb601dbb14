"""A/A and injected-slowdown benchmark for ``measure compare``: prints figures, asserts nothing.

Runs the wall-clock suite of the bundled demo tiers (base-fp32, base-int8,
small-int4 and its pair with base-int8) several times on one build: A, then
alternately A again and A with small-int4 made 30% slower (every call lasts
30% longer), and compares each later run with the first. On a quiet machine
the A/A comparisons show no faster/slower and the slowed ones show slower on
small-int4 and the pair that drafts with it. On a shared one the A/A lines
show how far two runs of one build drift apart: the figure an A/A calibration
of ``compare_tolerance`` needs.

Run: ``python benchmarks/bench_compare.py [--rows N] [--repeats N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from measure import bundled
from measure.comparison import compare
from measure.config import load_config
from measure.record import load_record
from measure.runner import run
from measure.session import Slowdown

CONFIG = """
golden = "rows.jsonl"
[session]
intra_op_threads = 1
inter_op_threads = 1
[[tiers]]
name = "base-fp32"
path = "{demo}/base-fp32"
role = "reference"
[[tiers]]
name = "base-int8"
path = "{demo}/base-int8"
role = "plain"
[[tiers]]
name = "small-int4"
path = "{demo}/small-int4"
role = "lite"
[[pairs]]
drafter = "small-int4"
verifier = "base-int8"
[wallclock]
repeats = {repeats}
k = [4]
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=2, help="A/A and slowed runs each (default 2)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        lines = bundled.GOLDEN.read_text(encoding="utf-8").splitlines(keepends=True)[: args.rows]
        (folder / "rows.jsonl").write_text("".join(lines), encoding="utf-8")
        path = folder / "suite.toml"
        path.write_text(CONFIG.format(demo=bundled.DEMO_DIR.as_posix(), repeats=args.repeats), encoding="utf-8")
        config = load_config(path)
        first = load_record(run(config, ["wallclock"], folder / "results", argv=["bench"]))
        print(f"{'comparison':<16}{'case':<28}{'new/base':>9}  {'95% CI':<16}{'p slower':>9}  outcome")
        for i in range(args.rounds):
            for label, hooks in (("A/A", None), ("slowed 30%", {"small-int4": Slowdown(0.3)})):
                doc = load_record(run(config, ["wallclock"], folder / "results", argv=["bench"], after_run=hooks))
                for c in compare(first, doc):
                    ci = f"[{c.ratio.lo:.3f}, {c.ratio.hi:.3f}]"
                    print(
                        f"{label + f' #{i + 1}':<16}{c.case:<28}{c.ratio.value:>9.3f}  {ci:<16}{c.p_slower:>9.4f}  "
                        f"{c.outcome}"
                    )


if __name__ == "__main__":
    main()
