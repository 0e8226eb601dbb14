"""The ``measure`` command: one module per verb under ``measure.commands``, imported lazily.

Bad input (a :class:`MeasureError`) becomes one line on stderr and exit code 2,
never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from measure import __version__
from measure.errors import MeasureError

VERBS = {
    "init": "start measuring a model repository: suite config, golden rows, site and workflow (never overwrites)",
    "decode": "decode texts with a tier (greedy, or speculative with --draft)",
    "info": "print a tier's fingerprint: files, sizes, sha256, precision, layers",
    "quantize": "write a quantized tier (dynamic int8 or int4 MatMulNBits)",
    "run": "run the wall-clock and framing-parity suites; write a JSON run record",
    "show": "summarise a run record: timings, pairs, framing, verdicts",
    "validate": "check run records against the JSON Schema",
    "env": "print the environment fingerprint a run would record",
    "check": "exit 1 when a policy gate fails in the newest records",
    "compare": "compare two records case by case (faster / slower / same / inconclusive)",
    "calibrate": "calibrate each machine's run-to-run drift from A/A pairs (same build measured twice)",
    "instructions": "count instructions per output token of tiers' decodes under callgrind (valgrind)",
    "merge": "merge records from many folders into one results tree (duplicates once, conflicts kept)",
    "render": "write the RESULTS pages as plain Markdown files",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="measure", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"measure {__version__}")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb, help_text in VERBS.items():
        module = importlib.import_module(f"measure.commands.{verb}")
        p = sub.add_parser(verb, help=help_text, description=module.__doc__.splitlines()[0])
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except MeasureError as exc:
        print(f"measure {args.verb}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"measure {args.verb}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
