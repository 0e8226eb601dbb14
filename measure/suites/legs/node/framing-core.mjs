// The framing facts every JavaScript runtime leg measures, written once for all of them.
//
// Runtime-agnostic: it is handed `ort` (onnxruntime-node or onnxruntime-web, whose Tensor and
// InferenceSession share one API) and an `open(file)` that makes a session the runtime's way, and
// imports nothing. measure/suites/legs/node/framing.mjs runs it under Node.js, measure/suites/legs/web/page.mjs in a browser
// page; both answer with what measureTier returns, so the Python side reads every leg alike.
//
// The request (built by measure/suites/legs/node_driver.py's describe()): the tier's graph files and input/output
// names, its shape and special ids, the token prefixes the Python leg decoded, the block sizes, and
// how many timed greedy passes to run after the one that records the decodes.

function ids(ort, tokens, dtype) {
  return dtype === "int32"
    ? new ort.Tensor("int32", Int32Array.from(tokens), [1, tokens.length])
    : new ort.Tensor("int64", BigInt64Array.from(tokens, BigInt), [1, tokens.length]);
}

function zeros(ort, shape) {
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

function span(ort, from, count, dtype) {
  const values = Array.from({ length: count }, (_, i) => from + i);
  return ids(ort, values, dtype);
}

// A decoder-only tier (measure/engine/causal/layouts.py's describe()): one graph for every call
// (causal, genai), a first-call graph and a with-past one (causal-split), or one graph whose
// use_cache_branch picks (causal-merged). Each call feeds input_ids, attention_mask over past + new
// positions, position_ids where the graph takes them, and the past (empty, length 0, on the first
// call where the graph takes one), as measure/engine/causal/lane.py's CausalLane does.
async function causalEngine(ort, request, open) {
  const dec = request.decoder;
  const shape = request.shape;
  const first = await open(dec.files[0]);
  const steady = dec.files.length > 1 ? await open(dec.files[1]) : first;
  const outputs = [...dec.present, "logits"];
  const emptyPast = dec.layout === "causal-split" ? [] : new Array(dec.past.length).fill(zeros(ort, shape));
  const flag = (v) => new ort.Tensor("bool", Uint8Array.from([v ? 1 : 0]), [1]);
  return {
    causal: true,
    start: async () => ({ self: emptyPast, length: 0 }),
    feed: async (cache, tokens) => {
      const k = tokens.length;
      const feeds = {
        input_ids: ids(ort, tokens, dec.ids_dtype),
        attention_mask: ids(ort, new Array(cache.length + k).fill(1), dec.mask_dtype),
      };
      if (dec.position_ids) feeds.position_ids = span(ort, cache.length, k, dec.position_dtype ?? "int64");
      if (dec.use_cache_branch) feeds.use_cache_branch = flag(cache.length > 0);
      dec.past.forEach((name, i) => {
        if (i < cache.self.length) feeds[name] = cache.self[i];
      });
      const session = cache.length === 0 ? first : steady;
      const out = await session.run(feeds, outputs);
      const presents = dec.present.map((n) => out[n]);
      return [out.logits, { self: presents, length: cache.length + k }];
    },
  };
}

// A cache is { self: Tensor[] (key, value per layer), cross: any, length }, as in measure/engine/kvcache.py.
export async function engine(ort, request, open) {
  if (request.kind === "causal") return causalEngine(ort, request, open);
  const enc = request.encoder;
  const dec = request.decoder;
  const shape = request.shape;
  const encoder = await open(enc.file);
  const fetch = async (session, feeds, names) => {
    const out = await session.run(feeds, names);
    return names.map((n) => out[n]);
  };
  const start = async (sourceIds) => {
    const feeds = { input_ids: ids(ort, sourceIds, enc.ids_dtype) };
    const mask = ids(ort, new Array(sourceIds.length).fill(1), enc.mask_dtype ?? "int64");
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
        return { self: new Array(L2).fill(zeros(ort, shape)), cross, length: 0 };
      },
      feed: async (cache, tokens) => {
        const feeds = { ...cache.cross, input_ids: ids(ort, tokens, dec.ids_dtype) };
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
        const input = ids(ort, tokens, dec.ids_dtype);
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
        const empty = new Array(L2).fill(zeros(ort, shape));
        return { self: empty, cross: { kv: empty, hidden, mask }, length: 0 };
      },
      feed: async (cache, tokens) => {
        const feeds = {
          input_ids: ids(ort, tokens, dec.ids_dtype),
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
  throw new Error(`layout ${dec.layout} is not one the JavaScript legs understand`);
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

// A decoder-only tier's prefix is [the prompt's place, ...tokens]: the prompt is prefilled in one call
// (its last row decides tokens[0]), then the tokens are fed in blocks, as measure's causal tier's
// feed_prefix does; a seq2seq prefix ([decoder start, ...tokens]) is fed in blocks from its start.
async function feedPrefix(eng, sourceIds, prefix, block) {
  let cache = await eng.start(sourceIds);
  const logits = [];
  let from = 0;
  if (eng.causal) {
    const [l, next] = await eng.feed(cache, sourceIds);
    const r = rows(l);
    logits.push(r[r.length - 1]);
    cache = next;
    from = 1;
  }
  for (let i = from; i < prefix.length; i += block) {
    const [l, next] = await eng.feed(cache, prefix.slice(i, i + block));
    logits.push(...rows(l));
    cache = next;
  }
  return { logits, cache };
}

// Greedy single-step decode of one row: the tokens, why it stopped, and (with keep) every step's
// logits and the last cache, which are exactly a single-step replay of [start, ...tokens] when it
// stopped on eos: the same calls on the same inputs.
// A decoder-only tier's first call is its whole prompt (a decode's prefill), then one token per call.
async function greedy(eng, row, special, keep) {
  let cache = await eng.start(row.source_ids);
  let token = special.decoder_start;
  const out = [];
  const logits = [];
  let fed = eng.causal ? row.source_ids : null;
  while (out.length < row.max_new_tokens) {
    const [l, next] = await eng.feed(cache, fed ?? [token]);
    fed = null;
    cache = next;
    const r = rows(l);
    const last = r[r.length - 1];
    if (keep) logits.push(last);
    token = argmax(last);
    if (token === special.eos) return { out, eos: true, logits, cache };
    out.push(token);
  }
  return { out, eos: false, logits, cache };
}

function samePrefix(decoded, prefix) {
  return decoded.eos && decoded.out.length === prefix.length - 1 && decoded.out.every((t, i) => t === prefix[i + 1]);
}

// Where this runtime's single-step argmax on the Python leg's prefix first leaves the Python leg's
// token (its greedy decode parts there too, on the same history), and by what logit margin.
function divergence(single, row, special) {
  const cut = row.prefix.length - 1 >= row.max_new_tokens; // Python stopped at the cap: the last step has no eos
  for (let pos = 0; pos < single.logits.length; pos++) {
    const last = pos + 1 === row.prefix.length;
    if (last && cut) return null;
    const expected = last ? special.eos : row.prefix[pos + 1];
    const l = single.logits[pos];
    const token = argmax(l);
    if (token !== expected) return { step: pos, token, expected, margin: l[token] - l[expected] };
  }
  return null;
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

// A decoder-only prompt fed in calls of `block` tokens from an empty cache: every position's logits.
async function feedPrompt(eng, sourceIds, block) {
  let cache = await eng.start(sourceIds);
  const logits = [];
  for (let i = 0; i < sourceIds.length; i += block) {
    const [l, next] = await eng.feed(cache, sourceIds.slice(i, i + block));
    logits.push(...rows(l));
    cache = next;
  }
  return { logits, cache };
}

// The prompt prefill framings (measure/suites/framing.py's _prefill_row): token by token against each block.
async function prefillRow(eng, sourceIds, blocks, prefill) {
  const single = await feedPrompt(eng, sourceIds, 1);
  for (const b of blocks) {
    const block = b === "whole" ? sourceIds.length : b;
    prefill.get(b).add(single, await feedPrompt(eng, sourceIds, block));
  }
}

// One tier's facts: per block, present differences per layer, logits differences, argmax agreement
// and first divergent step; this runtime's greedy decode of every row and where it leaves Python's;
// and, with request.timing_repeats = R, the wall milliseconds of R greedy passes over every row (the
// pass that records the decodes, then R - 1 more; `now` is the runtime's performance.now), ids in to
// ids out as the Python leg's wall-clock suite times them. onRow(index, row) reports progress.
export async function measureTier(ort, request, { open, now, onRow = () => {} }) {
  const eng = await engine(ort, request, open);
  const diffs = new Map(request.blocks.map((b) => [b, new Diff(request.shape.layers)]));
  const outputIds = [];
  const parted = [];
  let singleLogits = null;
  let recordingMs = 0;
  // a budget's plan may cut the prompt framings to none (prefill_rows 0): no prefill facts then, as Python's leg
  const framed = eng.causal && (request.prefill_rows ?? 1) > 0;
  const prefill = framed ? new Map(request.blocks.map((b) => [b, new Diff(request.shape.layers)])) : null;
  for (const [index, row] of request.rows.entries()) {
    onRow(index, row);
    const t0 = now();
    const decoded = await greedy(eng, row, request.special, true);
    recordingMs += now() - t0;
    outputIds.push(decoded.out);
    const single = samePrefix(decoded, row.prefix)
      ? decoded
      : await feedPrefix(eng, row.source_ids, row.prefix, 1);
    if (index === 0 && request.return_first_row_logits) singleLogits = single.logits.map((r) => Array.from(r));
    const found = divergence(single, row, request.special);
    if (found) parted.push({ row: index, ...found });
    for (const b of request.blocks) {
      const block = b === "whole" ? row.prefix.length : b;
      diffs.get(b).add(single, await feedPrefix(eng, row.source_ids, row.prefix, block));
    }
    // a budget's plan may keep the prompt framings to the first rows (request.prefill_rows), as the Python leg
    const framePrompt = prefill && index < (request.prefill_rows ?? Infinity);
    if (framePrompt) await prefillRow(eng, row.source_ids, request.blocks, prefill);
  }
  const answer = {
    blocks: request.blocks.map((b) => diffs.get(b).facts(b)),
    output_ids: outputIds,
    divergence: parted,
  };
  if (prefill) answer.prefill = request.blocks.map((b) => prefill.get(b).facts(b));
  const repeats = request.timing_repeats ?? 0;
  if (repeats > 0) {
    const greedyMs = [recordingMs];
    while (greedyMs.length < repeats) {
      let elapsed = 0;
      for (const row of request.rows) {
        const t0 = now();
        await greedy(eng, row, request.special, false);
        elapsed += now() - t0;
      }
      greedyMs.push(elapsed);
    }
    answer.timing = { greedy_ms: greedyMs, tokens: outputIds.reduce((s, o) => s + o.length, 0) };
  }
  if (singleLogits) answer.first_row_single_logits = singleLogits;
  return answer;
}

// onnxruntime's messages carry the C++ source location and signature; keep the words.
export function reasonOf(err) {
  return String(err?.message ?? err)
    .split("\n")[0]
    .replace(/failed:\/onnxruntime_src\/.*\) /, "failed: ")
    .replace(/ERROR_MESSAGE: \/\S+:\d+ .*\) /, "ERROR_MESSAGE: ");
}
