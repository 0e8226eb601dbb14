"""The fidelity pass checked against an independent computation, and what it costs. Prints figures only.

1. **Agreement.** For every quantized demo tier of both kinds (the seq2seq tiers' simple layout, the optimum
   decoder-only exports, the onnxruntime-genai folder) against its full-precision reference: the pass's mean KLD
   and same-top-1 count over the golden rows, and the same figures computed here from plain onnxruntime sessions
   fed the same token ids (prompt or source, then the reference's greedy tokens in one call on the cache the
   source left, as the pass does) with a float64 log-softmax written apart from the suite's. Targets: 1e-6
   relative on mean KLD, exact on same-top-1. The token ids (the source, and the reference's greedy path) come
   from measure: they are the input, not what is checked.
2. **Cost.** One demo ``measure run`` timed whole, and the fidelity pass over the same tiers timed on its own,
   side by side in this one run. Targets: the pass at most 10% of the run; the demo run under 2 minutes.

Run: ``python benchmarks/bench_fidelity.py [--rows N]`` (the cost part needs the demo's npm packages and
Chromium for a representative run; without them the JavaScript legs are skipped and the run is shorter).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from measure import bundled
from measure.engine.load import load_tier
from measure.record.io import load
from measure.suites.config import load_config
from measure.suites.golden import GoldenRows, load_golden

DEMO = bundled.DEMO_DIR
JUDGED = {
    "base-int8": "base-fp32",
    "base-int8-static": "base-fp32",
    "small-int4": "small-fp32",
    "small-int8": "small-fp32",
    "lm-base-int8": "lm-base-fp32",
    "lm-base-int4": "lm-base-fp32",
    "lm-small-int4": "lm-small-fp32",
    "genai-base-int4": "genai-base-fp32",
}


def _session(path: Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


class Seq2seq:
    """encoder.onnx + decoder-kv.onnx, called by hand: the encoder, then the decoder on an empty past."""

    def __init__(self, folder: Path) -> None:
        self.encoder, self.decoder = _session(folder / "encoder.onnx"), _session(folder / "decoder-kv.onnx")
        self.start = json.loads((folder / "tier.json").read_text()).get("decoder_start_token_id", 0)

    def logits(self, source: list[int], tokens: list[int]) -> np.ndarray:
        ids = np.array([source], dtype=np.int64)
        mask = np.ones_like(ids)
        (hidden,) = self.encoder.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})
        feeds = {"input_ids": np.array([[self.start, *tokens]], dtype=np.int64), "encoder_hidden_states": hidden}
        feeds["encoder_attention_mask"] = mask
        for i in self.decoder.get_inputs():
            if i.name.startswith("past_"):
                feeds[i.name] = np.zeros((1, i.shape[1], 0, i.shape[3]), dtype=np.float32)
        return self.decoder.run(["logits"], feeds)[0][0]


class Causal:
    """One decoder-only graph: the prompt from an empty past, then the tokens on the presents it returned."""

    def __init__(self, folder: Path) -> None:
        self.session = _session(folder / "model.onnx")
        self.inputs = {i.name: i for i in self.session.get_inputs()}
        self.past = [n for n in self.inputs if n.startswith("past_key_values")]
        self.outputs = ["logits", *(n.replace("past_key_values", "present") for n in self.past)]

    def _call(self, ids: list[int], start: int, past: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray]]:
        feeds = {
            "input_ids": np.array([ids], dtype=np.int64),
            "attention_mask": np.ones((1, start + len(ids)), dtype=np.int64),
        }
        if "position_ids" in self.inputs:
            feeds["position_ids"] = np.arange(start, start + len(ids), dtype=np.int64)[None]
        feeds.update(zip(self.past, past, strict=True))
        logits, *presents = self.session.run(self.outputs, feeds)
        return logits[0], presents

    def logits(self, prompt: list[int], tokens: list[int]) -> np.ndarray:
        heads = [self.inputs[n].shape[1] for n in self.past]
        first = self.session.get_outputs()[1]
        dim = first.shape[3] if isinstance(first.shape[3], int) else None
        empty = [np.zeros((1, h, 0, dim or 16), dtype=np.float32) for h in heads]
        rows, presents = self._call(prompt, 0, empty)
        out = [rows[-1:]]
        if tokens:
            out.append(self._call(tokens, len(prompt), presents)[0])
        return np.concatenate(out)


def _logsoftmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def _independent(tier: str, reference: str, golden: GoldenRows) -> tuple[float, int, int]:
    """(mean KLD, same top-1, positions) over the rows, from plain sessions."""
    kind = Causal if (DEMO / tier / "model.onnx").is_file() else Seq2seq
    ours, theirs = kind(DEMO / reference), kind(DEMO / tier)
    ref_tier = load_tier(DEMO / reference)
    kl_sum, same, n = 0.0, 0, 0
    for row in golden.rows:
        ids = ref_tier.source_ids(row.input)
        greedy = list(ref_tier.greedy_ids(ids).tokens)
        lp, lq = _logsoftmax(ours.logits(ids, greedy)), _logsoftmax(theirs.logits(ids, greedy))
        kl_sum += float(np.sum(np.exp(lp) * (lp - lq)))
        same += int(np.sum(lp.argmax(axis=1) == lq.argmax(axis=1)))
        n += lp.shape[0]
    return kl_sum / n, same, n


def agreement(golden: GoldenRows) -> None:
    from measure.analysis.fidelity import tier_figures
    from measure.analysis.timings import Bootstrap
    from measure.record.model.fidelity import Fidelity
    from measure.suites.fidelity import judge

    print(f"agreement with an independent computation ({len(golden)} golden rows; target: 1e-6 relative, exact)")
    print(
        f"  {'tier':<18}{'reference':<17}{'mean KLD (pass)':>18}{'independent':>16}{'rel. diff':>11}{'same top-1':>16}"
    )
    worst = 0.0
    for tier, reference in JUDGED.items():
        ref = load_tier(DEMO / reference)
        part = judge(ref, [load_tier(DEMO / tier)], golden)
        (f,) = tier_figures(Fidelity.from_dict(part), Bootstrap(100, 1))
        kld, same, n = _independent(tier, reference, golden)
        ours_same = int(sum(part["tiers"][0]["greedy"]["same_top1"]))
        rel = abs(f.greedy.kld_mean.value - kld) / kld if kld else abs(f.greedy.kld_mean.value)
        worst = max(worst, rel)
        flag = "" if ours_same == same else "  MISMATCH"
        print(
            f"  {tier:<18}{reference:<17}{f.greedy.kld_mean.value:>18.9g}{kld:>16.9g}{rel:>11.1e}"
            f"{f'{ours_same}/{n} = {same}':>16}{flag}"
        )
    print(f"  worst relative difference {worst:.1e} (target <= 1e-6)")


def cost() -> None:
    """A whole demo run timed, then the fidelity pass alone over the same tiers, in this one process."""
    from measure.suites.fidelity_steps import run_fidelity_steps
    from measure.suites.preflight import check_tiers
    from measure.suites.steps import Sessions

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "measure", "run", "--results", tmp], capture_output=True, text=True
        )
        run_s = time.perf_counter() - start
        if done.returncode:
            raise SystemExit(f"measure run failed: {done.stderr.strip().splitlines()[-1]}")
        record = load(done.stdout.strip().splitlines()[-1])
    config = load_config(None)
    golden = load_golden(config.golden)
    sessions = Sessions(config, "framing")
    start = time.perf_counter()
    _, planned, _ = check_tiers(sessions, golden, fidelity=True)  # the tiers' checks timed with the pass they serve
    run_fidelity_steps(planned, config.pairs, sessions, golden, {}, lambda: None)
    pass_s = time.perf_counter() - start
    fid = record.fidelity
    print(
        f"\ncost on the demo (one run, this machine): measure run {run_s:.1f} s whole (target < 120 s); the fidelity "
        f"pass alone {pass_s:.1f} s = {pass_s / run_s:.1%} of it (target <= 10%), {len(fid.tiers) if fid else 0} "
        f"tiers and {len(fid.pairs) if fid else 0} pairs judged, {len(fid.references) if fid else 0} references"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=64, help="golden rows for the agreement check (default: all 64)")
    ap.add_argument("--no-cost", action="store_true", help="skip the timed demo run")
    args = ap.parse_args()
    g = load_golden(bundled.GOLDEN)
    agreement(GoldenRows(g.path, g.sha256, g.rows[: args.rows]))
    if not args.no_cost:
        cost()


if __name__ == "__main__":
    main()
