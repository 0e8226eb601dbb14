"""Print a tier's fingerprint: files, sizes, sha256, precision, layers, vocabulary."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tier", type=Path, metavar="TIER_DIR", help="the tier folder")
    p.add_argument("--json", action="store_true", help="print the fingerprint as JSON")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from measure.engine.artifacts import load_tier
    from measure.terminal import clean

    tier = load_tier(args.tier)
    fp = tier.fingerprint()
    if args.json:
        doc = fp.to_dict() | {
            "kind": tier.kind,
            "special_ids": asdict(tier.special),
            "prompt": getattr(tier, "prompt", None),
            "max_source_tokens": tier.max_source_tokens,
            "max_target_tokens": tier.max_target_tokens,
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False))
        return 0
    print(clean(f"tier       {fp.name}  ({tier.path})"))
    causal = tier.kind == "causal"
    print(f"layout     {fp.layout} ({'decoder-only' if causal else 'encoder-decoder'})")
    print(f"precision  {fp.precision}")
    heads = "key/value heads" if causal else "heads"
    print(f"model      {fp.layers} layers, {fp.heads} {heads} x {fp.head_dim}, vocabulary {fp.vocab_size}")
    ids = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in asdict(tier.special).items() if v is not None)
    print(f"tokenizer  {fp.tokenizer} ({tier.tokenizer.vocab_size()} tokens); {ids}")
    if causal:
        print(clean(f"prompt     {tier.prompt!r}"))
    for g in fp.graphs:
        extra = f"  bits {g.nbits['bits']} block {g.nbits['block_size']}" if g.nbits else ""
        ops = ", ".join(f"{k} {v}" for k, v in sorted(g.ops.items()))
        print(f"graph      {g.file}: {g.precision}, opset {g.opset}{extra}  [{ops}]")
    for f in fp.files:
        print(clean(f"file       {f.name:<32} {f.bytes:>10,} B  sha256 {f.sha256}"))
    print(f"total      {fp.total_bytes:,} B")
    return 0
