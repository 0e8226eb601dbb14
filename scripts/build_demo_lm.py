"""Rebuild the bundled decoder-only demo: Llama-architecture causal LMs on the transliteration task.

The same task, training words and golden rows as the seq2seq demo (``build_demo.py``
makes them; the golden file stays ``golden-v1.jsonl``), learnt as a causal LM:
``<s>слово=slovo</s>``, the loss on the output and its eos only. transformers'
``LlamaForCausalLM`` (RMSNorm, rotary, SwiGLU) with grouped-query attention (fewer
key/value heads than attention heads, head size a multiple of 16, as
onnxruntime-genai's CPU GroupQueryAttention with fused rotary needs); a *base*
model and a *small* drafter with the same character tokenizer. Seeded (weights and
batch order) on one torch thread by default, so a rebuild with the same torch
version should give the same weights (not compared bit for bit here).

What it writes under ``measure/demo/`` (never the HF weights; each folder keeps
``config.json``, ``generation_config.json``, ``tokenizer.json`` and ``tier.json``):

- ``lm-base-fp32``, ``lm-small-fp32``: optimum's current causal-LM export
  (``optimum-cli export onnx --task text-generation-with-past``: one ``model.onnx``);
- ``lm-base-int8`` (dynamic int8), ``lm-base-int4``, ``lm-small-int4`` (MatMulNBits,
  block 32), quantized as ``measure/tools/quantize.py`` does it;
- ``lm-small-fp32-split`` (``decoder_model.onnx`` + ``decoder_with_past_model.onnx``)
  and ``lm-small-fp32-merged`` (``decoder_model_merged.onnx``, ``use_cache_branch``):
  optimum's older layouts, written by optimum's exporter with the two legacy
  decoder configs and its ``merge_decoders``;
- ``genai-base-fp32``, ``genai-base-int4``: onnxruntime-genai's model builder on the
  base HF folder, run with ``--genai-python`` (its own environment: the builder
  needs transformers 5.x, optimum-onnx needs < 4.58);
- ``models-lm.json``: sizes, parameter counts and torch's exact match per model.

Environments (the ``demo-lm`` and ``demo-genai`` extras in ``pyproject.toml``)::

    python3 -m venv lm-venv && lm-venv/bin/pip install -e '.[demo-lm]'
    python3 -m venv genai-venv && genai-venv/bin/pip install -e '.[demo-genai]'
    lm-venv/bin/python scripts/build_demo_lm.py --which base &   # the two models train side by side,
    lm-venv/bin/python scripts/build_demo_lm.py --which small    # one thread each (as the shipped ones)
    wait; lm-venv/bin/python scripts/build_demo_lm.py --skip-train --genai-python genai-venv/bin/python

Training is most of the time: side by side on the 2-core host while other jobs kept
its load average at 5-7, the base model's 1500 steps took 44 minutes and the small
one's 20. ``--skip-train`` then takes under
3 minutes: exports, quantization, the genai builds and the check
(``scripts/check_demo_lm.py``, run in both environments).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from build_demo import GOLDEN_VERSION, SEED, make_data
from torch import nn

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "measure" / "demo"
PAD, EOS, UNK, BOS = 0, 1, 2, 3
SPECIALS = ["<pad>", "</s>", "<unk>", "<s>"]
SEP = "="
PROMPT = "{input}" + SEP
MAX_SOURCE, MAX_TARGET = 48, 64
CONTEXT = 128  # >= bos + 48 source chars + "=" + 64 new tokens
LEGACY_SPLIT = ("decoder_model.onnx", "decoder_with_past_model.onnx")
LEGACY_MERGED = "decoder_model_merged.onnx"


@dataclass(frozen=True)
class LMConfig:
    """Sizes of one Llama model; stored in ``models-lm.json``."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    steps: int

    def llama(self, vocab: int):
        from transformers import LlamaConfig

        return LlamaConfig(
            vocab_size=vocab,
            hidden_size=self.hidden,
            intermediate_size=self.intermediate,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            num_key_value_heads=self.kv_heads,
            head_dim=self.head_dim,
            max_position_embeddings=CONTEXT,
            rms_norm_eps=1e-5,
            rope_theta=10000.0,
            tie_word_embeddings=False,
            bos_token_id=BOS,
            eos_token_id=EOS,
            pad_token_id=PAD,
        )


MODELS = {
    "base": LMConfig(hidden=128, intermediate=256, layers=4, heads=8, kv_heads=2, head_dim=16, steps=1500),
    "small": LMConfig(hidden=96, intermediate=128, layers=2, heads=6, kv_heads=2, head_dim=16, steps=1500),
}
"""No Linear layer may be as wide as the vocabulary (64): onnxruntime-genai 0.18.0's model builder takes any
``nn.Linear`` with ``out_features == vocab_size`` for the LM head, and with 4 heads of 32 over 2 key/value
heads the k/v projections (64 wide) were read as LM heads, a genai graph that decoded nothing right. Here
k/v are 32 wide, q/o 128 (96), the MLP 256 (128)."""


# ---------------------------------------------------------------------- data


def golden_rows() -> tuple[list[tuple[str, str]], list[dict]]:
    """build_demo's training pairs and golden rows; the shipped golden file must be what it makes."""
    pairs, golden, hard = make_data(random.Random(SEED))
    rows = golden + hard
    text = "".join(json.dumps({"input": r["input"], "output": r["output"]}, ensure_ascii=False) + "\n" for r in rows)
    shipped = DEMO / f"golden-v{GOLDEN_VERSION}.jsonl"
    if shipped.read_text(encoding="utf-8") != text:
        sys.exit(f"{shipped}: differs from the rows build_demo.make_data makes here (another wordfreq or iuliia?)")
    return pairs, rows


def build_vocab(pairs: list[tuple[str, str]], rows: list[dict]) -> list[str]:
    chars = {ch for s, t in pairs for ch in s + t} | {ch for r in rows for ch in r["input"] + r["output"]}
    return SPECIALS + sorted(chars | {SEP})


def write_tokenizer(vocab: list[str], folder: Path) -> None:
    """A character-level ``tokenizer.json`` that adds ``<s>`` in front (as Llama's do), and its config."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel({t: i for i, t in enumerate(vocab)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(SPECIALS)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", BOS)])
    tok.save(str(folder / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "pad_token": "<pad>",
        "unk_token": "<unk>",
        "model_max_length": CONTEXT,
        "clean_up_tokenization_spaces": False,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")


def prompt_ids(index: dict[str, int], text: str) -> list[int]:
    return [BOS] + [index.get(ch, UNK) for ch in PROMPT.format(input=text)]


# ------------------------------------------------------------------ training


def batches(pairs, index, batch, rng):
    """Right-padded ``<s>src=tgt</s>`` rows, labels only on ``tgt</s>`` (the model shifts them itself).

    Rows of similar length go together (a shuffled pool sorted in chunks), so a batch
    pads to about its own rows' length rather than the longest join's: 2.4x fewer tokens.
    """
    order = list(range(len(pairs)))
    while True:
        rng.shuffle(order)
        chunks = []
        for start in range(0, len(order), batch * 32):
            pool = sorted(order[start : start + batch * 32], key=lambda j: len(pairs[j][0]) + len(pairs[j][1]))
            chunks += [pool[i : i + batch] for i in range(0, len(pool) - batch + 1, batch)]
        rng.shuffle(chunks)
        for chunk in chunks:
            rows, labels = [], []
            for s, t in (pairs[j] for j in chunk):
                prompt = prompt_ids(index, s)
                out = [index.get(ch, UNK) for ch in t] + [EOS]
                rows.append(prompt + out)
                labels.append([-100] * len(prompt) + out)
            width = max(map(len, rows))
            ids = torch.tensor([r + [PAD] * (width - len(r)) for r in rows])
            lab = torch.tensor([r + [-100] * (width - len(r)) for r in labels])
            yield ids, (ids != PAD).long(), lab


def train(name: str, c: LMConfig, vocab: list[str], pairs, index, seed: int):
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    model = LlamaForCausalLM(c.llama(len(vocab)))
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * max(0.05, 0.5 * (1 + math.cos(math.pi * s / c.steps)))
    )
    gen = batches(pairs, index, 128, random.Random(seed))
    model.train()
    t0 = time.time()
    for step in range(c.steps):
        ids, mask, labels = next(gen)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 200 == 0 or step == c.steps - 1:
            print(f"[{name}] step {step} loss {loss.item():.4f} ({time.time() - t0:.0f}s)", flush=True)
    return model.eval()


@torch.no_grad()
def torch_exact(model, index, vocab, rows) -> int:
    """Greedy with transformers' own generate: the model's exact match before any export."""
    hits = 0
    for r in rows:
        ids = torch.tensor([prompt_ids(index, r["input"])])
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=MAX_TARGET,
            do_sample=False,
            eos_token_id=EOS,
            pad_token_id=PAD,
        )[0, ids.shape[1] :].tolist()
        out = out[: out.index(EOS)] if EOS in out else out  # generate pads after eos
        text = "".join(vocab[i] for i in out)
        hits += text == r["output"]
    return hits


def save_hf(model, vocab: list[str], folder: Path) -> None:
    from transformers import GenerationConfig

    fresh(folder)
    model.save_pretrained(folder, safe_serialization=True)
    GenerationConfig(
        bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, do_sample=False, max_new_tokens=MAX_TARGET
    ).save_pretrained(folder)
    write_tokenizer(vocab, folder)


# -------------------------------------------------------------------- export


def export_optimum(hf: Path, out: Path) -> None:
    """optimum's current causal-LM layout, by optimum-cli itself."""
    cli = Path(sys.executable).parent / "optimum-cli"
    fresh(out)
    cmd = [str(cli), "export", "onnx", "--model", str(hf), "--task", "text-generation-with-past", str(out)]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def export_legacy(hf: Path, split: Path, merged: Path) -> None:
    """optimum's older causal layouts: its exporter with the two legacy decoder configs, then its merge.

    optimum-onnx no longer writes them from the CLI; these are the configs its
    ``get_decoder_models_for_export`` used for them (presents out with no past in, then past in).
    """
    from optimum.exporters.onnx import export
    from optimum.exporters.onnx.model_configs import LlamaOnnxConfig
    from optimum.onnx import merge_decoders
    from transformers import LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(hf).eval()
    fresh(split)
    for name, with_past in zip(LEGACY_SPLIT, (False, True), strict=True):
        config = LlamaOnnxConfig(model.config, task="text-generation", use_past=True, use_past_in_inputs=with_past)
        export(model, config, split / name)
    fresh(merged)
    merge_decoders(split / LEGACY_SPLIT[0], split / LEGACY_SPLIT[1], save_path=merged / LEGACY_MERGED)


def quantize(src: Path, dst: Path, to: str) -> dict:
    """One ``model.onnx``, quantized by the very functions ``measure quantize`` calls."""
    import shutil
    import tempfile

    from measure.tools.onnxruntime_quantizers import quantize_graph
    from measure.tools.recipes import NAMED

    fresh(dst)
    with tempfile.TemporaryDirectory() as work:  # the quantizers write beside their input: a private copy
        copy = Path(work) / "model.onnx"
        shutil.copyfile(src / "model.onnx", copy)
        params = quantize_graph(src / "model.onnx", copy, dst / "model.onnx", NAMED[to], {}, ())
    return params | {"from": src.name}


def build_genai(python: str, hf: Path, out: Path, precision: str, cache: Path) -> None:
    """onnxruntime-genai's model builder on the local HF folder (``hf_remote=false``: no remote model code)."""
    fresh(out)
    cmd = [python, "-m", "onnxruntime_genai.models.builder", "-i", str(hf), "-o", str(out), "-p", precision]
    cmd += ["-e", "cpu", "-c", str(cache), "--extra_options", "hf_remote=false"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


# --------------------------------------------------------------------- tiers

TIER_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")


def ship(src: Path, hf: Path, tier: str, graphs: list[str], meta: dict) -> Path:
    """A tier folder: its graph files, the HF configs and tokenizer beside them, and tier.json."""
    out = fresh(DEMO / tier)
    for name in graphs:
        shutil.copy2(src / name, out / name)
    for name in TIER_FILES:
        if not (out / name).exists():
            shutil.copy2(hf / name, out / name)
    meta = {
        "name": tier,
        "tokenizer": "tokenizer.json",
        "pad_token_id": PAD,
        "eos_token_id": EOS,
        "bos_token_id": BOS,
        "prompt": PROMPT,
        "max_source_tokens": MAX_SOURCE,
        "max_target_tokens": MAX_TARGET,
    } | meta
    (out / "tier.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def genai_quantization(folder: Path) -> dict:
    """What the builder's int4 did, read from its MatMulNBits nodes (it states no more than the graph)."""
    import onnx

    model = onnx.load(str(folder / "model.onnx"), load_external_data=False)
    nodes = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    values: dict[str, set] = {}
    for node in nodes:
        for attr in node.attribute:
            values.setdefault(attr.name, set()).add(onnx.helper.get_attribute_value(attr))

    def one(name: str, default: int) -> int | list[int]:
        found = sorted(values.get(name, {default}))
        return found[0] if len(found) == 1 else found  # a list says the nodes differ

    return {
        "method": "onnxruntime_genai.models.builder",
        "bits": one("bits", 4),
        "block_size": one("block_size", 0),
        "symmetric": all(len(n.input) < 4 or not n.input[3] for n in nodes),  # input 3: zero points
        "accuracy_level": one("accuracy_level", 0),
        "nodes": len(nodes),
    }


def fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=ROOT / "build" / "demo-lm")
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--which", choices=["both", "base", "small"], default="both", help="train only this model")
    ap.add_argument("--steps", type=int, help="training steps for every model trained (default: each model's own)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the shipped weights: 1)")
    ap.add_argument("--genai-python", help="a Python with onnxruntime-genai 0.18 (and transformers 5.x)")
    ap.add_argument("--no-check", action="store_true", help="skip scripts/check_demo_lm.py at the end")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pairs, rows = golden_rows()
    vocab = build_vocab(pairs, rows)
    index = {t: i for i, t in enumerate(vocab)}
    for name, c in MODELS.items():
        widths = {c.hidden, c.intermediate, c.heads * c.head_dim, c.kv_heads * c.head_dim}
        if len(vocab) in widths:
            sys.exit(f"{name}: a Linear layer {len(vocab)} wide, as wide as the vocabulary (see MODELS)")
    args.work.mkdir(parents=True, exist_ok=True)
    hf = {name: args.work / f"{name}-hf" for name in MODELS}
    info: dict[str, dict] = {}
    for name, c in MODELS.items():
        from transformers import LlamaForCausalLM

        if args.skip_train or args.which not in ("both", name):
            if not (hf[name] / "config.json").is_file():
                continue
            model = LlamaForCausalLM.from_pretrained(hf[name]).eval()
        else:
            if args.steps:
                c = LMConfig(**(asdict(c) | {"steps": args.steps}))
            t0 = time.time()
            model = train(name, c, vocab, pairs, index, SEED + len(name))
            print(f"[{name}] trained in {time.time() - t0:.0f}s", flush=True)
            save_hf(model, vocab, hf[name])
        params = sum(p.numel() for p in model.parameters())
        hits = torch_exact(model, index, vocab, rows)
        print(f"[{name}] {params} parameters; torch exact match on the golden rows: {hits}/{len(rows)}", flush=True)
        info[name] = asdict(c) | {"vocab": len(vocab), "parameters": params, "torch_exact_match": hits}
    if args.which != "both" and not args.skip_train:
        return
    write_tiers(args, hf, info, len(rows))


def write_tiers(args, hf: dict[str, Path], info: dict[str, dict], golden: int) -> None:
    work = args.work
    for name in MODELS:
        export_optimum(hf[name], work / f"{name}-optimum")
    export_legacy(hf["small"], work / "small-split", work / "small-merged")
    opt = "optimum-cli export onnx --task text-generation-with-past (optimum-onnx)"
    for old in [p for p in DEMO.glob("lm-*") if p.is_dir()] + [p for p in DEMO.glob("genai-*") if p.is_dir()]:
        shutil.rmtree(old)
    for name, role in (("base", "reference: base decoder-only model"), ("small", "small decoder-only model")):
        ship(
            work / f"{name}-optimum",
            hf[name],
            f"lm-{name}-fp32",
            ["model.onnx"],
            {"note": f"{role}, fp32, {opt}", "model": f"lm-{name}"},
        )
    for name, to, label in (
        ("base", "int8", "dynamic int8"),
        ("base", "int4", "int4 MatMulNBits"),
        ("small", "int4", "int4 MatMulNBits"),
    ):
        src = DEMO / f"lm-{name}-fp32"
        tmp = work / f"{name}-{to}"
        params = quantize(src, tmp, to)
        ship(
            tmp,
            hf[name],
            f"lm-{name}-{to}",
            ["model.onnx"],
            {"note": f"{label} of {src.name}", "model": f"lm-{name}", "quantization": params},
        )
    ship(
        work / "small-split",
        hf["small"],
        "lm-small-fp32-split",
        list(LEGACY_SPLIT),
        {
            "note": "small decoder-only model, fp32, optimum's older split causal layout (test fixture)",
            "model": "lm-small",
        },
    )
    ship(
        work / "small-merged",
        hf["small"],
        "lm-small-fp32-merged",
        [LEGACY_MERGED],
        {
            "note": "small decoder-only model, fp32, optimum's older merged causal layout (test fixture)",
            "model": "lm-small",
        },
    )
    if args.genai_python:
        cache = work / "genai-cache"
        for precision in ("fp32", "int4"):
            out = work / f"genai-{precision}"
            build_genai(args.genai_python, hf["base"], out, precision, cache)
            graphs = sorted(p.name for p in out.iterdir() if p.name.startswith("model.onnx"))
            extra = [p.name for p in out.iterdir() if p.name in ("genai_config.json", *TIER_FILES)]
            meta: dict = {
                "note": f"base decoder-only model, {precision}, onnxruntime-genai model builder (CPU)",
                "model": "lm-base",  # the model lm-base-fp32 exports too: one model, two exporting tools
            }
            if precision == "int4":
                meta["quantization"] = genai_quantization(out) | {"from": "base HF folder"}
            ship(out, hf["base"], f"genai-base-{precision}", graphs + extra, meta)
    sizes = {p.name: folder_bytes(p) for p in sorted(DEMO.iterdir()) if p.is_dir() and p.name[:3] in ("lm-", "gen")}
    models = {"models": info, "folder_bytes": sizes, "golden_rows": golden} if info else {"folder_bytes": sizes}
    (DEMO / "models-lm.json").write_text(json.dumps(models, indent=2) + "\n")
    for name, size in sizes.items():
        print(f"{name}: {size / 1e6:.2f} MB")
    print(f"total: {sum(sizes.values()) / 1e6:.2f} MB")
    if not args.no_check:
        check = [str(ROOT / "scripts" / "check_demo_lm.py")]
        subprocess.run([sys.executable, *check], check=True)
        if args.genai_python:
            subprocess.run([args.genai_python, *check], check=True)


if __name__ == "__main__":
    main()
