// The peer side of `npm run bench:e2e`: wllama (llama.cpp in wasm) on the same GGUF, prompt and
// sampling as e2e-ours.js. Speeds are llama.cpp's own `timings` from the completion response.
// Publishes window.wllamaResult = { loadMs, prefillTokensPerSecond, … } or { error }, and POSTs it
// to `?report=` (report.js).
import { Wllama } from "/node_modules/@wllama/wllama/esm/index.js";
import { report } from "./report.js";

const params = new URLSearchParams(location.search);
const model = new URL(params.get("model") ?? "/models/gemma-3-270m-q4_0.gguf", location.href).href;
const prompt = params.get("prompt") ?? "Once upon a time";
const maxTokens = Number(params.get("maxTokens") ?? 64);
const threads = Number(params.get("threads") ?? 1);
const nCtx = Number(params.get("ctx") ?? 1024);

try {
  // Load = construct + download (wllama stores the file in OPFS, then reads it back) + model
  // init incl. llama.cpp's warm-up decode. The driver gives every run a fresh browser context,
  // so the OPFS copy of an earlier run never turns a load into a cache hit.
  const t0 = performance.now();
  const wllama = new Wllama({ default: "/node_modules/@wllama/wllama/esm/wasm/wllama.wasm" });
  await wllama.loadModelFromUrl(model, { n_threads: threads, n_ctx: nCtx, n_gpu_layers: 0, useCache: false });
  const loadMs = performance.now() - t0;
  const t1 = performance.now();
  // A raw completion: the server-side tokenizer adds BOS like ours does; temperature 0 is greedy.
  const r = await wllama.createCompletion({ prompt, max_tokens: maxTokens, temperature: 0, top_k: 1 });
  const wallMs = performance.now() - t1;
  const t = r.timings;
  if (!t) throw new Error("the completion response carries no timings");
  window.wllamaResult = {
    loadMs,
    wallMs,
    prefillTokensPerSecond: t.prompt_per_second,
    // llama.cpp's own prompt time: its time to first token less the sampling of that token.
    ttftMs: t.prompt_ms,
    decodeTokensPerSecond: t.predicted_per_second,
    promptTokens: t.prompt_n,
    generatedTokens: t.predicted_n,
    finishReason: r.choices[0].finish_reason,
    text: r.choices[0].text,
    build: `llama.cpp ${Wllama.getLibllamaVersion()} ${wllama.isMultithread() ? "multi" : "single"}-thread`,
    threads: wllama.getNumThreads(),
  };
} catch (e) {
  window.wllamaResult = { error: { code: e.type ?? e.name, message: e.message ?? String(e) } };
}
document.getElementById("out").textContent = JSON.stringify(window.wllamaResult, null, 1);
report(window.wllamaResult);
