"""Write the RESULTS pages as plain Markdown files (and metrics.json), for readers without mkdocs."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--results", type=Path, default=Path("results"), help="results tree (default ./results)")
    p.add_argument("--out", type=Path, required=True, help="folder for the Markdown pages")
    p.add_argument("--templates", type=Path, default=None, help="page templates (default: measure's templates/)")
    p.add_argument(
        "--reference-machine",
        default=None,
        metavar="ID",
        help="the machine the Overview answers for (default: the one with the most complete records)",
    )


def run(args: argparse.Namespace) -> int:
    from measure.errors import MeasureError, SettingError
    from measure.site.render import TEMPLATES, render_results
    from measure.writing import write_text

    if args.out.exists() and not args.out.is_dir():
        raise MeasureError(f"{args.out}: --out is not a folder; expected a folder for the Markdown pages")
    try:
        pages, metrics, _home = render_results(
            args.results, args.templates or TEMPLATES, prefix=".", reference_machine=args.reference_machine
        )
    except SettingError as exc:
        raise MeasureError(f"--reference-machine {args.reference_machine}: {exc.problem}") from exc
    for rel, text in pages.items():
        write_text(args.out / rel, text, root=args.out)
    write_text(args.out / "metrics.json", metrics, root=args.out)
    print(f"{args.out}: {len(pages)} pages and metrics.json")
    return 0
