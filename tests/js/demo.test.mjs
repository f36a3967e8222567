// End to end: the demo page (www/index.html) served like `npm start` serves it, driven in
// headless Chromium with the tiny Gemma 3 fixture. Saves a screenshot to target/e2e/demo.png.
import test from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { serve } from "../../scripts/serve.mjs";
import { launch } from "./browser.mjs";

const FIXTURE = "/tests/fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf";
const reference = JSON.parse(readFileSync(new URL("../fixtures/tiny-gemma3/reference.json", import.meta.url)));
const hello = reference.find((c) => c.prompt === "Hello world");

let server, browser, base;
test.before(async () => {
  server = await serve(0);
  browser = await launch();
  base = `http://127.0.0.1:${server.address().port}`;
});
test.after(async () => {
  await browser?.close();
  server?.close();
});

async function run(query) {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/www/index.html?${query}`);
  await page.waitForFunction(() => window.kopitiamResult, null, { timeout: 60_000 });
  const result = await page.evaluate(() => window.kopitiamResult);
  return { page, result, errors };
}

test("greedy generation equals llama.cpp's tokens, with load progress; threads match one thread", async () => {
  const q = (build) => `model=${FIXTURE}&prompt=${encodeURIComponent(hello.prompt)}&maxTokens=16&temperature=0&autorun=1&build=${build}`;
  const threaded = await run(q("auto"));
  assert.deepEqual(threaded.errors, []);
  assert.ok(!threaded.result.error, JSON.stringify(threaded.result.error));
  assert.deepEqual(threaded.result.tokens, hello.greedy);
  assert.match(threaded.result.info.build, /\+threads$/, "isolated page -> threaded build in the worker");
  assert.ok(threaded.result.info.threads >= 1);
  assert.equal(threaded.result.stats.promptTokens, hello.tokens.length);
  assert.match(await threaded.page.locator("#model-status").innerText(), /gemma3/);
  assert.equal(await threaded.page.locator("#bar").evaluate((b) => b.style.width), "100%");
  mkdirSync("target/e2e", { recursive: true });
  await threaded.page.screenshot({ path: "target/e2e/demo.png", fullPage: true });

  const single = await run(q("simd"));
  assert.equal(single.result.info.build, "simd128");
  assert.deepEqual(single.result.tokens, threaded.result.tokens, "same tokens on 1 and N threads");
});

test("Stop halts a generation", async () => {
  const p = await browser.newPage();
  // Seed 1: the tiny model's sampled text for "a" has no end-of-generation token within 250
  // (with seed 0 it ends after 18, so a busy machine could finish before Stop arrives).
  await p.goto(`${base}/www/index.html?model=${FIXTURE}&prompt=a&maxTokens=250&seed=1`);
  await p.waitForSelector("#generate:not([disabled])", { timeout: 30_000 });
  // Press Stop as soon as the first generated text appears.
  await p.evaluate(() => {
    const out = document.querySelector(".output");
    new MutationObserver((_, obs) => {
      if (out.textContent.length > 1) {
        obs.disconnect();
        document.getElementById("stop").click();
      }
    }).observe(out, { childList: true, subtree: true, characterData: true });
    document.getElementById("generate").click();
  });
  await p.waitForFunction(() => window.kopitiamResult && "stopped" in window.kopitiamResult, null, { timeout: 30_000 });
  const r = await p.evaluate(() => window.kopitiamResult);
  assert.equal(r.stopped, true);
  assert.ok(r.tokens.length < 250, `stopped after ${r.tokens.length} tokens`);
  assert.equal(await p.locator("#generate").isDisabled(), false, "ready for the next run");
});

test("a file that is not GGUF shows an error and the page keeps working", async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/www/index.html`);
  await page.waitForFunction(() => document.getElementById("stat-build").textContent !== "–");
  await page.setInputFiles("#model-file", { name: "notes.gguf", mimeType: "application/octet-stream", buffer: Buffer.from("this is not a model") });
  await page.waitForSelector("#error:not([hidden])");
  assert.match(await page.locator("#error").innerText(), /^InvalidGguf: /);
  // Still usable: load the real fixture by URL and generate.
  await page.fill("#model-url", FIXTURE);
  await page.click("#load-url");
  await page.waitForSelector("#generate:not([disabled])", { timeout: 30_000 });
  await page.fill("#prompt", hello.prompt);
  await page.click("summary"); // open the sampling controls
  await page.fill("#temperature", "0");
  await page.fill("#max-tokens", "4");
  await page.click("#generate");
  await page.waitForFunction(() => window.kopitiamResult?.tokens);
  assert.deepEqual(await page.evaluate(() => window.kopitiamResult.tokens), hello.greedy.slice(0, 4));
});

test("HTTP errors reject with a code", async () => {
  const { result } = await run(`model=/nope.gguf&autorun=1`);
  assert.equal(result.error.code, "HttpError");
});

test("engine: abort during download, context full, unsupported model, dispose", async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/www/tensors.html`);
  const r = await page.evaluate(async (fixture) => {
    const { createEngine } = await import("/js/engine.js");
    const engine = await createEngine({ build: "simd" });
    const out = {};
    const ctrl = new AbortController();
    const p = engine.loadModel(fixture, { signal: ctrl.signal });
    ctrl.abort();
    out.abort = await p.then(() => "loaded", (e) => e.code);
    await engine.loadModel(fixture);
    out.context = await engine.complete("Hello world", { maxTokens: 8, contextLength: 4 }).then(() => "ok", (e) => e.code);
    const bytes = new Uint8Array(await (await fetch(fixture)).arrayBuffer());
    out.truncated = await engine.loadModel(bytes.slice(0, 100_000)).then(() => "ok", (e) => e.code);
    out.tokens = await engine.tokenize("Hello world").then(() => "ok", (e) => e.code); // no model after a failed load
    await engine.dispose();
    out.disposed = await engine.tokenize("x").then(() => "ok", (e) => e.code);
    return out;
  }, FIXTURE);
  assert.deepEqual(r, { abort: "Aborted", context: "ContextFull", truncated: "InvalidGguf", tokens: "NoModel", disposed: "EngineDisposed" });
});
