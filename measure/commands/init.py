"""Start measuring a model repository: a suite config from its tier folders, golden rows, the site and the workflow.

Writes only files that do not exist yet (measure.toml, golden.jsonl, the site config of the
site generator it finds or ``--site`` names: mkdocs.yml, properdocs.yml or zensical.toml,
docs/index.md, .github/workflows/measure.yml), prints what it wrote and what to run next;
run twice, the second run changes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "tiers",
        type=Path,
        nargs="*",
        metavar="TIER_DIR",
        help="tier folders (default: every folder with a complete graph layout, up to 3 levels down)",
    )
    rows = p.add_mutually_exclusive_group()
    rows.add_argument("--golden", type=Path, default=None, help="your golden rows (JSONL); default: write a template")
    rows.add_argument(
        "--prompts",
        type=Path,
        default=None,
        metavar="FILE",
        help="plain prompts (one a line, or JSONL with input): write golden rows whose outputs are the reference "
        "tier's own greedy continuations (a decoder-only model's golden rows)",
    )
    p.add_argument(
        "--chat-template",
        action="store_true",
        help="with --prompts: apply the tokenizer's own chat template (tokenizer_config.json, or "
        "chat_template.jinja) to every prompt, in the golden rows and the run alike",
    )
    p.add_argument(
        "--max-new-tokens",
        type=int,
        default=32,
        metavar="N",
        help="with --prompts: the continuations' length, and the suites' decode length (default 32)",
    )
    p.add_argument(
        "--site",
        choices=("zensical", "properdocs", "mkdocs"),
        default=None,
        help="the site generator (default: the one whose config is there, else zensical or properdocs if "
        "installed, else mkdocs)",
    )


def run(args: argparse.Namespace) -> int:
    from measure.errors import MeasureError
    from measure.site.hosts import HOSTS, detect, host
    from measure.tools.scaffold import CONFIG, Prompts, plan, write_new

    root = Path.cwd()
    if args.chat_template and args.prompts is None:
        raise MeasureError("--chat-template: applies to --prompts; give the prompts file too")
    if not 1 <= args.max_new_tokens <= 4096:
        raise MeasureError(f"--max-new-tokens {args.max_new_tokens}: expected 1 to 4096 new tokens")
    site = host(args.site) if args.site else detect(root)
    prompts = None if args.prompts is None else Prompts(args.prompts, args.chat_template, args.max_new_tokens)
    planned, notes = plan(root, args.tiers, args.golden, site, prompts)
    written = write_new(planned)
    for w in written:
        where = w.path.relative_to(root).as_posix()
        print(f"{'wrote' if w.wrote else 'kept '}  {where}  ({w.why})")
    for note in notes:
        print(f"note   {note}")
    if args.site is None:
        why = "its config is here" if (root / site.config).exists() else "installed"
        print(f"site   {site.name} ({why}; --site zensical, properdocs or mkdocs picks another)")
    if not any(w.wrote for w in written):
        print("nothing written: every file measure init writes is already there")
    configured = any(p.path.exists() and p.path.name in {h.config for h in HOSTS.values()} for p in planned)
    build = f" && {site.build}" if configured else ""
    print(f"next   measure run --config {CONFIG} && measure check{build}")
    if configured:
        print(f"serve  {site.serve}")
    return 0
