// The onnxruntime-node leg of the framing-parity suite (measure/node_leg.py drives it).
//
// Reads one JSON request on stdin: a tier's graph files and input/output names (discovered
// by the Python side, so there is one place that understands layouts), session options,
// the token prefixes the Python leg decoded, and the block sizes. Runs the same framings
// as measure/suites/framing.py under onnxruntime-node and writes one JSON answer on stdout:
// per block, present differences per layer, logits differences, argmax agreement and
// first divergent step; and this runtime's own greedy decode of every row.
//
// Exit status: 0 answered; 3 onnxruntime-node is not installed (stdout says where it looked);
// 1 failed (stdout's JSON gives the first line of the error, stderr the stack).

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

function findRuntime() {
  const places = [
    process.env.MEASURE_NODE_MODULES && path.join(process.env.MEASURE_NODE_MODULES, "package.json"),
    import.meta.url,
    path.join(process.cwd(), "package.json"),
  ].filter(Boolean);
  for (const place of places) {
    try {
      return createRequire(place)("onnxruntime-node");
    } catch (err) {
      if (err.code !== "MODULE_NOT_FOUND") throw err;
    }
  }
  process.stdout.write(
    JSON.stringify({
      status: "skipped",
      reason:
        "onnxruntime-node is not installed (looked from " +
        places.map((p) => String(p).replace(/^file:\/\//, "")).join(", ") +
        "); install it with `npm ci --ignore-scripts` in the project root or set MEASURE_NODE_MODULES",
    }) + "\n",
  );
  process.exit(3);
}

const ort = findRuntime();
const request = JSON.parse(readFileSync(0, "utf8"));

const OPT_LEVELS = { disable: "disabled", basic: "basic", extended: "extended", all: "all" };

async function open(file) {
  const s = request.session;
  return ort.InferenceSession.create(path.join(request.folder, file), {
    intraOpNumThreads: s.intra_op_threads,
    interOpNumThreads: s.inter_op_threads,
    executionMode: "sequential",
    graphOptimizationLevel: OPT_LEVELS[s.graph_optimization] ?? "all",
    executionProviders: ["cpu"],
    logSeverityLevel: 3,
  });
}

function ids(tokens, dtype) {
  return dtype === "int32"
    ? new ort.Tensor("int32", Int32Array.from(tokens), [1, tokens.length])
    : new ort.Tensor("int64", BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
}

function ones(length, dtype) {
  return ids(new Array(length).fill(1), dtype);
}

function zeros(shape) {
  return new ort.Tensor("float32", new Float32Array(0), [1, shape.heads, 0, shape.head_dim]);
}

function optimumNames(layers) {
  const names = { pastSelf: [], pastCross: [], presentSelf: [], presentCross: [] };
  for (let i = 0; i < layers; i++) {
    for (const k of ["key", "value"]) {
      names.pastSelf.push(`past_key_values.${i}.decoder.${k}`);
      names.pastCross.push(`past_key_values.${i}.encoder.${k}`);
      names.presentSelf.push(`present.${i}.decoder.${k}`);
      names.presentCross.push(`present.${i}.encoder.${k}`);
    }
  }
  return names;
}

// A cache is { self: Tensor[] (key, value per layer), cross: any, length }, as in measure/graphs.py.
async function engine() {
  const enc = request.encoder;
  const dec = request.decoder;
  const shape = request.shape;
  const encoder = await open(enc.file);
  const fetch = async (session, feeds, names) => {
    const out = await session.run(feeds, names);
    return names.map((n) => out[n]);
  };
  const start = async (sourceIds) => {
    const feeds = { input_ids: ids(sourceIds, enc.ids_dtype) };
    const mask = ones(sourceIds.length, enc.mask_dtype ?? "int64");
    if (enc.mask_dtype) feeds.attention_mask = mask;
    const [hidden] = await fetch(encoder, feeds, [enc.output]);
    return { hidden, mask };
  };
  const L2 = 2 * shape.layers;
  if (dec.layout === "simple") {
    const session = await open(dec.files[0]);
    const outputs = ["logits", ...dec.present];
    return {
      start: async (sourceIds) => {
        const { hidden, mask } = await start(sourceIds);
        const cross = { encoder_hidden_states: hidden };
        if (dec.with_mask) cross.encoder_attention_mask = mask;
        return { self: new Array(L2).fill(zeros(shape)), cross, length: 0 };
      },
      feed: async (cache, tokens) => {
        const feeds = { ...cache.cross, input_ids: ids(tokens, dec.ids_dtype) };
        dec.past.forEach((n, i) => (feeds[n] = cache.self[i]));
        const out = await fetch(session, feeds, outputs);
        return [out[0], { self: out.slice(1), cross: cache.cross, length: cache.length + tokens.length }];
      },
    };
  }
  const n = optimumNames(shape.layers);
  if (dec.layout === "optimum") {
    const first = await open(dec.files[0]);
    const withPast = await open(dec.files[1]);
    return {
      start: async (sourceIds) => {
        const { hidden, mask } = await start(sourceIds);
        return { self: [], cross: { hidden, mask }, length: 0 };
      },
      feed: async (cache, tokens) => {
        const input = ids(tokens, dec.ids_dtype);
        if (cache.length === 0) {
          const feeds = {
            input_ids: input,
            encoder_attention_mask: cache.cross.mask,
            encoder_hidden_states: cache.cross.hidden,
          };
          const out = await fetch(first, feeds, ["logits", ...n.presentSelf, ...n.presentCross]);
          const cross = { kv: out.slice(1 + L2), mask: cache.cross.mask };
          return [out[0], { self: out.slice(1, 1 + L2), cross, length: tokens.length }];
        }
        const feeds = { input_ids: input, encoder_attention_mask: cache.cross.mask };
        n.pastSelf.forEach((name, i) => (feeds[name] = cache.self[i]));
        n.pastCross.forEach((name, i) => (feeds[name] = cache.cross.kv[i]));
        const out = await fetch(withPast, feeds, ["logits", ...n.presentSelf]);
        return [out[0], { self: out.slice(1), cross: cache.cross, length: cache.length + tokens.length }];
      },
    };
  }
  if (dec.layout === "optimum-merged") {
    const session = await open(dec.files[0]);
    const flag = (v) => new ort.Tensor("bool", Uint8Array.from([v ? 1 : 0]), [1]);
    return {
      start: async (sourceIds) => {
        const { hidden, mask } = await start(sourceIds);
        const empty = new Array(L2).fill(zeros(shape));
        return { self: empty, cross: { kv: empty, hidden, mask }, length: 0 };
      },
      feed: async (cache, tokens) => {
        const feeds = {
          input_ids: ids(tokens, dec.ids_dtype),
          encoder_hidden_states: cache.cross.hidden,
          encoder_attention_mask: cache.cross.mask,
          use_cache_branch: flag(cache.length > 0),
        };
        n.pastSelf.forEach((name, i) => (feeds[name] = cache.self[i]));
        n.pastCross.forEach((name, i) => (feeds[name] = cache.cross.kv[i]));
        const out = await fetch(session, feeds, ["logits", ...n.presentSelf, ...n.presentCross]);
        const cross = cache.length ? cache.cross : { ...cache.cross, kv: out.slice(1 + L2) };
        return [out[0], { self: out.slice(1, 1 + L2), cross, length: cache.length + tokens.length }];
      },
    };
  }
  throw new Error(`layout ${dec.layout} is not one the node leg understands`);
}

// Logits of one call arrive as [1, k, vocab]; rows(t) gives k Float32Array views.
function rows(t) {
  const vocab = t.dims[t.dims.length - 1];
  const k = t.data.length / vocab;
  return Array.from({ length: k }, (_, i) => t.data.subarray(i * vocab, (i + 1) * vocab));
}

function argmax(v) {
  let best = 0;
  for (let i = 1; i < v.length; i++) if (v[i] > v[best]) best = i; // first maximum, as numpy
  return best;
}

async function feedPrefix(eng, sourceIds, prefix, block) {
  let cache = await eng.start(sourceIds);
  const logits = [];
  for (let i = 0; i < prefix.length; i += block) {
    const [l, next] = await eng.feed(cache, prefix.slice(i, i + block));
    logits.push(...rows(l));
    cache = next;
  }
  return { logits, cache };
}

async function greedy(eng, row) {
  let cache = await eng.start(row.source_ids);
  let token = request.special.decoder_start;
  const out = [];
  while (out.length < row.max_new_tokens) {
    const [l, next] = await eng.feed(cache, [token]);
    cache = next;
    const r = rows(l);
    token = argmax(r[r.length - 1]);
    if (token === request.special.eos) break;
    out.push(token);
  }
  return out;
}

class Diff {
  constructor(layers) {
    const z = () => Array.from({ length: layers }, () => [0, 0]);
    this.sum = z();
    this.max = z();
    this.mag = z();
    this.count = new Array(layers).fill(0);
    this.logitsMax = 0;
    this.agree = 0;
    this.total = 0;
    this.firstDivergent = [];
  }

  add(single, batched) {
    for (let layer = 0; layer < this.count.length; layer++) {
      for (const part of [0, 1]) {
        const s = single.cache.self[2 * layer + part].data;
        const b = batched.cache.self[2 * layer + part].data;
        let sum = 0, max = this.max[layer][part], mag = 0; // prettier-ignore
        for (let i = 0; i < s.length; i++) {
          const d = Math.abs(s[i] - b[i]);
          sum += d;
          if (d > max) max = d;
          mag += Math.abs(s[i]);
        }
        this.sum[layer][part] += sum;
        this.max[layer][part] = max;
        this.mag[layer][part] += mag;
      }
      this.count[layer] += single.cache.self[2 * layer].data.length;
    }
    let first = null;
    single.logits.forEach((ls, pos) => {
      const lb = batched.logits[pos];
      for (let i = 0; i < ls.length; i++) this.logitsMax = Math.max(this.logitsMax, Math.abs(ls[i] - lb[i]));
      const same = argmax(ls) === argmax(lb);
      this.agree += same ? 1 : 0;
      this.total += 1;
      if (!same && first === null) first = pos;
    });
    this.firstDivergent.push(first);
  }

  facts(block) {
    const layers = this.count.map((c, i) => ({
      layer: i,
      key_mean_abs_diff: this.sum[i][0] / c,
      key_max_abs_diff: this.max[i][0],
      value_mean_abs_diff: this.sum[i][1] / c,
      value_max_abs_diff: this.max[i][1],
      key_mean_abs: this.mag[i][0] / c,
      value_mean_abs: this.mag[i][1] / c,
    }));
    return {
      block,
      layers,
      present_max_abs_diff: Math.max(0, ...this.max.flat()),
      logits_max_abs_diff: this.logitsMax,
      argmax_agree: this.agree,
      argmax_total: this.total,
      first_divergent_step: this.firstDivergent,
    };
  }
}

async function main() {
  const eng = await engine();
  const diffs = new Map(request.blocks.map((b) => [b, new Diff(request.shape.layers)]));
  const outputIds = [];
  let singleLogits = null;
  for (const [index, row] of request.rows.entries()) {
    outputIds.push(await greedy(eng, row));
    const single = await feedPrefix(eng, row.source_ids, row.prefix, 1);
    if (index === 0 && request.return_first_row_logits) singleLogits = single.logits.map((r) => Array.from(r));
    for (const b of request.blocks) {
      const block = b === "whole" ? row.prefix.length : b;
      diffs.get(b).add(single, await feedPrefix(eng, row.source_ids, row.prefix, block));
    }
  }
  const answer = {
    status: "measured",
    runtime: "onnxruntime-node",
    version: ort.env.versions?.node ?? ort.env.versions?.common ?? null,
    node: process.version,
    blocks: request.blocks.map((b) => diffs.get(b).facts(b)),
    output_ids: outputIds,
  };
  if (singleLogits) answer.first_row_single_logits = singleLogits;
  process.stdout.write(JSON.stringify(answer) + "\n");
}

main().catch((err) => {
  // onnxruntime's messages carry the C++ source location and signature; keep the words.
  const reason = String(err?.message ?? err)
    .split("\n")[0]
    .replace(/failed:\/onnxruntime_src\/.*\) /, "failed: ");
  process.stdout.write(JSON.stringify({ status: "failed", reason }) + "\n");
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
