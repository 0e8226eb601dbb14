// The onnxruntime-web leg's page: measure/suites/legs/web_driver.py serves it over loopback, measure/suites/legs/web/drive.mjs
// opens it in Chromium once for all tiers (onnxruntime-web's wasm starts once) and calls
// window.measureTier(token) per tier. That fetches the tier's request as JSON (its graph files, the
// Python leg's token prefixes, the golden rows' lines and sources), runs the framing facts of
// framing-core.mjs under onnxruntime-web's wasm (or, with ?provider=webgpu, WebGPU) execution provider and
// resolves to the answer. Without a WebGPU adapter every tier answers {status: "skipped", reason}.
//
// Golden rows are data here: they arrive as JSON and are shown with textContent, never as markup.

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

// The threads and the execution provider are the page's, from its URL: onnxruntime-web reads them once,
// when its wasm starts. "webgpu" loads onnxruntime-web's WebGPU build (its own kernels, as WGSL shaders).
const PARAMS = new URLSearchParams(location.search);
const THREADS = Number(PARAMS.get("threads") ?? 0);
const PROVIDER = PARAMS.get("provider") === "webgpu" ? "webgpu" : "wasm";
const ort = await import(PROVIDER === "webgpu" ? "./ort/ort.webgpu.min.mjs" : "./ort/ort.wasm.min.mjs");

// Renderers that run on the CPU: their timings are emulation, only their numerics mean something.
const SOFTWARE = /swiftshader|llvmpipe|lavapipe|softpipe|warp|basic render/i;

// The WebGPU adapter the browser offers (null: none, with why), described as the record states it.
async function findAdapter() {
  if (!globalThis.navigator?.gpu) return { adapter: null, reason: "this browser exposes no navigator.gpu" };
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter();
  } catch (err) {
    return { adapter: null, reason: `navigator.gpu.requestAdapter() failed: ${reasonOf(err)}` };
  }
  if (!adapter) return { adapter: null, reason: "navigator.gpu.requestAdapter() returned no adapter" };
  const info = adapter.info ?? {};
  const fallback = Boolean(info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false);
  const words = [info.vendor, info.architecture, info.device, info.description].join(" ");
  const described = {
    vendor: info.vendor ?? "",
    architecture: info.architecture ?? "",
    device: info.device ?? "",
    description: info.description ?? "",
    fallback,
    software: fallback || SOFTWARE.test(words),
  };
  return { adapter, described };
}

const gpu = PROVIDER === "webgpu" ? await findAdapter() : null;

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
      executionProviders: [PROVIDER],
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
    // the fetched weights are in the wasm heap now: let go of the page's copy at once (the driver exposes gc),
    // not whenever V8 next collects, so a large tier's weights are not held twice while it decodes
    delete options.externalData;
    globalThis.gc?.();
    sessions.push(session);
    return session;
  };
  const onRow = (index, row) =>
    say(`${request.tier}: row ${index + 1} of ${request.rows.length} (golden line ${row.line}): ${row.source}`);
  if (gpu && !gpu.adapter) return { status: "skipped", reason: `no WebGPU adapter: ${gpu.reason}` };
  // a software adapter's timings are CPU emulation: numerics only, no timed passes
  if (gpu?.described.software) request.timing_repeats = 0;
  try {
    const facts = await measureTier(ort, request, { open, now: () => performance.now(), onRow });
    say(`${request.tier}: measured ${request.rows.length} rows`);
    return {
      status: "measured",
      runtime: "onnxruntime-web",
      version: ort.env.versions?.web ?? null,
      execution: {
        provider: PROVIDER,
        ...(gpu ? { adapter: gpu.described } : {}),
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
if (gpu?.adapter) ort.env.webgpu.adapter = gpu.adapter; // the adapter described is the one the sessions use
try {
  if (gpu && !gpu.adapter) throw new Error(`no WebGPU adapter: ${gpu.reason}`);
  const warm = await ort.InferenceSession.create(await bytes("warmup.onnx", "the warm-up graph"), {
    executionProviders: [PROVIDER],
  });
  await warm.run({ x: new ort.Tensor("float32", Float32Array.from([1]), [1]) });
  await warm.release();
  say("ready");
} catch (err) {
  say(`onnxruntime-web did not start: ${reasonOf(err)}`); // the first tier fails with the same words
}
window.measureReady = true;
