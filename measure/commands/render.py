"""Write the RESULTS pages as plain Markdown files (and metrics.json), for readers without mkdocs."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", type=Path, default=Path("results"), help="results tree (default ./results)")
    p.add_argument("--out", type=Path, required=True, help="folder for the Markdown pages")
    p.add_argument("--templates", type=Path, default=None, help="page templates (default: measure's templates/)")


def run(args: argparse.Namespace) -> int:
    from measure.site.render import TEMPLATES, render_results

    pages, metrics = render_results(args.results, args.templates or TEMPLATES, prefix=".")
    for rel, text in pages.items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (args.out / "metrics.json").write_text(metrics, encoding="utf-8")
    print(f"{args.out}: {len(pages)} pages and metrics.json")
    return 0
