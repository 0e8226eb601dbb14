"""The ``measure`` command: one module per verb under ``measure.commands``, imported lazily.

Bad input (a :class:`MeasureError`) becomes one line on stderr and exit code 2,
never a traceback. So does a file boundary's ``OSError`` (a read-only folder,
a full disk, a file where a folder goes) or ``UnicodeDecodeError`` that no
closer code turned into a more precise message: the line names the path and
the reason.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from measure import __version__
from measure.errors import MeasureError, docs_of
from measure.terminal import clean

VERBS = {
    "init": "start measuring a model repository: suite config, golden rows, site and workflow (never overwrites)",
    "decode": "decode texts with a tier (greedy, or speculative with --draft)",
    "info": "print a tier's fingerprint: files, sizes, sha256, precision, layers",
    "quantize": "write a quantized tier by a recipe (dynamic or static int8, MatMulNBits at 4 or 8 bits)",
    "run": "run the wall-clock and framing-parity suites; write a JSON run record",
    "explore": "try a grid of quantization recipes: quantize, drop what fails fidelity, time the rest in a run",
    "ab": "measure two artifact sets in one job, repeats paired; write a record for each (BASE, NEW)",
    "show": "summarise a run record: timings, pairs, framing, verdicts",
    "locate": "rank a recipe's error by MatMul group and layer (each quantized alone); try keeping the worst",
    "fidelity": "judge tiers against a full-precision reference: KL divergence, same top token, perplexity ratio",
    "validate": "check run records against the JSON Schema",
    "env": "print the environment fingerprint a run would record",
    "check": "exit 1 when a policy gate fails in any machine's current results",
    "compare": "compare two records case by case (faster / slower / same / inconclusive)",
    "calibrate": "calibrate each machine's run-to-run drift from A/A pairs (same build measured twice)",
    "changes": "list the change points in the history, and the false alarms expected of the list",
    "instructions": "count instructions per output token of tiers' decodes under callgrind (valgrind)",
    "merge": "merge records from many folders into one results tree (duplicates once, conflicts kept)",
    "archive": "fold each machine's past months of records into one month archive apiece (shared parts once)",
    "render": "write the RESULTS site source (pages, data, assets) into a docs folder",
}


DESCRIPTION = """\
Is a quantized ONNX tier fast and faithful on CPU? measure times your model's
tiers with onnxruntime, judges them against full precision and against each
other, and writes the answer as run records and a RESULTS site."""
EPILOG = """\
start with the bundled demo:
  measure run             measure the demo's tiers; prints the record's path
  measure show RECORD     the answer in a terminal
  measure check           exit 1 when a gate fails
  mkdocs build            the RESULTS site (the measure plugin renders the pages)
your own model: measure init TIER_DIR ... (docs/guide/your-tiers.md)
every verb and argument: docs/reference/cli.md, or measure VERB --help
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="measure",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"measure {__version__}")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb, help_text in VERBS.items():
        module = importlib.import_module(f"measure.commands.{verb}")
        p = sub.add_parser(verb, help=help_text, description=(module.__doc__ or verb).splitlines()[0])
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except MeasureError as exc:
        docs = docs_of(exc)
        return _fail(args.verb, str(exc) + (f" (how to fix: docs/{docs})" if docs else ""))
    except KeyboardInterrupt:
        print(f"measure {args.verb}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        return _fail(args.verb, os_error_line(exc))
    except UnicodeDecodeError as exc:
        return _fail(args.verb, f"input is not UTF-8 text (byte {exc.start}: {exc.reason})")


def os_error_line(exc: OSError) -> str:
    """``path: reason`` for an OSError, both paths for a rename or copy."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is not None and exc.filename2 is not None:
        return f"{exc.filename} -> {exc.filename2}: {reason}"
    if exc.filename is not None:
        return f"{exc.filename}: {reason}"
    return reason


def _fail(verb: str, message: str) -> int:
    """One line on stderr, whatever the message holds: control characters (newlines too) are escaped."""
    print(f"measure {verb}: error: {clean(message)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
