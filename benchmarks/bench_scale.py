"""measure at the size teams ship (issue 46): a SmolLM2-135M-shaped model, its tiers, and `measure run` on them.

Builds once, under ``--cache`` (default ``~/.cache/measure-bench-scale``, outside git; a rerun reuses it):

* a byte-level BPE tokenizer (vocabulary 49,152) trained on local text (this Python's standard library);
* ``main``: transformers' ``LlamaForCausalLM`` of SmolLM2-135M's shape (30 layers, hidden 576, intermediate
  1536, 9 heads / 3 key-value heads, tied embeddings, 2,048 positions), random weights (seeded); a 4-layer
  ``drafter`` of the same width and tokenizer; ``generation_config.json`` ``max_new_tokens`` = 32;
* tiers: ``fp32`` (optimum's ``text-generation-with-past`` export), ``int8`` and ``int4`` (``measure quantize``;
  int4 at its default accuracy level, the setting the issue found slower than int8), ``drafter`` (fp32 export)
  and ``genai-int4`` (onnxruntime-genai's model builder, int4 for CPU, in its own environment: it needs
  transformers 5); 16 golden rows of ~200-token prompts cut from local text; a suite config (3 repeats).

Then it runs ``measure run`` twice, each in a child process with counters installed (nothing of torch in it):
without a budget, and with ``--budget`` (default 15m). For each it prints the wall time per step, the time
inside onnxruntime (session runs, onnxruntime-genai's generator), loading sessions, the profile's worker
processes and the JavaScript legs' Node.js and Chromium processes, what is left (measure's own work), and the
peak resident memory of the process tree (summed over the run and its children, sampled every 0.1 s) against
the largest tier's worker peak. Last, measure's
decode loop against optimum's ``ORTModelForCausalLM.generate`` on the int8 graph (in the torch environment)
and against onnxruntime-genai's loop on the genai folder, ms per decode step, greedy outputs compared.

torch, transformers and optimum-onnx are the benchmark's own (the ``bench-scale`` extra's environment, or
``--lm-python``); measure never imports them. Run::

    python3 -m venv ~/.cache/measure-bench-scale/lm-venv
    ~/.cache/measure-bench-scale/lm-venv/bin/pip install -e '.[bench-scale]'
    python3 -m venv ~/.cache/measure-bench-scale/genai-venv
    ~/.cache/measure-bench-scale/genai-venv/bin/pip install -e '.[demo-genai]'
    .venv/bin/python benchmarks/bench_scale.py [--budget 15m] [--skip-unbudgeted]

``--trained DIR`` runs the same two runs on a trained model instead: SmolLM2-135M-Instruct's ``smollm2-fp32``,
``-int8`` and ``-int4`` tiers and ``smollm2-golden.jsonl`` as ``benchmarks/build_smollm2.py DIR`` writes them
(the same shape as the random-weight model, so the figures compare; no drafter or genai tier, so no speculative
pair and no loop comparisons). Only trained weights give fidelity figures that mean anything::

    .venv/bin/python benchmarks/bench_scale.py --trained ~/smollm2 --budget 10m --skip-unbudgeted
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path.home() / ".cache" / "measure-bench-scale"
SHAPE = {"hidden_size": 576, "intermediate_size": 1536, "num_attention_heads": 9, "num_key_value_heads": 3}
LAYERS, DRAFTER_LAYERS, VOCAB, CONTEXT, NEW_TOKENS = 30, 4, 49152, 2048, 32
ROWS, PROMPT_TOKENS = 16, 200
EOS = 0
TIERS = ("fp32", "int8", "int4", "drafter", "genai-int4")


# ------------------------------------------------------------------ building (torch environment)


def _corpus(limit_bytes: int = 12_000_000) -> list[str]:
    """Local text: the standard library's modules, in a fixed order."""
    base = Path(os.__file__).parent
    texts, size = [], 0
    for path in sorted(base.glob("*.py")) + sorted(base.glob("*/*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        texts.append(text)
        size += len(text)
        if size > limit_bytes:
            break
    return texts


def build_hf(out: Path) -> None:
    """Tokenizer, the two random Llama models and the golden rows (run with the torch environment)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    texts = _corpus()
    train, held = texts[: int(len(texts) * 0.9)], texts[int(len(texts) * 0.9) :]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials, show_progress=False)
    tok.train_from_iterator(train, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=specials[0], bos_token=specials[0], pad_token=specials[0]
    )
    rows = []
    for text in held:
        ids = tok.encode(text).ids
        for start in range(0, len(ids) - PROMPT_TOKENS, PROMPT_TOKENS * 7):
            chunk = tok.decode(ids[start : start + PROMPT_TOKENS])
            if chunk.strip() and len(rows) < ROWS:
                rows.append({"input": chunk, "output": ""})  # filled by expected_outputs() once fp32 exists
    out.mkdir(parents=True, exist_ok=True)
    (out / "golden.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    for name, layers in (("main", LAYERS), ("drafter", DRAFTER_LAYERS)):
        torch.manual_seed(20261205 + layers)
        config = LlamaConfig(
            vocab_size=VOCAB,
            num_hidden_layers=layers,
            max_position_embeddings=CONTEXT,
            rope_theta=100000.0,
            tie_word_embeddings=True,
            bos_token_id=EOS,
            eos_token_id=EOS,
            pad_token_id=EOS,
            head_dim=64,
            **SHAPE,
        )
        model = LlamaForCausalLM(config).eval()
        model.save_pretrained(out / name)
        fast.save_pretrained(out / name)
        gen = GenerationConfig(max_new_tokens=NEW_TOKENS, bos_token_id=EOS, eos_token_id=EOS, pad_token_id=EOS)
        gen.save_pretrained(out / name)
        params = sum(p.numel() for p in model.parameters())
        print(f"  {name}: {params / 1e6:.1f}M parameters", flush=True)


def export(hf: Path, out: Path) -> None:
    """optimum's current causal-LM export of one HF folder, and the tier.json measure reads."""
    from optimum.exporters.onnx import main_export

    main_export(str(hf), output=str(out), task="text-generation-with-past", device="cpu")
    meta = {
        "name": out.name,
        "tokenizer": "tokenizer.json",
        "pad_token_id": EOS,
        "eos_token_id": EOS,
        "prompt": "{input}",
        "note": f"random-weight Llama of SmolLM2-135M's shape: {hf.name}, optimum export",
    }
    (out / "tier.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def build(cache: Path, lm_python: str, genai_python: str | None) -> None:
    """Every tier and the suite config, each step skipped where its output is there already."""
    hf, tiers = cache / "hf", cache / "tiers"
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    me = [lm_python, str(Path(__file__).resolve())]
    if not (hf / "drafter" / "generation_config.json").is_file():
        print("building the tokenizer, the models and the golden rows ...", flush=True)
        subprocess.run([*me, "_build_hf", str(hf)], check=True, env=env)
    for hf_name, tier in (("main", "fp32"), ("drafter", "drafter")):
        if not (tiers / tier / "tier.json").is_file():
            print(f"exporting {tier} with optimum ...", flush=True)
            subprocess.run([*me, "_export", str(hf / hf_name), str(tiers / tier)], check=True, env=env)
    for tier, to in (("int8", "int8"), ("int4", "int4")):
        if not (tiers / tier).is_dir():
            print(f"measure quantize fp32 {tier} --to {to} ...", flush=True)
            cmd = [sys.executable, "-m", "measure.cli", "quantize", str(tiers / "fp32"), str(tiers / tier), "--to", to]
            subprocess.run(cmd, check=True, cwd=ROOT)
    genai = tiers / "genai-int4"
    if genai_python and not (genai / "genai_config.json").is_file():
        print("onnxruntime-genai's model builder, int4 for CPU ...", flush=True)
        cmd = [
            genai_python,
            "-m",
            "onnxruntime_genai.models.builder",
            "-m",
            str(hf / "main"),
            "-o",
            str(genai),
            "-p",
            "int4",
            "-e",
            "cpu",
            "-c",
            str(cache / "genai-cache"),
        ]
        subprocess.run(cmd, check=True)
        meta = {
            "name": "genai-int4",
            "tokenizer": "tokenizer.json",
            "pad_token_id": EOS,
            "eos_token_id": EOS,
            "prompt": "{input}",
            "note": "onnxruntime-genai model builder, -p int4 -e cpu",
        }
        (genai / "tier.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    expected_outputs(hf / "golden.jsonl", tiers / "fp32")
    write_config(cache, genai.is_dir())


def expected_outputs(golden: Path, fp32: Path) -> None:
    """A random-weight model has no right answer: each row's expected output is the fp32 tier's own greedy
    continuation (what the fidelity pass scores teacher-forced), written once into the golden rows."""
    from measure.engine.load import load_tier
    from measure.engine.options import SessionConfig

    rows = [json.loads(line) for line in golden.read_text(encoding="utf-8").splitlines() if line.strip()]
    if all(r["output"] for r in rows):
        return
    print("the fp32 tier's greedy continuations as the golden outputs ...", flush=True)
    tier = load_tier(fp32, SessionConfig(intra_op_threads=2, inter_op_threads=1))
    for r in rows:
        r["output"] = r["output"] or tier.greedy(r["input"]).text
    golden.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def write_config(cache: Path, with_genai: bool) -> Path:
    roles = {"fp32": "reference", "int8": "plain", "int4": "lite", "drafter": "drafter", "genai-int4": "verifier"}
    lines = ['golden = "hf/golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for tier in TIERS:
        if tier == "genai-int4" and not with_genai:
            continue
        lines += ["[[tiers]]", f'name = "{tier}"', f'path = "tiers/{tier}"', f'role = "{roles[tier]}"']
    lines += ["[[pairs]]", 'drafter = "drafter"', 'verifier = "int8"', "[wallclock]", "repeats = 3"]
    path = cache / "suite.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ counting (the measure child process)


def _wrap(owner: object, name: str, bucket: list[float]) -> None:
    """``owner.name`` timed into ``bucket`` (seconds summed at index 0): a C method of a pybind class included."""
    inner = getattr(owner, name)

    def timed(*args: object, **kwargs: object) -> object:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            bucket[0] += time.perf_counter() - start

    setattr(owner, name, timed)


def measured_child(counts: Path, argv: list[str]) -> int:
    """``measure`` with counters: time inside onnxruntime's runs and onnxruntime-genai's generator, session loads,
    the profile's worker processes, and the wall time of each step of the run."""
    import signal

    import onnxruntime as ort
    from onnxruntime.capi import onnxruntime_pybind11_state as C

    # a bench started in the background (nohup ... &) inherits SIGINT ignored: Ctrl-C or kill -INT then could not
    # stop the run the way that still writes its counts (measure returns 130, the record is kept incomplete)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    runs, loads, workers = [0.0], [0.0], [0.0]
    _wrap(C.InferenceSession, "run", runs)
    _wrap(C.InferenceSession, "run_with_iobinding", runs)
    _wrap(ort.InferenceSession, "__init__", loads)
    try:
        import onnxruntime_genai as og

        for name in ("append_tokens", "generate_next_token", "get_logits"):
            _wrap(og.Generator, name, runs)
        _wrap(og, "Model", loads)
    except ImportError:
        pass
    from measure.suites import budget, profile, runner
    from measure.suites.legs import node_driver, web_driver

    _wrap(profile, "_worker", workers)
    legs = [0.0]  # the JavaScript legs' processes (Node.js, Chromium): another runtime's work, not measure's
    _wrap(node_driver, "run_tier", legs)
    _wrap(web_driver.WebRuntime, "__init__", legs)
    _wrap(web_driver.WebRuntime, "run_tier", legs)
    served = [0.0]  # writing a tier's graphs for the page (weights moved beside them) is measure's work: not the leg's
    _wrap(web_driver, "_served", served)
    steps: dict[str, list[float]] = {}
    spans: list[tuple[str, float, float]] = []

    def step(module: object, name: str, label: str) -> None:
        inner = getattr(module, name)

        def timed(*args: object, **kwargs: object) -> object:
            start, r0, l0, w0, j0 = time.perf_counter(), runs[0], loads[0], workers[0], legs[0] - served[0]
            began = time.time()
            try:
                return inner(*args, **kwargs)
            finally:
                spans.append((label, began, time.time()))  # the parent's memory samples fall into these
                entry = steps.setdefault(label, [0.0, 0.0, 0.0, 0.0, 0.0])
                now = time.perf_counter()
                js = legs[0] - served[0]
                for i, d in enumerate((now - start, runs[0] - r0, loads[0] - l0, workers[0] - w0, js - j0)):
                    entry[i] += d

        setattr(module, name, timed)

    for module, name, label in (
        (runner, "check_tiers", "checks"),
        (runner, "plan_run", "warm-up and plan"),
        (runner, "run_wallclock", "wall-clock cases"),
        (runner, "run_call_costs", "call costs"),
        (runner, "run_memory_and_load", "profile workers"),
        (runner, "run_framing", "framing"),
        (runner, "run_fidelity_steps", "fidelity"),
        (runner, "finish_top_up", "top-up"),
    ):
        step(module, name, label)
    del budget
    from measure.cli import main

    start = time.perf_counter()
    code = main(argv)
    wall = time.perf_counter() - start
    counts.write_text(
        json.dumps(
            {
                "wall_s": wall,
                "runs_s": runs[0],
                "loads_s": loads[0],
                "workers_s": workers[0],
                "legs_s": legs[0] - served[0],
                "steps": steps,
                "spans": spans,
                "code": code,
            }
        ),
        encoding="utf-8",
    )
    return code


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every descendant (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        p = frontier.pop()
        kids = [c for c, pp in parents.items() if pp == p and c not in tree]
        tree.update(kids)
        frontier += kids
    return sum(_rss(pid) for pid in tree)


def write_trained_config(cache: Path, trained: Path) -> Path:
    """The suite config a team would start from: ``measure init`` of ``build_smollm2.py``'s three tiers and golden
    rows, in a fresh folder (init finds each quantized tier's reference and proposes the budget itself)."""
    tiers = [trained / f"smollm2-{t}" for t in ("fp32", "int8", "int4")]
    golden = trained / "smollm2-golden.jsonl"
    missing = [p.name for p in (*tiers, golden) if not p.exists()]
    if missing:
        raise SystemExit(f"{trained}: run benchmarks/build_smollm2.py {trained} first (missing: {', '.join(missing)})")
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    cmd = [sys.executable, "-m", "measure.cli", "init", *map(str, tiers), "--golden", str(golden), "--site", "mkdocs"]
    subprocess.run(cmd, check=True, cwd=cache, env=os.environ | {"PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    (cache / "measure.toml").rename(cache / "suite.toml")  # where run_measure reads it
    return cache / "suite.toml"


def run_measure(cache: Path, label: str, extra: list[str]) -> dict:
    """One ``measure run`` in a child process, its tree's peak RSS sampled; its counts and record path."""
    counts = cache / f"counts-{label}.json"
    results = cache / f"results-{label}"
    argv = ["run", "--config", str(cache / "suite.toml"), "--results", str(results), *extra]
    env = os.environ | {"CI": "1", "PYTHONPATH": str(ROOT)}
    log = (cache / f"run-{label}.log").open("w")
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "_measure", str(counts), *argv],
        stdout=subprocess.PIPE,
        stderr=log,
        env=env,
        text=True,
    )
    peak, done, samples = [0], threading.Event(), []

    def sample() -> None:
        while not done.wait(0.1):
            tree = _tree_rss(child.pid)
            peak[0] = max(peak[0], tree)
            samples.append((time.time(), tree, _rss(child.pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = child.communicate()
    done.set()
    sampler.join()
    log.close()
    found = json.loads(counts.read_text()) | {
        "peak_rss": peak[0],
        "samples": samples,
        "record": out.strip().splitlines()[-1] if out else "",
    }
    if child.returncode:
        raise SystemExit(f"measure run ({label}) failed: see {cache / f'run-{label}.log'}")
    return found


def report_run(label: str, found: dict) -> None:
    from measure.record.io import load

    wall = found["wall_s"]
    print(f"\nmeasure run {label}: {wall / 60:.1f} min wall")
    print(f"  {'step':<18}{'wall s':>9}{'onnx runs s':>13}{'loads s':>9}{'workers s':>11}{'JS legs s':>11}")
    for name, (w, r, lo, wk, *js) in found["steps"].items():
        print(f"  {name:<18}{w:>9.1f}{r:>13.1f}{lo:>9.1f}{wk:>11.1f}{(js or [0.0])[0]:>11.1f}")
    legs = found.get("legs_s", 0.0)
    own = wall - found["runs_s"] - found["loads_s"] - found["workers_s"] - legs
    print(
        f"  onnxruntime runs {found['runs_s']:.1f} s, session loads {found['loads_s']:.1f} s, profile worker "
        f"processes {found['workers_s']:.1f} s, the JavaScript legs' processes (Node.js, Chromium) {legs:.1f} s; "
        f"measure's own work {own:.1f} s = {own / wall:.1%} of the wall time"
    )
    record = load(found["record"])
    peaks = {}
    if record.wallclock and record.wallclock.profile:
        for name, t in record.wallclock.profile.tiers.items():
            if t.peak_rss_bytes.size:
                peaks[name] = float(statistics.median(t.peak_rss_bytes.tolist()))
    largest = max(peaks.values(), default=0.0)
    bound = 2 * largest + 300e6
    print(
        f"  peak RSS of the process tree {found['peak_rss'] / 1e6:.0f} MB; largest tier's worker peak "
        f"{largest / 1e6:.0f} MB ({max(peaks, key=peaks.get) if peaks else '-'}); bound 2x + 300 MB = "
        f"{bound / 1e6:.0f} MB: {'holds' if found['peak_rss'] <= bound else 'MISSED'}"
    )
    by_step: dict[str, list[int]] = {}
    for label, began, ended in found.get("spans", ()):
        inside = [(tree, own) for at, tree, own in found["samples"] if began <= at <= ended]
        if inside:
            top = by_step.setdefault(label, [0, 0])
            top[0], top[1] = max(top[0], *(t for t, _ in inside)), max(top[1], *(o for _, o in inside))
    for label, (tree, own) in by_step.items():
        print(f"    peak in {label:<18} tree {tree / 1e6:>6.0f} MB, measure's own process {own / 1e6:>6.0f} MB")
    if record.plan is not None:
        p = record.plan
        o = p.outcome
        print(
            f"  plan: budget {p.budget_s / 60:.1f} min, estimated {p.estimate_s / 60:.1f}, took "
            f"{(o.spent_s if o else wall) / 60:.1f} ({(o.spent_s if o else wall) / p.budget_s:.0%} of it); "
            f"top-up stopped: {o.stopped if o else '-'}"
        )
        for cut in p.cut:
            print(f"    cut: {cut}")
    from measure.analysis.record_analysis import analyse

    a = analyse(record)
    for t in a.tiers:
        e = t.ms_per_token
        level = f" at {e.short_level:.1%}" if e.short_level is not None else ""
        print(
            f"  {t.tier:<12}{e.value:9.2f} ms/token [{e.lo:.2f}, {e.hi:.2f}]{level}  "
            f"{record.tiers[t.tier].nbits.label if record.tiers[t.tier].nbits else ''}"
        )
    from measure.analysis.fidelity import tier_fidelity

    for f in tier_fidelity(record):  # what only trained weights make meaningful
        g = f.greedy
        print(
            f"  {f.tier:<12} against {f.reference}: mean KLD {g.kld_mean.value:.4f} [{g.kld_mean.lo:.4f}, "
            f"{g.kld_mean.hi:.4f}], same top-1 {g.same_top1.value:.1%}, PPL ratio {f.ppl_ratio.value:.3f} "
            f"({g.rows} rows, {g.positions} positions)"
        )


# ------------------------------------------------------------------ loops


def loops_optimum(cache: Path, repeats: int) -> None:
    """measure's loop against optimum's generate on the int8 graph (torch environment): per decode step."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_causal_optimum import OptimumLoop, measure_run

    from measure.engine.causal.tier import CausalTier
    from measure.engine.options import SessionConfig
    from measure.suites.golden import load_golden

    tier = CausalTier(cache / "tiers" / "int8", SessionConfig(intra_op_threads=1, inter_op_threads=1))
    loop = OptimumLoop(tier)
    rows = [tier.source_ids(r.input) for r in load_golden(cache / "hf" / "golden.jsonl").rows]
    ours, theirs, same = [], [], 0
    for ids in rows[:2]:  # warm-up
        measure_run(tier, ids, NEW_TOKENS), loop.decode(ids, NEW_TOKENS)
    for rep in range(repeats):
        for ids in rows:
            order = (0, 1) if rep % 2 == 0 else (1, 0)
            got = {}
            for side in order:
                got[side] = measure_run(tier, ids, NEW_TOKENS) if side == 0 else loop.decode(ids, NEW_TOKENS)
            ours.append(got[0])
            theirs.append(got[1])
            same += rep == 0 and got[0].tokens == got[1].tokens

    def per_step(runs: list) -> tuple[float, float]:
        steps = sum(r.steps for r in runs)
        return 1e3 * sum(r.wall_s - r.first_s for r in runs) / steps, 1e3 * sum(r.run_s for r in runs) / sum(
            r.steps + 1 for r in runs
        )

    (m, m_run), (o, _) = per_step(ours), per_step(theirs)
    print(f"\nint8 graph, {len(rows)} rows x {repeats} repeats, {NEW_TOKENS} new tokens at most, one thread:")
    print(
        f"  measure's loop {m:.2f} ms per decode step (inside onnxruntime {m_run:.2f} ms per call); "
        f"optimum's generate {o:.2f} ms: optimum / measure = {o / m:.2f}x"
    )
    print(
        f"  measure's step over its own onnxruntime call: {m / m_run:.3f}x; greedy outputs identical to "
        f"optimum's on {same}/{len(rows)} rows"
    )


def loops_genai(cache: Path, repeats: int) -> None:
    """measure's loop against onnxruntime-genai's on the builder's folder, per decode step."""
    from measure.engine.causal.tier import CausalTier
    from measure.engine.options import SessionConfig
    from measure.suites.golden import load_golden
    from measure.suites.legs.genai_driver import og_decode, og_import, og_model

    og, reason = og_import()
    folder = cache / "tiers" / "genai-int4"
    if og is None or not folder.is_dir():
        print(f"\nonnxruntime-genai: not compared ({reason or 'no genai folder'})")
        return
    tier = CausalTier(folder, SessionConfig(intra_op_threads=1, inter_op_threads=1))
    model = og_model(og, folder, tier)
    rows = [tier.source_ids(r.input) for r in load_golden(cache / "hf" / "golden.jsonl").rows]
    ratios, ours_ms, theirs_ms, same = [], [], [], 0
    for rep in range(repeats + 1):
        for ids in rows:
            a = tier.greedy_ids(ids, max_new_tokens=NEW_TOKENS)
            b = og_decode(og, model, ids, NEW_TOKENS, tier.special.eos)
            if rep == 0:  # warm-up pass, and the outputs compared
                same += list(a.tokens) == list(b["tokens"])
                continue
            mine = (a.wall_s - (a.first_token_s or 0.0)) / max(a.calls - 1, 1)
            theirs = sum(b["steps_s"]) / max(len(b["steps_s"]), 1)
            ours_ms.append(mine * 1e3)
            theirs_ms.append(theirs * 1e3)
            ratios.append(mine / theirs)
    print(f"\ngenai-int4 folder (accuracy level from its graph), {len(rows)} rows x {repeats} repeats:")
    print(
        f"  measure's loop {statistics.median(ours_ms):.2f} ms per decode step, onnxruntime-genai's "
        f"{statistics.median(theirs_ms):.2f} ms: measure / og = {statistics.median(ratios):.3f}x (median of rows)"
    )
    print(f"  greedy outputs identical on {same}/{len(rows)} rows")


# ------------------------------------------------------------------ main


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        verb, rest = sys.argv[1], sys.argv[2:]
        if verb == "_build_hf":
            build_hf(Path(rest[0]))
        elif verb == "_export":
            export(Path(rest[0]), Path(rest[1]))
        elif verb == "_measure":
            return measured_child(Path(rest[0]), rest[1:])
        elif verb == "_optimum":
            loops_optimum(Path(rest[0]), int(rest[1]))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache", type=Path, default=CACHE)
    p.add_argument("--lm-python", default=str(CACHE / "lm-venv" / "bin" / "python"))
    p.add_argument("--genai-python", default=str(CACHE / "genai-venv" / "bin" / "python"))
    p.add_argument("--budget", default="15m")
    p.add_argument("--repeats", type=int, default=3, help="repeats of the loop comparisons")
    p.add_argument("--skip-unbudgeted", action="store_true")
    p.add_argument("--skip-budgeted", action="store_true")
    p.add_argument("--skip-loops", action="store_true")
    p.add_argument("--trained", type=Path, metavar="DIR", help="build_smollm2.py's output: a trained model's tiers")
    args = p.parse_args()
    if args.trained:
        args.cache = args.cache / "trained"
        write_trained_config(args.cache, args.trained.resolve())
        args.skip_loops = True
    else:
        genai = args.genai_python if Path(args.genai_python).is_file() else None
        build(args.cache, args.lm_python, genai)
    found = {}
    if not args.skip_unbudgeted:
        found["without a budget"] = run_measure(args.cache, "unbudgeted", [])
        report_run("without a budget", found["without a budget"])
    if not args.skip_budgeted:
        found[f"--budget {args.budget}"] = run_measure(args.cache, "budgeted", ["--budget", args.budget])
        report_run(f"--budget {args.budget}", found[f"--budget {args.budget}"])
    if not args.skip_loops:
        env = os.environ | {"PYTHONPATH": str(ROOT)}
        cmd = [args.lm_python, str(Path(__file__).resolve()), "_optimum", str(args.cache), str(args.repeats)]
        subprocess.run(cmd, check=True, env=env)
        loops_genai(args.cache, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
