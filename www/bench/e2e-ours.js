// Our side of `npm run bench:e2e`: the public engine, timed the way a user waits for it.
// Publishes window.kopitiamResult = { loadMs, wallMs, ttftMs, passBytes, again, text, tokens, stats,
// info } or { error }, and POSTs it to `?report=` (report.js); with `?again=1`, `again` holds the
// rates of the same prompt run a second time.
import { createEngine } from "../../js/engine.js";
import { report } from "./report.js";

const params = new URLSearchParams(location.search);
const model = params.get("model") ?? "/models/gemma-3-270m-q4_0.gguf";
const prompt = params.get("prompt") ?? "Once upon a time";
const maxTokens = Number(params.get("maxTokens") ?? 64);
const threads = Number(params.get("threads") ?? 1);
const contextLength = Number(params.get("ctx") ?? 1024);
const build = params.get("build") ?? "auto";
const runAgain = params.get("again") === "1";
// The automatic choice: one thread -> the single-thread build (relaxed SIMD where the browser
// has it), more -> the threaded build.

try {
  // Load = everything before the first prompt can run: worker + wasm start-up + download + parse.
  const t0 = performance.now();
  const engine = await createEngine({ threads, build });
  await engine.loadModel(model);
  const loadMs = performance.now() - t0;
  const t1 = performance.now();
  let first = null;
  // A 1024-token context by default, like wllama's n_ctx, so the memory comparison is like for
  // like. Time to first token: from the call to the first streamed token.
  const r = await engine.complete(prompt, {
    maxTokens, temperature: 0, contextLength, onToken: () => (first ??= performance.now()),
  });
  const wallMs = performance.now() - t1;
  const ttftMs = first - t1;
  // The same prompt again in the same engine, its cached prefix not reused: the rates of a
  // prompt run after most of the browser's optimising compiles are done.
  const again = runAgain ? (await engine.complete(prompt, { maxTokens, temperature: 0, contextLength, cache: false })).stats : null;
  // Weight bytes one pass reads (for the read-ceiling fraction): the prompt pass of a short
  // profiled completion after the timed one, so the timing carries no profiler.
  const { profile } = (await engine.complete("Hello", { maxTokens: 1, temperature: 0, cache: false, profile: true })).stats;
  // Sections only (`team` is the thread team's tally, no weights).
  const passBytes = Object.values(profile.prefill).reduce((a, s) => a + (s.weightBytes ?? 0), 0) / profile.prefill.embed.calls;
  window.kopitiamResult = { loadMs, wallMs, ttftMs, passBytes, again: again && { prefill: again.prefillTokensPerSecond, decode: again.decodeTokensPerSecond }, text: r.text, tokens: r.tokens, stats: r.stats, info: engine.info };
} catch (e) {
  window.kopitiamResult = { error: { code: e.code, message: e.message ?? String(e) } };
}
document.getElementById("out").textContent = JSON.stringify(window.kopitiamResult, null, 1);
report(window.kopitiamResult);
