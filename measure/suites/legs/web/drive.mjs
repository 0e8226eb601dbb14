// Drives the onnxruntime-web leg (measure/suites/legs/web_driver.py starts it): launches the system's Chromium
// headless through playwright-core (an executable path, never a browser download), then for each
// line on stdin ({"url", "token", "timeout_ms"}: the leg's page on its loopback server and one tier's
// request) calls the page's window.measureTier(token) and writes the answer as one JSON line on
// stdout. The page is loaded once and kept while tiers succeed (onnxruntime-web's wasm starts once);
// after a failure or a timeout the next tier gets a freshly loaded page.
//
// argv: BROWSER (the executable) ROOT (the folder whose node_modules holds playwright-core) PAGE (the
// page's URL: it is loaded at once, so onnxruntime-web's wasm starts while Python decodes the first tier)
// and PROVIDER (wasm or webgpu: webgpu launches the browser with WebGPU enabled).
// stdout: first {"status": "ready", "browser": ...}, then one answer per request line.
// Exit status: 0 stdin closed; 3 playwright-core is not installed; 1 the browser did not start
// (stdout's JSON line gives the reason).

import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";
import readline from "node:readline";

const [browserPath, root, pageUrl, provider] = process.argv.slice(2);
const say = (answer) => process.stdout.write(JSON.stringify(answer) + "\n");
const firstLine = (err) => String(err?.message ?? err).split("\n")[0];

let chromium;
try {
  ({ chromium } = createRequire(path.join(root, "package.json"))("playwright-core"));
} catch (err) {
  if (err.code !== "MODULE_NOT_FOUND") throw err;
  say({
    status: "skipped",
    reason: `playwright-core is not installed under ${root}; install it with \`npm ci --ignore-scripts\``,
  });
  process.exit(3);
}

let browser;
try {
  browser = await chromium.launch({
    executablePath: browserPath,
    headless: true, // playwright adds --no-sandbox (its default), which root and containers need
    args: [
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      // fewer processes, each holding its own copy of Chromium's pages: with a 135M model's int4 tier in the page
      // the process tree's resident memory fell from 2.13 to 1.93 GB (no zygotes, no second renderer, no
      // extensions); the page calls gc() once a session is made, to drop its copy of the weights it fetched
      "--js-flags=--expose-gc",
      "--disable-extensions",
      "--no-zygote",
      "--renderer-process-limit=1",
      // WebGPU behind its flag: headless Chromium then offers the GPU's adapter, or SwiftShader's without one
      ...(provider === "webgpu" ? ["--enable-unsafe-webgpu"] : []),
    ],
  });
} catch (err) {
  say({ status: "failed", reason: `the browser ${browserPath} did not start: ${firstLine(err)}` });
  process.exit(1);
}
const context = await browser.newContext();
let page = null;
let loading = null;
let errors = [];

function load(url) {
  loading = (async () => {
    page = await context.newPage();
    errors = [];
    page.on("pageerror", (err) => errors.push(firstLine(err)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text().split("\n")[0]));
    await page.goto(url);
    await page.waitForFunction(() => window.measureReady === true, null, { timeout: 120000, polling: 50 });
  })();
  return loading;
}

async function visit(url, token, timeout) {
  let timer;
  let timedOut = null;
  try {
    if (loading === null) load(url);
    await loading;
    errors = []; // what the page says from here on is this tier's; a failed load keeps what it said
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject((timedOut = new Error(`no answer in ${timeout / 1000} s`))), timeout);
    });
    const answer = await Promise.race([page.evaluate((t) => window.measureTier(t), token), late]);
    if (answer?.status !== "measured") await drop();
    return answer;
  } catch (err) {
    // a timeout says so first: a console error from before it (a missing favicon) is context, not the cause
    const said = errors.length ? `; the page said: ${errors[0]}` : "";
    let why = `the page did not answer: ${firstLine(err)}`;
    if (err === timedOut) why = `${firstLine(err)}${said}`;
    else if (errors.length) why = `the page broke: ${errors[0]}`;
    await drop();
    return { status: "failed", reason: why };
  } finally {
    clearTimeout(timer);
  }
}

async function drop() {
  const old = page;
  page = null;
  loading = null;
  await old?.close().catch(() => {});
}

say({ status: "ready", browser: `Chromium ${browser.version()} (headless)` });
load(pageUrl).catch(() => {}); // its failure is reported by the first tier that waits for it

for await (const line of readline.createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { url, token, timeout_ms: timeout } = JSON.parse(line);
  say(await visit(url, token, timeout));
}
await browser.close();
