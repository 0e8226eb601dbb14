"""Check the bundled decoder-only demo: every tier's graphs, greedy decodes and agreement between loops.

It does what the environment it runs in allows, and says what it skipped:

- always (onnxruntime, tokenizers, numpy): each graph's inputs and outputs (names,
  dtypes, shapes); a plain onnxruntime greedy loop over the golden rows (the prompt
  prefilled in one call, then one token per call with the cache carried), exact match;
- with optimum-onnx (the ``demo-lm`` environment): token identity with
  ``ORTModelForCausalLM.generate`` (greedy, one thread), row by row, on every tier
  it loads;
- with onnxruntime-genai (the ``demo-genai`` environment): ``og.Generator``'s greedy
  loop (token ids in, ``generate_next_token``) against the plain loop on the same genai
  graph, driven two ways: the cache grown from length 0, and one ``max_length`` buffer
  shared by past and present through IOBinding, as ``past_present_share_buffer`` does.

A row where two loops disagree is named with its first divergent step and the plain
loop's top-2 logit margin there (a near tie, or a real difference).
Run: ``python scripts/check_demo_lm.py [--tiers lm-base-int8 ...] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "measure" / "demo"
GOLDEN = DEMO / "golden-v1.jsonl"
NP = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(float)": np.float32, "tensor(bool)": np.bool_}


@dataclass
class Decode:
    """One row's greedy tokens (eos left out) and the top-2 logit margin at each step."""

    tokens: list[int]
    margins: list[float] = field(default_factory=list)


def session(path: Path) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def attr_value(attr) -> object:
    import onnx

    value = onnx.helper.get_attribute_value(attr)
    return value.decode() if isinstance(value, bytes) else value


def describe(sess: ort.InferenceSession, path: Path) -> dict:
    """Inputs and outputs as onnxruntime sees them, and the graph's operators (nested branches included)."""
    import onnx

    def row(v):
        return {"name": v.name, "type": v.type, "shape": [d if isinstance(d, int) else str(d) for d in v.shape]}

    ops: dict[str, int] = {}
    attention: dict = {}

    def walk(graph) -> None:
        for node in graph.node:
            key = f"{node.domain}:{node.op_type}" if node.domain else node.op_type
            ops[key] = ops.get(key, 0) + 1
            if node.op_type == "GroupQueryAttention" and not attention:  # the genai graph's: what feeding it takes
                attention["inputs"] = list(node.input)
                attention["attributes"] = {a.name: attr_value(a) for a in node.attribute}
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    walk(attr.g)

    walk(onnx.load(str(path), load_external_data=False).graph)
    return {
        "inputs": [row(v) for v in sess.get_inputs()],
        "outputs": [row(v) for v in sess.get_outputs()],
        "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])),
    } | ({"group_query_attention": attention} if attention else {})


class Loop:
    """The plain onnxruntime greedy loop over one tier folder, whatever its causal layout."""

    def __init__(self, folder: Path, eos: int, share_buffer: bool = False) -> None:
        self.folder, self.eos, self.share_buffer = folder, eos, share_buffer
        if (folder / "decoder_model_merged.onnx").is_file():
            self.layout, files = "merged", ["decoder_model_merged.onnx"]
        elif (folder / "decoder_with_past_model.onnx").is_file():
            self.layout, files = "split", ["decoder_model.onnx", "decoder_with_past_model.onnx"]
        elif (folder / "genai_config.json").is_file():
            self.layout, files = (
                "genai",
                [json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]["filename"]],
            )
        else:
            self.layout, files = "optimum", ["model.onnx"]
        self.sessions = [session(folder / f) for f in files]
        self.files = files
        last = self.sessions[-1]
        self.inputs = {v.name: v for v in last.get_inputs()}
        self.pasts = [n for n in self.inputs if n.startswith("past_key_values.")]
        self.presents = [n.replace("past_key_values.", "present.") for n in self.pasts]
        shape = self.inputs[self.pasts[0]].shape
        self.kv_heads, self.head_dim = int(shape[1]), shape[3]
        if not isinstance(self.head_dim, int):  # the genai graph leaves it symbolic: read it from config
            self.head_dim = json.loads((folder / "config.json").read_text())["head_dim"]
        self.ids_type = NP[self.inputs["input_ids"].type]
        self.mask_type = NP[self.inputs["attention_mask"].type]
        self.output_names = [v.name for v in last.get_outputs()]

    def _feeds(self, new: list[int], past_len: int, total: int) -> dict[str, np.ndarray]:
        feeds = {
            "input_ids": np.array([new], dtype=self.ids_type),
            "attention_mask": np.ones((1, total), dtype=self.mask_type),
        }
        if "position_ids" in self.inputs:
            feeds["position_ids"] = np.arange(past_len, past_len + len(new), dtype=np.int64)[None]
        return feeds

    def greedy(self, prompt: list[int], max_new: int) -> Decode:
        if self.share_buffer:
            return self._greedy_shared(prompt, max_new)
        empty = np.zeros((1, self.kv_heads, 0, self.head_dim), dtype=np.float32)
        past = dict.fromkeys(self.pasts, empty)
        new, done, out = list(prompt), 0, Decode([])
        for step in range(max_new):
            feeds = self._feeds(new, done, done + len(new))
            if self.layout == "split" and step == 0:
                sess = self.sessions[0]
            else:
                sess = self.sessions[-1]
                feeds |= past
                if self.layout == "merged":
                    feeds["use_cache_branch"] = np.array([step > 0])
            result = dict(
                zip(
                    self.output_names if sess is self.sessions[-1] else [o.name for o in sess.get_outputs()],
                    sess.run(None, feeds),
                    strict=True,
                )
            )
            logits = result["logits"][0, -1]
            token = int(np.argmax(logits))
            top = np.sort(logits)[-2:]
            out.margins.append(float(top[1] - top[0]))
            done += len(new)
            if token == self.eos:
                break
            out.tokens.append(token)
            past = {p: result[q] for p, q in zip(self.pasts, self.presents, strict=True)}
            new = [token]
        return out

    def _greedy_shared(self, prompt: list[int], max_new: int) -> Decode:
        """GroupQueryAttention with one buffer of ``max_length`` per past/present pair, bound in place."""
        sess = self.sessions[-1]
        length = len(prompt) + max_new
        buffers = {
            p: ort.OrtValue.ortvalue_from_numpy(np.zeros((1, self.kv_heads, length, self.head_dim), np.float32))
            for p in self.pasts
        }
        new, done, out = list(prompt), 0, Decode([])
        for _ in range(max_new):
            bind = sess.io_binding()
            bind.bind_output("logits")
            for name, value in self._feeds(new, done, done + len(new)).items():
                bind.bind_cpu_input(name, value)
            for p, q in zip(self.pasts, self.presents, strict=True):
                bind.bind_ortvalue_input(p, buffers[p])
                bind.bind_ortvalue_output(q, buffers[p])
            sess.run_with_iobinding(bind)
            logits = bind.get_outputs()[0].numpy()[0, -1]
            token = int(np.argmax(logits))
            top = np.sort(logits)[-2:]
            out.margins.append(float(top[1] - top[0]))
            done += len(new)
            if token == self.eos:
                break
            out.tokens.append(token)
            new = [token]
        return out


def first_divergence(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def compare(label: str, plain: list[Decode], other: list[list[int]], rows: list[dict]) -> dict:
    """Row-by-row token identity of another loop against the plain one; differing rows named."""
    differing = []
    for i, (p, o) in enumerate(zip(plain, other, strict=True)):
        if p.tokens != o:
            step = first_divergence(p.tokens, o)
            margin = p.margins[step] if step < len(p.margins) else float("nan")
            differing.append({"row": i + 1, "input": rows[i]["input"], "step": step, "margin": round(margin, 5)})
    same = len(rows) - len(differing)
    print(f"    {label}: {same}/{len(rows)} rows token-identical to the plain loop")
    for d in differing:
        print(
            f"      row {d['row']} {d['input']!r}: first divergent step {d['step']}, plain top-2 margin {d['margin']}"
        )
    return {"identical": same, "rows": len(rows), "differing": differing}


def optimum_tokens(folder: Path, prompts: list[list[int]], max_new: int, eos: int, pad: int) -> list[list[int]]:
    import torch
    from optimum.onnxruntime import ORTModelForCausalLM

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    model = ORTModelForCausalLM.from_pretrained(folder, session_options=so, provider="CPUExecutionProvider")
    out = []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        gen = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=max_new,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=pad,
        )[0, len(prompt) :].tolist()
        out.append(gen[: gen.index(eos)] if eos in gen else gen)  # generate pads after eos; a batch of one never before
    return out


def genai_tokens(folder: Path, prompts: list[list[int]], max_new: int, eos: int) -> list[list[int]]:
    import onnxruntime_genai as og

    model = og.Model(str(folder))
    out = []
    for prompt in prompts:
        params = og.GeneratorParams(model)
        params.set_search_options(do_sample=False, max_length=len(prompt) + max_new, batch_size=1)
        gen = og.Generator(model, params)
        gen.append_tokens(prompt)
        tokens: list[int] = []
        while not gen.is_done():
            gen.generate_next_token()
            tokens.append(int(gen.get_next_tokens()[0]))
        out.append(tokens[: tokens.index(eos)] if eos in tokens else tokens)
    return out


def genai_tokenizer(folder: Path, prompts: list[list[int]], texts: list[str]) -> str:
    """Whether og.Tokenizer reads this tokenizer.json and gives the same ids as the tokenizers library."""
    import onnxruntime_genai as og

    try:
        tok = og.Tokenizer(og.Model(str(folder)))
        same = sum(list(tok.encode(t)) == p for t, p in zip(texts, prompts, strict=True))
    except Exception as exc:
        return f"og.Tokenizer fails: {type(exc).__name__}: {str(exc).strip()[:300]}"
    return f"og.Tokenizer reads it; ids equal to the tokenizers library's on {same}/{len(texts)} prompts"


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiers", nargs="*", help="tier folder names under measure/demo (default: every lm-* and genai-*)")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    args = ap.parse_args()
    rows = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    names = args.tiers or sorted(p.name for p in DEMO.iterdir() if p.is_dir() and p.name.startswith(("lm-", "genai-")))
    has_optimum = importlib.util.find_spec("optimum") is not None and importlib.util.find_spec("torch") is not None
    has_genai = importlib.util.find_spec("onnxruntime_genai") is not None
    versions = {"python": sys.version.split()[0], "onnxruntime": ort.__version__}
    if has_optimum:
        from importlib.metadata import version

        import transformers

        versions |= {"optimum-onnx": version("optimum-onnx"), "transformers": transformers.__version__}
    if has_genai:
        import onnxruntime_genai as og

        versions["onnxruntime-genai"] = og.__version__
    print("versions:", json.dumps(versions))
    if not has_optimum:
        print("optimum-onnx not importable here: ORTModelForCausalLM comparison skipped")
    if not has_genai:
        print("onnxruntime_genai not importable here: onnxruntime-genai comparison skipped")
    report: dict = {"versions": versions, "tiers": {}}
    for name in names:
        folder = DEMO / name
        meta = json.loads((folder / "tier.json").read_text(encoding="utf-8"))
        tok = Tokenizer.from_file(str(folder / meta["tokenizer"]))
        eos, pad, max_new = meta["eos_token_id"], meta["pad_token_id"], meta["max_target_tokens"]
        prompts = [tok.encode(meta["prompt"].format(input=r["input"])).ids for r in rows]
        loop = Loop(folder, eos)
        entry: dict = {"layout": loop.layout, "bytes": folder_bytes(folder), "graphs": {}}
        print(f"\n== {name}: {loop.layout} layout, {entry['bytes'] / 1e6:.2f} MB")
        for f, sess in zip(loop.files, loop.sessions, strict=True):
            entry["graphs"][f] = describe(sess, folder / f)
            print(f"  {f}")
            ops = entry["graphs"][f]["ops"]
            print("    ops:", ", ".join(f"{k} {v}" for k, v in ops.items()))
            if "group_query_attention" in entry["graphs"][f]:
                print("    GroupQueryAttention:", json.dumps(entry["graphs"][f]["group_query_attention"]))
            for kind in ("inputs", "outputs"):
                shown = entry["graphs"][f][kind]
                for v in shown if len(shown) <= 8 else [*shown[:4], None, *shown[-2:]]:
                    print(f"    {kind[:-1]:6} {v['name']:28} {v['type']:14} {v['shape']}" if v else "    ...")
        t0 = time.perf_counter()
        plain = [loop.greedy(p, max_new) for p in prompts]
        wall = time.perf_counter() - t0
        exact = sum(tok.decode(d.tokens) == r["output"] for d, r in zip(plain, rows, strict=True))
        entry["plain"] = {"exact_match": exact, "rows": len(rows), "tokens": sum(len(d.tokens) for d in plain)}
        print(f"  plain onnxruntime loop: exact match {exact}/{len(rows)} ({wall:.1f}s)")
        if loop.layout == "genai":
            shared = Loop(folder, eos, share_buffer=True)
            entry["plain_shared_buffer"] = compare(
                "plain loop, shared max_length buffer (IOBinding)",
                plain,
                [shared.greedy(p, max_new).tokens for p in prompts],
                rows,
            )
            if has_genai:
                texts = [meta["prompt"].format(input=r["input"]) for r in rows]
                entry["og_tokenizer"] = genai_tokenizer(folder, prompts, texts)
                print("    " + entry["og_tokenizer"])
                entry["onnxruntime_genai"] = compare(
                    "onnxruntime-genai og.Generator", plain, genai_tokens(folder, prompts, max_new, eos), rows
                )
        elif has_optimum:
            try:
                other = optimum_tokens(folder, prompts, max_new, eos, pad)
            except Exception as exc:  # optimum-onnx refuses some older layouts; say which and why
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                print(f"    ORTModelForCausalLM: cannot load this layout ({type(exc).__name__}: {first[:200]})")
                entry["optimum"] = {"error": f"{type(exc).__name__}: {first[:500]}"}
            else:
                entry["optimum"] = compare("ORTModelForCausalLM.generate (1 thread)", plain, other, rows)
        report["tiers"][name] = entry
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
