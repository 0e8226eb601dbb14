// The onnxruntime-node leg of the framing-parity suite (measure/suites/legs/node_driver.py drives it).
//
// Reads one JSON request on stdin: a tier's graph files and input/output names (discovered
// by the Python side, so there is one place that understands layouts), session options,
// the token prefixes the Python leg decoded, and the block sizes. Runs the same framings
// as measure/suites/framing.py under onnxruntime-node and writes one JSON answer on stdout:
// per block, present differences per layer, logits differences, argmax agreement and
// first divergent step; and this runtime's own greedy decode of every row. The facts are
// measured by framing-core.mjs, which the browser leg (measure/suites/legs/web/page.mjs) shares.
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
// imported once the runtime is found, so a copy of this file alone still says what is missing
const { measureTier, reasonOf } = await import("./framing-core.mjs");
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

async function main() {
  const facts = await measureTier(ort, request, { open, now: () => performance.now() });
  const answer = {
    status: "measured",
    runtime: "onnxruntime-node",
    version: ort.env.versions?.node ?? ort.env.versions?.common ?? null,
    node: process.version,
    ...facts,
  };
  process.stdout.write(JSON.stringify(answer) + "\n");
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ status: "failed", reason: reasonOf(err) }) + "\n");
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
