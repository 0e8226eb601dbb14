"""Check run records against the shipped JSON Schema (migrating older versions first)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="run record JSON files")


def run(args: argparse.Namespace) -> int:
    from measure.record.io import load_record
    from measure.terminal import clean

    for path in args.files:
        doc = load_record(path)
        state = "complete" if doc["complete"] else f"incomplete ({doc.get('error', 'not finished')})"
        print(clean(f"ok {path}: schema v{doc['schema_version']}, {state}"))
    return 0
