// The onnxruntime-web leg's page: measure/suites/web_leg.py serves it over loopback, measure/suites/web/drive.mjs
// opens it in Chromium once for all tiers (onnxruntime-web's wasm starts once) and calls
// window.measureTier(token) per tier. That fetches the tier's request as JSON (its graph files, the
// Python leg's token prefixes, the golden rows' lines and sources), runs the framing facts of
// framing-core.mjs under onnxruntime-web's wasm execution provider and resolves to the answer.
//
// Golden rows are data here: they arrive as JSON and are shown with textContent, never as markup.

import * as ort from "./ort/ort.wasm.min.mjs";
import { measureTier, reasonOf } from "./framing-core.mjs";

const status = document.getElementById("status");
const say = (text) => {
  status.textContent = text;
};

// The smallest module that uses a v128 instruction: whether this browser validates wasm SIMD.
const SIMD_PROBE = Uint8Array.from([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11,
]);

const OPT_LEVELS = { disable: "disabled", basic: "basic", extended: "extended", all: "all" };

// The threads are the page's, from its URL: onnxruntime-web reads them once, when its wasm starts.
const THREADS = Number(new URLSearchParams(location.search).get("threads") ?? 0);

async function bytes(url, name) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${name}: the page could not fetch it (HTTP ${r.status} ${r.statusText || ""})`.trim());
  return new Uint8Array(await r.arrayBuffer());
}

async function measure(token) {
  const request = JSON.parse(new TextDecoder().decode(await bytes(`requests/${token}.json`, "the request")));
  const base = `tiers/${token}/`;
  const sessions = [];
  const open = async (file) => {
    const options = {
      executionProviders: ["wasm"],
      executionMode: "sequential",
      graphOptimizationLevel: OPT_LEVELS[request.session.graph_optimization] ?? "all",
      logSeverityLevel: 3,
    };
    const external = request.external_data?.[file] ?? [];
    if (external.length) {
      options.externalData = await Promise.all(
        external.map(async (name) => ({ path: name, data: await bytes(base + encodeURIComponent(name), name) })),
      );
    }
    const session = await ort.InferenceSession.create(await bytes(base + encodeURIComponent(file), file), options);
    sessions.push(session);
    return session;
  };
  const onRow = (index, row) =>
    say(`${request.tier}: row ${index + 1} of ${request.rows.length} (golden line ${row.line}): ${row.source}`);
  try {
    const facts = await measureTier(ort, request, { open, now: () => performance.now(), onRow });
    say(`${request.tier}: measured ${request.rows.length} rows`);
    return {
      status: "measured",
      runtime: "onnxruntime-web",
      version: ort.env.versions?.web ?? null,
      execution: {
        provider: "wasm",
        threads: ort.env.wasm.numThreads, // what onnxruntime-web settled on when its wasm started
        threads_requested: THREADS > 0 ? THREADS : null,
        cross_origin_isolated: globalThis.crossOriginIsolated === true,
        simd: WebAssembly.validate(SIMD_PROBE),
        hardware_concurrency: navigator.hardwareConcurrency ?? null,
      },
      ...facts,
    };
  } finally {
    await Promise.all(sessions.map((session) => session.release()));
  }
}

// The driver's entry: one tier's answer, a failure as {status: "failed", reason}, never a rejection.
window.measureTier = (token) =>
  measure(encodeURIComponent(token)).catch((err) => {
    say(`failed: ${reasonOf(err)}`);
    return { status: "failed", reason: reasonOf(err) };
  });

// onnxruntime-web's wasm starts here, on the smallest graph, while the Python leg decodes the first tier.
if (THREADS > 0) ort.env.wasm.numThreads = THREADS; // else onnxruntime-web's default
ort.env.wasm.proxy = false;
ort.env.logLevel = "error";
try {
  const warm = await ort.InferenceSession.create(await bytes("warmup.onnx", "the warm-up graph"), {
    executionProviders: ["wasm"],
  });
  await warm.run({ x: new ort.Tensor("float32", Float32Array.from([1]), [1]) });
  await warm.release();
  say("ready");
} catch (err) {
  say(`onnxruntime-web did not start: ${reasonOf(err)}`); // the first tier fails with the same words
}
window.measureReady = true;
