"""Print a tier's fingerprint: files, sizes, sha256, precision (per operator), layers, vocabulary, KV-cache mode."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

_OP_PRECISION = {
    "MatMulInteger": "int8",
    "DynamicQuantizeMatMul": "int8-dynamic",
    "MatMulIntegerToFloat": "int8-dynamic",
    "DynamicQuantizeLinear": "int8-dynamic",
    "QLinearMatMul": "int8-static",
    "QLinearConv": "int8-static",
    "QGemm": "int8-static",
    "QuantizeLinear": "int8-static",
    "DequantizeLinear": "int8-static",
}


def op_precision(graph: Any, float_kind: str) -> dict[str, str]:
    """Each counted operator's precision: MatMulNBits its bits, the integer ops int8, MatMul/Gemm the float kind."""
    bits = graph.nbits["bits"] if graph.nbits else 4
    return {op: f"int{bits}" if op == "MatMulNBits" else _OP_PRECISION.get(op, float_kind) for op in sorted(graph.ops)}


def kv_cache(tier: Any) -> dict[str, Any] | None:
    """A decoder-only tier's cache mode: onnxruntime-genai's (from genai_config.json), and how measure grows it."""
    if tier.kind != "causal":
        return None
    from measure.engine.causal.bound_lane import takes_bound_buffers
    from measure.engine.causal.shared_lane import shares_buffer

    g = tier.graphs
    genai = g.describe().get("genai")
    if shares_buffer(g):
        how = f"one shared buffer of {g.context} positions, bound once"
    elif takes_bound_buffers(g):
        how = f"two buffers of {g.context} positions taking turns, bound once"
    else:
        how = "grown from length 0 by each call"
    mode = {"measure": how}
    return mode | ({"onnxruntime_genai": genai} if genai else {})


def _kv_line(cache: dict[str, Any]) -> str:
    genai = cache.get("onnxruntime_genai")
    if not genai:
        return f"kv cache   {cache['measure']}"
    shared = "one shared buffer" if genai["past_present_share_buffer"] else "past and present apart"
    return f"kv cache   onnxruntime-genai: {shared}, max_length {genai['max_length']}; measure: {cache['measure']}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tier", type=Path, metavar="TIER_DIR", help="the tier folder")
    p.add_argument("--json", action="store_true", help="print the fingerprint as JSON")


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from measure.engine.load import load_tier
    from measure.terminal import clean, strict_json

    tier = load_tier(args.tier)
    fp = tier.fingerprint()
    if args.json:
        doc = fp.to_dict() | {
            "kind": tier.kind,
            "special_ids": asdict(tier.special),
            "prompt": getattr(tier, "prompt", None),
            "max_source_tokens": tier.max_source_tokens,
            "max_target_tokens": tier.max_target_tokens,
            "kv_cache": kv_cache(tier),
            "op_precision": {g.file: op_precision(g, "fp16" if g.precision == "fp16" else "fp32") for g in fp.graphs},
        }
        print(strict_json(doc, indent=2, ensure_ascii=False))
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
        print(_kv_line(kv_cache(tier) or {}))
    for g in fp.graphs:
        extra = (
            f"  bits {g.nbits['bits']} block {g.nbits['block_size']} accuracy_level {g.nbits['accuracy_level']}"
            if g.nbits
            else ""
        )
        kinds = op_precision(g, "fp16" if g.precision == "fp16" else "fp32")
        ops = ", ".join(f"{k} {v} {kinds[k]}" for k, v in sorted(g.ops.items()))
        print(clean(f"graph      {g.file}: {g.precision}, opset {g.opset}{extra}  [{ops}]"))
    for f in fp.files:
        print(clean(f"file       {f.name:<32} {f.bytes:>10,} B  sha256 {f.sha256}"))
    print(f"total      {fp.total_bytes:,} B")
    return 0
