"""Decode texts with a tier (encoder-decoder or decoder-only): greedy single-step, or speculative with a drafter.

Texts come from the command line, or one per line from stdin when none are given.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from measure.errors import MeasureError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tier", type=Path, metavar="TIER_DIR", help="the (verifier) tier folder")
    p.add_argument("texts", nargs="*", metavar="TEXT", help="source texts (default: one per line from stdin)")
    p.add_argument("--draft", type=Path, metavar="DRAFT_DIR", help="decode speculatively with this drafter tier")
    p.add_argument("--k", type=int, default=4, help="draft tokens per speculative round (default 4)")
    p.add_argument(
        "--max-new-tokens", type=int, default=None, help="cap on output tokens, at least 1 (default from source)"
    )
    p.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (default 1)")
    p.add_argument("--stats", action="store_true", help="print calls, tokens, timings and acceptance on stderr")


def stdin_lines() -> list[str]:
    """Non-blank lines of stdin, read as UTF-8; bytes that are not UTF-8 are an error naming the line."""
    texts = []
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        try:
            line = raw.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError as exc:
            raise MeasureError(f"<stdin>: line {number}: not UTF-8 text (byte {exc.start}); expected UTF-8") from exc
        if line.strip():
            texts.append(line)
    return texts


def run(args: argparse.Namespace) -> int:
    from measure.engine.load import load_tier
    from measure.engine.options import SessionConfig
    from measure.engine.result import Decoded
    from measure.engine.speculative import open_pair

    if args.max_new_tokens is not None and args.max_new_tokens < 1:
        raise MeasureError(f"--max-new-tokens: expected at least 1, got {args.max_new_tokens}")
    if args.k < 1:
        raise MeasureError(f"--k: expected at least 1 draft token per round, got {args.k}")
    if args.threads < 0:
        raise MeasureError(f"--threads: expected a count >= 0 (0 lets onnxruntime choose), got {args.threads}")
    config = SessionConfig(intra_op_threads=args.threads)
    verifier = load_tier(args.tier, config, label="verifier")
    pair = open_pair(load_tier(args.draft, config, label="drafter"), verifier) if args.draft else None
    texts = args.texts or stdin_lines()
    totals = {"rows": 0, "tokens": 0, "calls": 0, "wall_s": 0.0, "run_s": 0.0, "proposed": 0, "accepted": 0}
    for text in texts:
        if pair is not None:
            speculative = pair.decode(text, args.k, max_new_tokens=args.max_new_tokens)
            totals["proposed"] += speculative.proposed
            totals["accepted"] += speculative.accepted
            result: Decoded = speculative
        else:
            result = verifier.greedy(text, max_new_tokens=args.max_new_tokens)
        print(result.text, flush=True)
        totals["rows"] += 1
        totals["tokens"] += len(result.tokens)
        totals["calls"] += result.calls
        totals["wall_s"] += result.wall_s
        totals["run_s"] += result.run_s
    if args.stats:
        ms = 1000 * totals["wall_s"] / max(1, totals["tokens"])
        inside = totals["run_s"] / totals["wall_s"] if totals["wall_s"] else 0.0
        line = (
            f"rows {totals['rows']}  tokens {totals['tokens']}  calls {totals['calls']}  "
            f"wall {totals['wall_s']:.4f}s  ms/token {ms:.3f}  inside session.run {inside:.1%}"
        )
        if pair is not None:
            acc = totals["accepted"] / totals["proposed"] if totals["proposed"] else float("nan")
            line += f"  k {args.k}  acceptance {totals['accepted']}/{totals['proposed']} = {acc:.4f}"
        print(line, file=sys.stderr)
    return 0
