// End to end: the demo page (www/index.html) served like `npm start` serves it, driven in
// headless Chromium: completion with the tiny Gemma 3 fixture, chat with the tiny Qwen 2 one
// (byte-level BPE, its own template); and the OCR page (www/ocr.html) on a fixture line. Saves
// screenshots to target/e2e/demo.png, chat.png and ocr.png.
import test from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { serve } from "../../scripts/serve.mjs";
import { launch } from "./browser.mjs";

const FIXTURE = "/tests/fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf";
const reference = JSON.parse(readFileSync(new URL("../fixtures/tiny-gemma3/reference.json", import.meta.url)));
const hello = reference.find((c) => c.prompt === "Hello world");
const QWEN = "/tests/fixtures/tiny-qwen2/tiny-qwen2-q4_0.gguf";
const qwenChat = JSON.parse(readFileSync(new URL("../fixtures/tiny-qwen2/reference.json", import.meta.url)))[1];

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

/** A page of the repo's origin with `createEngine` (js/engine.js) on `window`, for tests that
 * drive the engine API directly. */
async function enginePage() {
  const page = await browser.newPage();
  await page.goto(`${base}/www/tensors.html`);
  await page.evaluate(async () => {
    window.createEngine = (await import("/js/engine.js")).createEngine;
  });
  return page;
}

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
  const q = (build) => `mode=complete&model=${FIXTURE}&prompt=${encodeURIComponent(hello.prompt)}&maxTokens=16&temperature=0&autorun=1&build=${build}`;
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
  // The tiny Qwen 2 (a 4,096-token context where the tiny Gemma has 256): with seed 1 its
  // sampled text for "a" has no end-of-generation token within 3,000 (the native CLI; seeds 4
  // and 6 end after 813 and 1,515). The worker sees the abort at its next 16 ms flush, which
  // came after 41–59 tokens here; 3,000 leave a page that the machine holds back about a
  // second. Up to three tries, on fresh pages.
  const tries = [];
  for (let i = 0; i < 3 && !tries.at(-1)?.stopped; i++) {
    const p = await browser.newPage();
    await p.goto(`${base}/www/index.html?mode=complete&model=${QWEN}&prompt=a&maxTokens=3000&seed=1`);
    await p.waitForSelector("#generate:not([disabled])", { timeout: 30_000 });
    // Press Stop as soon as the first generated text appears (after the prompt's "a").
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
    tries.push({ stopped: r.stopped, tokens: r.tokens.length });
    assert.equal(await p.locator("#generate").isDisabled(), false, "ready for the next run");
    await p.close();
  }
  const last = tries.at(-1);
  assert.equal(last.stopped, true, `no try stopped: ${JSON.stringify(tries)}`);
  assert.ok(last.tokens > 0 && last.tokens < 3000, `stopped after ${last.tokens} tokens`);
});

test("a file that is not GGUF shows an error and the page keeps working", async () => {
  const page = await browser.newPage();
  await page.goto(`${base}/www/index.html?mode=complete`);
  await page.waitForFunction(() => document.getElementById("stat-build").textContent !== "–");
  await page.setInputFiles("#model-file", { name: "notes.gguf", mimeType: "application/octet-stream", buffer: Buffer.from("this is not a model") });
  await page.waitForSelector("#error:not([hidden])");
  assert.match(await page.locator("#error").innerText(), /^InvalidGguf: /);
  // Still usable: load the real fixture by URL and generate.
  await page.fill("#model-url", FIXTURE);
  await page.click("#load-url");
  await page.waitForSelector("#generate:not([disabled])", { timeout: 30_000 });
  await page.fill("#prompt", hello.prompt);
  await page.click("#sampling summary"); // open the sampling controls
  await page.fill("#temperature", "0");
  await page.fill("#max-tokens", "4");
  await page.click("#generate");
  await page.waitForFunction(() => window.kopitiamResult?.tokens);
  assert.deepEqual(await page.evaluate(() => window.kopitiamResult.tokens), hello.greedy.slice(0, 4));
});

test("HTTP errors reject with a code", async () => {
  const { result } = await run(`mode=complete&model=/nope.gguf&autorun=1`);
  assert.equal(result.error.code, "HttpError");
});

test("engine: abort before and during a download, a failing stream, a bodiless Response, context full, unsupported model, dispose", { timeout: 60_000 }, async () => {
  // The download is a stream that sends its first 64 KiB and then stalls (or fails), so the abort
  // lands mid-download every time: a URL on localhost can arrive whole before the worker reads the
  // abort, and then the load has finished.
  const page = await enginePage();
  const r = await page.evaluate(async (fixture) => {
    const engine = await createEngine({ build: "simd" });
    const bytes = new Uint8Array(await (await fetch(fixture)).arrayBuffer());
    const firstChunkThen = (end) => new ReadableStream({ start: (c) => (c.enqueue(bytes.slice(0, 65536)), end(c)) });
    const code = (p) => p.then(() => "loaded", (e) => e.code);
    const out = {};
    out.before = await code(engine.loadModel(fixture, { signal: AbortSignal.abort() }));
    const ctrl = new AbortController();
    const onProgress = (e) => e.phase === "download" && ctrl.abort();
    out.during = await code(engine.loadModel(firstChunkThen(() => {}), { signal: ctrl.signal, onProgress }));
    out.failing = await code(engine.loadModel(firstChunkThen((c) => c.error(new Error("connection reset")))));
    out.bodiless = await code(engine.loadModel(new Response(null, { status: 204 })));
    await engine.loadModel(fixture);
    out.context = await engine.complete("Hello world", { maxTokens: 8, contextLength: 4 }).then(() => "ok", (e) => e.code);
    out.truncated = await engine.loadModel(bytes.slice(0, 100_000)).then(() => "ok", (e) => e.code);
    out.tokens = await engine.tokenize("Hello world").then(() => "ok", (e) => e.code); // no model after a failed load
    await engine.dispose();
    out.disposed = await engine.tokenize("x").then(() => "ok", (e) => e.code);
    return out;
  }, FIXTURE);
  await page.close();
  assert.deepEqual(r, { before: "Aborted", during: "Aborted", failing: "NetworkError", bodiless: "InvalidGguf", context: "ContextFull", truncated: "InvalidGguf", tokens: "NoModel", disposed: "EngineDisposed" });
});

test("engine: with cache: true a URL is stored as it loads and then loads without the network; a 204 is InvalidGguf", { timeout: 60_000 }, async () => {
  const page = await enginePage();
  const url = `${base}${FIXTURE}?cache-test`;
  // The greedy tokens after loading `url`, or the load's error code.
  const load = (url, opts) =>
    page.evaluate(
      async ([url, opts, prompt]) => {
        try {
          await window.engine.loadModel(url, opts);
        } catch (e) {
          return e.code;
        }
        return (await window.engine.complete(prompt, { maxTokens: 4, temperature: 0 })).tokens;
      },
      [url, opts, hello.prompt],
    );
  await page.evaluate(async () => {
    await caches.delete("kopitiam-models");
    window.engine = await createEngine({ build: "simd" });
  });
  const first = await load(url, { cache: true });
  // The copy is written beside the load: wait for it to land.
  await page.waitForFunction(async (u) => Boolean(await (await caches.open("kopitiam-models")).match(u)), url);
  // From here the network refuses the file (so a load that works came from the cache) and a
  // second URL answers 204 No Content.
  await page.context().route(`**${FIXTURE}?cache-test`, (r) => r.abort());
  await page.context().route("**/no-content.gguf", (r) => r.fulfill({ status: 204 }));
  const r = {
    first,
    cached: await load(url, { cache: true }),
    uncached: await load(url, {}),
    empty: await load("/no-content.gguf", {}),
  };
  await page.evaluate(() => window.engine.dispose());
  await page.close();
  const tokens = hello.greedy.slice(0, 4);
  assert.deepEqual(r, { first: tokens, cached: tokens, uncached: "NetworkError", empty: "InvalidGguf" });
});

test("engine: a Blob, a plain ReadableStream and a Response load alike; a short body is TruncatedDownload", async () => {
  const page = await enginePage();
  const r = await page.evaluate(async ([fixture, prompt]) => {
    const engine = await createEngine({ build: "simd" });
    const bytes = new Uint8Array(await (await fetch(fixture)).arrayBuffer());
    // Not a byte stream, so the worker takes its default reader: 64 KiB chunks, then the end.
    const plain = () =>
      new ReadableStream({
        start(c) {
          for (let at = 0; at < bytes.length; at += 65536) c.enqueue(bytes.slice(at, at + 65536));
          c.close();
        },
      });
    const greedy = async (source) => {
      await engine.loadModel(source);
      return (await engine.complete(prompt, { maxTokens: 4, temperature: 0 })).tokens;
    };
    const out = {
      blob: await greedy(new Blob([bytes])), // `Blob.stream()`: a byte stream, read BYOB
      plain: await greedy(plain()),
      response: await greedy(new Response(plain(), { headers: { "content-length": String(bytes.length) } })),
    };
    const short = new Response(new Blob([bytes.slice(0, 100_000)]).stream(), { headers: { "content-length": String(bytes.length) } });
    out.short = await engine.loadModel(short).then(() => "ok", (e) => e.code);
    await engine.dispose();
    return out;
  }, [FIXTURE, hello.prompt]);
  await page.close();
  const tokens = hello.greedy.slice(0, 4);
  assert.deepEqual(r, { blob: tokens, plain: tokens, response: tokens, short: "TruncatedDownload" });
});

test("engine: streamed pieces are every token once and in order, through onToken and generate(), also past a throwing onToken", async () => {
  // The worker gathers the pieces of each 16 ms into one message (the first goes alone): on the
  // tiny model that is dozens of tokens a message, which the page hands out one by one.
  const page = await enginePage();
  const r = await page.evaluate(async (fixture) => {
    const engine = await createEngine({ build: "simd" });
    await engine.loadModel(fixture);
    // The demo's sampling: no end of generation within 250 (as "Stop halts a generation" uses).
    const opts = { maxTokens: 250, seed: 1, temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, cache: false };
    const pieces = [];
    const result = await engine.complete("a", { ...opts, onToken: (p) => pieces.push(p) });
    const streamed = [];
    for await (const p of engine.generate("a", opts)) streamed.push(p);
    // A callback that throws costs none of the pieces after it (the errors are reported).
    let calls = 0;
    const thrown = await engine.complete("a", {
      ...opts,
      onToken: () => {
        calls++;
        throw new Error("a page's bug");
      },
    });
    await engine.dispose();
    return { result, pieces, streamed, calls, thrown: thrown.tokens.length };
  }, FIXTURE);
  await page.close();
  assert.equal(r.result.tokens.length, 250);
  for (const pieces of [r.pieces, r.streamed]) {
    assert.deepEqual(pieces.map((p) => p.token), r.result.tokens);
    assert.equal(pieces.map((p) => p.text).join(""), r.result.text);
  }
  assert.deepEqual([r.calls, r.thrown], [250, 250]);
});

/** Types `text` into the chat box, sends it and waits for turn `n` (1-based) to finish. */
async function say(page, text, n) {
  await page.fill("#chat-input", text);
  await page.click("#send");
  await page.waitForFunction((k) => window.kopitiamChat.turns.length >= k, n, { timeout: 60_000 });
  return page.evaluate((k) => window.kopitiamChat.turns[k - 1], n);
}

test("chat: llama.cpp's reply, later turns from the cache, Stop, Regenerate, a reload restores, Clear", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/www/index.html?model=${QWEN}&temperature=0&maxTokens=16&build=simd`);
  await page.waitForSelector("#send:not([disabled])", { timeout: 60_000 });
  assert.equal(await page.locator("#chat-hint").isHidden(), true, "a file with a chat template gets no base-model hint");
  await page.click("#system-box summary");
  await page.fill("#system", "You are a helpful assistant.");
  // Turn 1 is the fixture's chat prompt: llama.cpp's greedy reply, token for token.
  const t1 = await say(page, "What is the capital of France?", 1);
  assert.equal(t1.error, undefined, JSON.stringify(t1.error));
  assert.equal(t1.stats.promptTokens, qwenChat.tokens.length);
  assert.deepEqual(t1.tokens, qwenChat.greedy);
  const t2 = await say(page, "And of Germany?", 2);
  assert.ok(t2.stats.cachedTokens >= t1.stats.promptTokens, `turn 2: ${t2.stats.cachedTokens} from the cache`);
  assert.match(await page.locator(".msg.assistant .meta").last().innerText(), /prompt tokens from cache/);

  // Stop as soon as the reply starts streaming. The worker sees the abort at its next flush
  // (FLUSH_MS) and the tiny model makes ~50 tokens in one, so Stop landed after 70–155 tokens
  // here: a maximum of 2,000 leaves room for a page the machine holds back.
  await page.click("#sampling summary");
  await page.fill("#max-tokens", "2000");
  await page.fill("#chat-input", "Tell me a long story");
  await page.evaluate(() => {
    const box = document.getElementById("messages");
    new MutationObserver((_, obs) => {
      const last = box.querySelector(".msg.streaming .text");
      if (last && last.textContent.length > 0) {
        obs.disconnect();
        document.getElementById("chat-stop").click();
      }
    }).observe(box, { childList: true, subtree: true, characterData: true });
    document.getElementById("send").click();
  });
  await page.waitForFunction(() => window.kopitiamChat.turns.length >= 3, null, { timeout: 60_000 });
  const t3 = await page.evaluate(() => window.kopitiamChat.turns[2]);
  assert.equal(t3.stopped, true);
  assert.ok(t3.tokens.length < 2000, `stopped after ${t3.tokens.length} tokens`);

  // Regenerate: the same prompt again, all of it from the cache but the last token.
  await page.fill("#max-tokens", "8");
  await page.click("#regenerate");
  await page.waitForFunction(() => window.kopitiamChat.turns.length >= 4, null, { timeout: 60_000 });
  const t4 = await page.evaluate(() => window.kopitiamChat.turns[3]);
  assert.equal(t4.stats.promptTokens, t3.stats.promptTokens);
  assert.equal(t4.stats.cachedTokens, t4.stats.promptTokens - 1);
  assert.equal(await page.locator(".msg").count(), 6);
  // The turn is on record before its cache is saved; the buttons come back after.
  await page.waitForSelector("#regenerate:not([disabled])", { timeout: 60_000 });
  mkdirSync("target/e2e", { recursive: true });
  await page.screenshot({ path: "target/e2e/chat.png", fullPage: true });

  // Reload: the conversation and its cache come back; the next turn reuses the restored cache.
  await page.reload();
  await page.waitForFunction(() => window.kopitiamChat?.restored, null, { timeout: 60_000 });
  const restored = await page.evaluate(() => window.kopitiamChat.restored.tokens);
  assert.equal(await page.locator(".msg").count(), 6);
  assert.equal(await page.locator("#system").inputValue(), "You are a helpful assistant.");
  const t5 = await say(page, "Thanks", 1);
  assert.ok(restored > t4.stats.promptTokens && t5.stats.cachedTokens >= t4.stats.promptTokens,
    `restored ${restored} positions, ${t5.stats.cachedTokens} reused`);

  // Clear: an empty conversation and an empty cache.
  await page.click("#clear");
  assert.equal(await page.locator(".msg").count(), 0);
  const t6 = await say(page, "Hello", 2);
  assert.equal(t6.stats.cachedTokens, 0);
  assert.deepEqual(errors, []);
  await context.close();
});

test("the OCR demo reads an opened image as tesseract does and draws its boxes", async () => {
  const line = JSON.parse(readFileSync(new URL("../fixtures/ocr/lines.json", import.meta.url))).lines[3];
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${base}/www/ocr.html`);
  await page.waitForFunction(() => window.ocrDemoReady, null, { timeout: 60_000 });
  assert.match(await page.textContent("#model-status"), /^Loaded: \[1,36,0,1/);
  assert.ok((await page.textContent("#ocr-text")).length > 10, "the drawn sample reads as text");
  await page.setInputFiles("#image-file", new URL(`../fixtures/ocr/${line.image}`, import.meta.url).pathname);
  await page.waitForFunction((want) => document.getElementById("ocr-text").textContent === want, line.tesseract_nodict, { timeout: 30_000 });
  assert.match(await page.textContent("#ocr-status"), /^1 line\(s\) in \d+ ms · confidence \d+/);
  const size = await page.evaluate(() => [document.getElementById("view").width, document.getElementById("view").height]);
  assert.ok(size[0] > 100 && size[1] > 10, "the image is shown");
  mkdirSync(new URL("../../target/e2e/", import.meta.url), { recursive: true });
  await page.screenshot({ path: new URL("../../target/e2e/ocr.png", import.meta.url).pathname, fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});
