"""Count instructions per output token of tiers' greedy decodes under callgrind (a proxy for regressions over time).

Each tier runs in its own child process under ``valgrind --tool=callgrind``;
only the decodes of the golden rows are counted (see :mod:`measure.suites.callgrind`).
Compare a tier with itself over time, never tiers with each other.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from measure.terminal import strict_json
from measure.writing import json_text, write_report


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tiers", type=Path, nargs="+", metavar="TIER_DIR", help="tier folders")
    p.add_argument("--golden", type=Path, default=None, help="golden rows (default: the bundled demo's)")
    p.add_argument("--rows", type=int, default=16, help="the first N golden rows (default 16)")
    p.add_argument("--valgrind", default=None, help="the valgrind binary (default: valgrind on PATH)")
    p.add_argument("--json", type=Path, default=None, help="also write the counts as JSON to this file")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--session", default=None, help=argparse.SUPPRESS)  # the child's session options, as JSON
    p.add_argument("--prompt", default=None, help=argparse.SUPPRESS)  # a decoder-only tier's prompt override


def run(args: argparse.Namespace) -> int:
    from measure import bundled
    from measure.errors import MeasureError
    from measure.suites.callgrind import count, decode_region
    from measure.suites.golden import load_golden

    if args.rows < 1:
        raise MeasureError(f"--rows: expected a positive number, got {args.rows}")
    golden = args.golden or bundled.GOLDEN
    texts = [r.input for r in load_golden(golden).rows[: args.rows]]
    if args.inner:  # the child under valgrind: one tier, facts on the last line of stdout
        session = json.loads(args.session) if args.session else None
        print(strict_json(decode_region(args.tiers[0], texts, session, args.prompt)))
        return 0
    found = []
    print(f"{'tier':<24}{'instructions':>16}{'tokens':>8}{'per token':>14}")
    for tier in args.tiers:
        c = count(tier, golden, len(texts), args.valgrind)
        found.append(c)
        print(f"{c.tier:<24}{c.instructions:>16,}{c.tokens:>8}{c.per_token:>14,.0f}")
    print("callgrind Ir of the decode region only; a proxy for one tier over time, never for comparing tiers")
    if args.json is not None:
        write_report(args.json, json_text([c.to_dict() for c in found], args.json, indent=2))
    return 0
