// `npm run bench:long` (scripts/bench-long.mjs) runs this in headless Chromium: our engine on a
// short prompt and on a long one (the same text repeated), greedy, 64 new tokens each, so the
// prefill rate, the time to first token and the decode rate can be compared at positions ~100
// and ~1,000. Fresh engine per run (`cache: false`), one build per call.
import { createEngine } from "/js/engine.js";

/** One fresh engine, one greedy completion; `profile`: with the time per section (bench:profile). */
export async function once(model, threads, prompt, profile = false) {
  const engine = await createEngine({ threads });
  await engine.loadModel(model, { contextLength: 2048 });
  const t0 = performance.now();
  let first = null;
  const r = await engine.complete(prompt, {
    temperature: 0, maxTokens: 64, cache: false, profile,
    onToken: () => (first ??= performance.now()),
  });
  await engine.dispose();
  const s = r.stats;
  return {
    build: engine.info.build, prompt: s.promptTokens, prefill: s.prefillTokensPerSecond,
    ttftMs: first - t0, decode: s.decodeTokensPerSecond, generated: s.generatedTokens,
    prefillMs: s.prefillMs, decodeMs: s.decodeMs, profile: s.profile,
  };
}

globalThis.runLongBench = async (model, threads, short, long, runs) => {
  const out = [];
  for (let i = 0; i < runs; i++) {
    out.push({ kind: "short", ...(await once(model, threads, short)) });
    out.push({ kind: "long", ...(await once(model, threads, long)) });
  }
  return out;
};
