"""Rebuild the bundled demo: train, export and quantize the transliteration models.

The demo is a real task: frequent Russian words (``wordfreq``) romanised with
``iuliia`` (BGN/PCGN). A *base* model becomes the verifier tiers and a *small*
model (several times fewer parameters) the drafter tiers. Everything is seeded,
so a rebuild on the same torch version reproduces the same weights.

Needs the ``demo`` extra (torch, wordfreq, iuliia); the measure package itself
never imports torch. Run: ``python scripts/build_demo.py`` (about 15 minutes on
2 cores). ``--skip-train`` re-exports from the checkpoints in ``--work``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import re
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import iuliia
import torch
import wordfreq
from torch import nn
from torch.nn import functional as F

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "measure" / "demo"
WORD = re.compile(r"^[а-яё]+(-[а-яё]+)?$")
PAD, EOS, UNK = 0, 1, 2
SPECIALS = ["<pad>", "</s>", "<unk>"]
SEED = 20261202
GOLDEN_VERSION = 1
CALIBRATION_VERSION = 1


@dataclass(frozen=True)
class ModelConfig:
    """Sizes of one encoder-decoder; stored beside the checkpoint."""

    vocab: int
    d_model: int
    layers: int
    heads: int
    ffn: int
    max_source: int = 48
    max_target: int = 64


# --------------------------------------------------------------------- model


class Attention(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

    def split(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(x.shape[0], x.shape[1], self.heads, self.head_dim).transpose(1, 2)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim)) + bias
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        out = out.transpose(1, 2)
        return self.o(out.reshape(out.shape[0], out.shape[1], -1))


class EncoderLayer(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.attn = Attention(c.d_model, c.heads)
        self.ff = nn.Sequential(nn.Linear(c.d_model, c.ffn), nn.GELU(), nn.Linear(c.ffn, c.d_model))
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        h = self.n1(x)
        a = self.attn
        x = x + self.drop(a.attend(a.split(a.q(h)), a.split(a.k(h)), a.split(a.v(h)), bias))
        return x + self.drop(self.ff(self.n2(x)))


class DecoderLayer(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.n1, self.n2, self.n3 = (nn.LayerNorm(c.d_model) for _ in range(3))
        self.self_attn = Attention(c.d_model, c.heads)
        self.cross_attn = Attention(c.d_model, c.heads)
        self.ff = nn.Sequential(nn.Linear(c.d_model, c.ffn), nn.GELU(), nn.Linear(c.ffn, c.d_model))
        self.drop = nn.Dropout(0.1)

    def cross_kv(self, enc: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = self.cross_attn
        return a.split(a.k(enc)), a.split(a.v(enc))

    def forward(self, x, self_bias, past_k, past_v, cross_k, cross_v, cross_bias):
        a = self.self_attn
        h = self.n1(x)
        k, v = a.split(a.k(h)), a.split(a.v(h))
        if past_k is not None:
            k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        x = x + self.drop(a.attend(a.split(a.q(h)), k, v, self_bias))
        c = self.cross_attn
        x = x + self.drop(c.attend(c.split(c.q(self.n2(x))), cross_k, cross_v, cross_bias))
        return x + self.drop(self.ff(self.n3(x))), k, v


class Seq2Seq(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.c = c
        self.src_emb = nn.Embedding(c.vocab, c.d_model)
        self.src_pos = nn.Embedding(c.max_source, c.d_model)
        self.tgt_emb = nn.Embedding(c.vocab, c.d_model)
        self.tgt_pos = nn.Embedding(c.max_target, c.d_model)
        self.enc = nn.ModuleList(EncoderLayer(c) for _ in range(c.layers))
        self.dec = nn.ModuleList(DecoderLayer(c) for _ in range(c.layers))
        self.enc_norm, self.dec_norm = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab)

    @staticmethod
    def key_bias(mask: torch.Tensor) -> torch.Tensor:
        """(B, S) 1/0 mask -> additive (B, 1, 1, S) bias."""
        return (1.0 - mask.to(torch.float32))[:, None, None, :] * -1e9

    def encode(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.src_emb(ids) * math.sqrt(self.c.d_model) + self.src_pos(pos)[None]
        bias = self.key_bias(mask)
        for layer in self.enc:
            x = layer(x, bias)
        return self.enc_norm(x)

    def decode(self, ids, enc_mask, past, cross):
        """One decoder call: ``past`` is a list of (k, v) or None, ``cross`` per-layer (k, v)."""
        new = ids.shape[1]
        past_len = past[0][0].shape[2] if past is not None else 0
        pos = torch.arange(new, device=ids.device) + past_len
        x = self.tgt_emb(ids) * math.sqrt(self.c.d_model) + self.tgt_pos(pos)[None]
        keys = torch.arange(new + past_len, device=ids.device)
        self_bias = (keys[None, :] > pos[:, None]).to(torch.float32)[None, None] * -1e9
        cross_bias = self.key_bias(enc_mask)
        presents = []
        for i, layer in enumerate(self.dec):
            pk, pv = past[i] if past is not None else (None, None)
            x, k, v = layer(x, self_bias, pk, pv, cross[i][0], cross[i][1], cross_bias)
            presents.append((k, v))
        return self.head(self.dec_norm(x)), presents

    def forward(self, src, src_mask, tgt_in):
        enc = self.encode(src, src_mask)
        cross = [layer.cross_kv(enc) for layer in self.dec]
        logits, _ = self.decode(tgt_in, src_mask, None, cross)
        return logits


# ---------------------------------------------------------------------- data


def romanise(word: str) -> str:
    return iuliia.BGN_PCGN.translate(word)


def make_data(rng: random.Random) -> tuple[list[tuple[str, str]], list[dict], list[dict]]:
    """Training pairs, held-out golden rows and the harder golden block."""
    words = [w for w in wordfreq.top_n_list("ru", 60000) if WORD.match(w) and 2 <= len(w) <= 16]
    words = list(dict.fromkeys(words))
    rng.shuffle(words)
    held, train_words = words[:48], words[48:]
    common = set(words)
    rare_pool = [
        w for w in wordfreq.top_n_list("ru", 120000)[90000:] if WORD.match(w) and 6 <= len(w) <= 16 and w not in common
    ]
    rng.shuffle(rare_pool)
    rare = rare_pool[:8]
    joins = [f"{held[i]} {held[i + 1]}" for i in range(0, 16, 2)]
    pairs = [(w, romanise(w)) for w in train_words]
    for _ in range(len(pairs) // 8):  # two-word joins so a space is a learnt token
        a, b = rng.choice(train_words), rng.choice(train_words)
        if len(a) + len(b) < 30:
            pairs.append((f"{a} {b}", romanise(f"{a} {b}")))
    golden = [{"input": w, "output": romanise(w), "block": "held-out"} for w in held]
    hard = [{"input": w, "output": romanise(w), "block": "hard"} for w in joins + rare]
    return pairs, golden, hard


def build_vocab(pairs: list[tuple[str, str]], extra: list[dict]) -> list[str]:
    chars = sorted({ch for s, t in pairs for ch in s + t} | {ch for r in extra for ch in r["input"] + r["output"]})
    return SPECIALS + chars


def write_tokenizer(vocab: list[str], path: Path) -> None:
    """A character-level ``tokenizer.json`` that the ``tokenizers`` library reads."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(SPECIALS)
    tok.save(str(path))


# ------------------------------------------------------------------ training


def batches(pairs, index, batch, rng):
    order = list(range(len(pairs)))
    while True:
        rng.shuffle(order)
        for i in range(0, len(order) - batch + 1, batch):
            chunk = [pairs[j] for j in order[i : i + batch]]
            src = [[index.get(ch, UNK) for ch in s] for s, _ in chunk]
            tgt = [[index.get(ch, UNK) for ch in t] for _, t in chunk]
            s_len, t_len = max(map(len, src)), max(map(len, tgt)) + 1
            src_t = torch.tensor([x + [PAD] * (s_len - len(x)) for x in src])
            tin = torch.tensor([[PAD] + x + [PAD] * (t_len - 1 - len(x)) for x in tgt])
            tout = torch.tensor([x + [EOS] + [-100] * (t_len - 1 - len(x)) for x in tgt])
            yield src_t, (src_t != PAD).long(), tin, tout


def train(c: ModelConfig, pairs, index, steps: int, seed: int, log: str) -> Seq2Seq:
    torch.manual_seed(seed)
    model = Seq2Seq(c)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * max(0.05, 0.5 * (1 + math.cos(math.pi * s / steps)))
    )
    gen = batches(pairs, index, 128, random.Random(seed))
    model.train()
    t0 = time.time()
    for step in range(steps):
        src, mask, tin, tout = next(gen)
        loss = F.cross_entropy(model(src, mask, tin).reshape(-1, c.vocab), tout.reshape(-1), ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 500 == 0 or step == steps - 1:
            print(f"[{log}] step {step}/{steps} loss {loss.item():.4f} {time.time() - t0:.0f}s", flush=True)
    return model.eval()


@torch.no_grad()
def greedy(model: Seq2Seq, index: dict[str, int], vocab: list[str], text: str) -> str:
    src = torch.tensor([[index.get(ch, UNK) for ch in text]])
    enc = model.encode(src, torch.ones_like(src))
    cross = [layer.cross_kv(enc) for layer in model.dec]
    out = [PAD]
    for _ in range(model.c.max_target - 1):
        logits, _ = model.decode(torch.tensor([out]), torch.ones_like(src), None, cross)
        nxt = int(logits[0, -1].argmax())
        if nxt == EOS:
            break
        out.append(nxt)
    return "".join(vocab[i] for i in out[1:])


# -------------------------------------------------------------------- export


class SimpleDecoder(nn.Module):
    """``decoder-kv.onnx``: self-attention cache only, encoder states fed every call."""

    def __init__(self, m: Seq2Seq) -> None:
        super().__init__()
        self.m = m

    def forward(self, input_ids, encoder_hidden_states, encoder_attention_mask, *past):
        cross = [layer.cross_kv(encoder_hidden_states) for layer in self.m.dec]
        pairs = [(past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2)]
        logits, presents = self.m.decode(input_ids, encoder_attention_mask, pairs, cross)
        return (logits, *[t for kv in presents for t in kv])


class OptimumDecoder(nn.Module):
    """``decoder_model.onnx``: no past; returns self and cross presents."""

    def __init__(self, m: Seq2Seq) -> None:
        super().__init__()
        self.m = m

    def forward(self, input_ids, encoder_attention_mask, encoder_hidden_states):
        cross = [layer.cross_kv(encoder_hidden_states) for layer in self.m.dec]
        logits, presents = self.m.decode(input_ids, encoder_attention_mask, None, cross)
        return (logits, *[t for (k, v), (ck, cv) in zip(presents, cross, strict=True) for t in (k, v, ck, cv)])


class OptimumDecoderWithPast(nn.Module):
    """``decoder_with_past_model.onnx``: self and cross past in, self presents out."""

    def __init__(self, m: Seq2Seq) -> None:
        super().__init__()
        self.m = m

    def forward(self, input_ids, encoder_attention_mask, *past):
        layers = len(past) // 4
        pairs = [(past[4 * i], past[4 * i + 1]) for i in range(layers)]
        cross = [(past[4 * i + 2], past[4 * i + 3]) for i in range(layers)]
        logits, presents = self.m.decode(input_ids, encoder_attention_mask, pairs, cross)
        return (logits, *[t for kv in presents for t in kv])


class Encoder(nn.Module):
    def __init__(self, m: Seq2Seq) -> None:
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m.encode(input_ids, attention_mask)


def _export(module: nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str], axes: dict) -> None:
    module.eval()
    torch.onnx.export(
        module,
        args,
        str(path),
        input_names=inputs,
        output_names=outputs,
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
        do_constant_folding=True,
    )


def export_simple(m: Seq2Seq, out: Path) -> None:
    c, h, dh = m.c, m.c.heads, m.c.d_model // m.c.heads
    ids, mask = torch.tensor([[5, 6, 7]]), torch.ones(1, 3, dtype=torch.long)
    _export(
        Encoder(m),
        (ids, mask),
        out / "encoder.onnx",
        ["input_ids", "attention_mask"],
        ["last_hidden_state"],
        {
            "input_ids": {0: "batch", 1: "source"},
            "attention_mask": {0: "batch", 1: "source"},
            "last_hidden_state": {0: "batch", 1: "source"},
        },
    )
    enc = torch.zeros(1, 3, c.d_model)
    past = [torch.zeros(1, h, 2, dh) for _ in range(2 * c.layers)]
    names = [f"past_{kind}_{i}" for i in range(c.layers) for kind in ("key", "value")]
    pres = [f"present_{kind}_{i}" for i in range(c.layers) for kind in ("key", "value")]
    axes = {
        "input_ids": {0: "batch", 1: "new"},
        "encoder_hidden_states": {0: "batch", 1: "source"},
        "encoder_attention_mask": {0: "batch", 1: "source"},
        "logits": {0: "batch", 1: "new"},
    }
    axes |= {n: {0: "batch", 2: "past"} for n in names} | {n: {0: "batch", 2: "total"} for n in pres}
    _export(
        SimpleDecoder(m),
        (torch.tensor([[5, 6]]), enc, mask, *past),
        out / "decoder-kv.onnx",
        ["input_ids", "encoder_hidden_states", "encoder_attention_mask", *names],
        ["logits", *pres],
        axes,
    )


def export_optimum(m: Seq2Seq, out: Path) -> None:
    c, h, dh = m.c, m.c.heads, m.c.d_model // m.c.heads
    ids, mask = torch.tensor([[5, 6, 7]]), torch.ones(1, 3, dtype=torch.long)
    _export(
        Encoder(m),
        (ids, mask),
        out / "encoder_model.onnx",
        ["input_ids", "attention_mask"],
        ["last_hidden_state"],
        {
            "input_ids": {0: "batch", 1: "source"},
            "attention_mask": {0: "batch", 1: "source"},
            "last_hidden_state": {0: "batch", 1: "source"},
        },
    )
    enc = torch.zeros(1, 3, c.d_model)
    pres = [
        f"present.{i}.{part}.{kind}"
        for i in range(c.layers)
        for part in ("decoder", "encoder")
        for kind in ("key", "value")
    ]
    axes = {
        "input_ids": {0: "batch", 1: "new"},
        "encoder_hidden_states": {0: "batch", 1: "source"},
        "encoder_attention_mask": {0: "batch", 1: "source"},
        "logits": {0: "batch", 1: "new"},
    }
    axes |= {n: {0: "batch", 2: "total" if ".decoder." in n else "source"} for n in pres}
    _export(
        OptimumDecoder(m),
        (torch.tensor([[5, 6]]), mask, enc),
        out / "decoder_model.onnx",
        ["input_ids", "encoder_attention_mask", "encoder_hidden_states"],
        ["logits", *pres],
        axes,
    )
    past_names = [n.replace("present.", "past_key_values.") for n in pres]
    past = [torch.zeros(1, h, 2 if ".decoder." in n else 3, dh) for n in past_names]
    self_pres = [n for n in pres if ".decoder." in n]
    axes = {
        "input_ids": {0: "batch", 1: "new"},
        "encoder_attention_mask": {0: "batch", 1: "source"},
        "logits": {0: "batch", 1: "new"},
    }
    axes |= {n: {0: "batch", 2: "past" if ".decoder." in n else "source"} for n in past_names}
    axes |= {n: {0: "batch", 2: "total"} for n in self_pres}
    _export(
        OptimumDecoderWithPast(m),
        (torch.tensor([[5]]), mask, *past),
        out / "decoder_with_past_model.onnx",
        ["input_ids", "encoder_attention_mask", *past_names],
        ["logits", *self_pres],
        axes,
    )


def merge_decoders(first: Path, with_past: Path, out: Path) -> None:
    """``decoder_model_merged.onnx`` as optimum writes it: one If on ``use_cache_branch``.

    The with-past branch passes the cross-attention past through as its
    ``present.{i}.encoder.*`` outputs, so both branches return the same outputs.
    Every name inside a branch is prefixed so the two bodies cannot collide.
    """
    import onnx
    from onnx import helper

    no_past, past = onnx.load(str(first)), onnx.load(str(with_past))
    outer = {i.name for g in (no_past.graph, past.graph) for i in g.input}

    def branch(graph: onnx.GraphProto, prefix: str, extra: list[tuple[str, str]]) -> onnx.GraphProto:
        rename = {v.name: prefix + v.name for v in graph.output}
        for node in graph.node:
            for name in node.output:
                rename.setdefault(name, prefix + name)
        for init in graph.initializer:
            rename[init.name] = prefix + init.name

        def fix(name: str) -> str:
            return name if name in outer or not name else rename.get(name, name)

        nodes = []
        for node in graph.node:
            new = onnx.NodeProto()
            new.CopyFrom(node)
            new.name = prefix + node.name
            new.input[:] = [fix(n) for n in node.input]
            new.output[:] = [fix(n) for n in node.output]
            nodes.append(new)
        inits = []
        for init in graph.initializer:
            new = onnx.TensorProto()
            new.CopyFrom(init)
            new.name = rename[init.name]
            inits.append(new)
        outputs = []
        for v in graph.output:
            new = onnx.ValueInfoProto()
            new.CopyFrom(v)
            new.name = rename[v.name]
            outputs.append(new)
        for src, name in extra:
            nodes.append(helper.make_node("Identity", [src], [prefix + name], name=prefix + "pass/" + name))
            outputs.append(helper.make_empty_tensor_value_info(prefix + name))
        order = {prefix + v.name: i for i, v in enumerate(no_past.graph.output)}
        outputs.sort(key=lambda v: order[v.name])  # If outputs are matched by position
        return helper.make_graph(nodes, prefix.strip("/"), [], outputs, inits)

    cross = [v.name for v in no_past.graph.output if ".encoder." in v.name]
    then_g = branch(past.graph, "with_past/", [(n.replace("present.", "past_key_values."), n) for n in cross])
    else_g = branch(no_past.graph, "first/", [])
    out_names = [v.name for v in no_past.graph.output]
    inputs = {i.name: i for i in no_past.graph.input} | {i.name: i for i in past.graph.input}
    cond = helper.make_tensor_value_info("use_cache_branch", onnx.TensorProto.BOOL, [1])
    node = helper.make_node(
        "If", ["use_cache_branch"], out_names, name="optimum::if", then_branch=then_g, else_branch=else_g
    )
    graph = helper.make_graph([node], "decoder_merged", [*inputs.values(), cond], list(no_past.graph.output))
    model = helper.make_model(graph, opset_imports=list(no_past.opset_import), producer_name="measure-demo")
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def write_tier_meta(out: Path, name: str, c: ModelConfig, note: str) -> None:
    meta = {
        "name": name,
        "tokenizer": "tokenizer.json",
        "pad_token_id": PAD,
        "eos_token_id": EOS,
        "decoder_start_token_id": PAD,
        "max_source_tokens": c.max_source,
        "max_target_tokens": c.max_target,
        "note": note,
    }
    (out / "tier.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")


def fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "demo")
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--steps-base", type=int, default=1800)
    ap.add_argument("--steps-small", type=int, default=1800)
    ap.add_argument("--which", choices=["both", "base", "small"], default="both")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(SEED)
    pairs, golden, hard = make_data(rng)
    vocab = build_vocab(pairs, golden + hard)
    index = {t: i for i, t in enumerate(vocab)}
    args.work.mkdir(parents=True, exist_ok=True)
    configs = {
        "base": ModelConfig(vocab=len(vocab), d_model=128, layers=3, heads=4, ffn=512),
        "small": ModelConfig(vocab=len(vocab), d_model=64, layers=2, heads=4, ffn=192),
    }
    steps = {"base": args.steps_base, "small": args.steps_small}
    models: dict[str, Seq2Seq] = {}
    for name, c in configs.items():
        ckpt = args.work / f"{name}.pt"
        if args.skip_train or (args.which != "both" and args.which != name):
            if not ckpt.exists():
                continue
            m = Seq2Seq(c)
            m.load_state_dict(torch.load(ckpt))
            models[name] = m.eval()
        else:
            models[name] = train(c, pairs, index, steps[name], SEED + len(name), name)
            torch.save(models[name].state_dict(), ckpt)
        params = sum(p.numel() for p in models[name].parameters())
        hits = sum(models[name].greedy(index, vocab, r["input"]) == r["output"] for r in golden)
        print(f"[{name}] {params} parameters; torch exact match on held-out golden: {hits}/{len(golden)}")
    if args.which != "both" and not args.skip_train:
        return
    export(models, configs, vocab, golden, hard, pairs)


def write_calibration(pairs: list[tuple[str, str]], judged: list[dict]) -> Path:
    """Calibration sources for static int8: training words and joins, never a golden row the tiers are judged on."""
    seen = {r["input"] for r in judged}
    rows = [p for p in pairs[:24] + pairs[-8:] if p[0] not in seen]
    text = "".join(json.dumps({"input": a, "output": b}, ensure_ascii=False) + "\n" for a, b in rows)
    path = DEMO / f"calibration-v{CALIBRATION_VERSION}.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def export(models, configs, vocab, golden, hard, pairs) -> None:
    from measure.tools.quantize import quantize_tier

    DEMO.mkdir(parents=True, exist_ok=True)
    for old in ("base-int8", "base-int8-static", "small-int8", "small-int4"):
        shutil.rmtree(DEMO / old, ignore_errors=True)
    tok_tmp = DEMO / "tokenizer.json"
    write_tokenizer(vocab, tok_tmp)
    tiers = {
        "base-fp32": ("base", "simple", "reference: base model, fp32"),
        "small-fp32": ("small", "simple", "small model, fp32 (drafter control)"),
        "small-fp32-optimum": ("small", "optimum", "small model, fp32, Hugging Face optimum layout"),
    }
    for tier, (model, layout, note) in tiers.items():
        out = fresh(DEMO / tier)
        (export_simple if layout == "simple" else export_optimum)(models[model], out)
        shutil.copy(tok_tmp, out / "tokenizer.json")
        write_tier_meta(out, tier, configs[model], note)
    merged = fresh(DEMO / "small-fp32-merged")
    optimum = DEMO / "small-fp32-optimum"
    merge_decoders(
        optimum / "decoder_model.onnx", optimum / "decoder_with_past_model.onnx", merged / "decoder_model_merged.onnx"
    )
    for name in ("encoder_model.onnx", "tokenizer.json"):
        shutil.copy(optimum / name, merged / name)
    write_tier_meta(merged, "small-fp32-merged", configs["small"], "small model, fp32, optimum merged decoder")
    quantize_tier(DEMO / "base-fp32", DEMO / "base-int8", "int8")
    quantize_tier(DEMO / "small-fp32", DEMO / "small-int8", "int8")
    quantize_tier(DEMO / "small-fp32", DEMO / "small-int4", "int4", block_size=32)
    calibration = write_calibration(pairs, golden + hard)
    quantize_tier(DEMO / "base-fp32", DEMO / "base-int8-static", "int8-static", calibration=calibration)
    tok_tmp.unlink()
    rows = golden + hard
    text = "".join(json.dumps({"input": r["input"], "output": r["output"]}, ensure_ascii=False) + "\n" for r in rows)
    golden_path = DEMO / f"golden-v{GOLDEN_VERSION}.jsonl"
    golden_path.write_text(text, encoding="utf-8")
    print(f"golden rows: {len(rows)} sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    info = {
        name: asdict(c) | {"parameters": sum(p.numel() for p in models[name].parameters())}
        for name, c in configs.items()
    }
    (DEMO / "models.json").write_text(json.dumps(info, indent=2) + "\n")


if __name__ == "__main__":
    main()
