// The two-core ceiling of `npm run bench:e2e`: two single-thread engines (two Workers, a model
// each) completing the same prompt at once, against each alone in the same page. Their
// summed rates are what two cores give this work with nothing shared and nothing to wait for:
// the bound a two-thread team is measured against.
// Publishes window.kopitiamResult = { lone: rate, pair: [rate, rate] } or { error }; rate =
// { prefill, decode } in tok/s, `lone` the mean of a run of each engine alone, one before the
// pair and one after.
import { createEngine } from "../../js/engine.js";

const params = new URLSearchParams(location.search);
const model = params.get("model") ?? "/models/gemma-3-270m-q4_0.gguf";
const prompt = params.get("prompt") ?? "Once upon a time";
const opts = { maxTokens: Number(params.get("maxTokens") ?? 64), temperature: 0, contextLength: 1024, cache: false };
const rate = ({ stats }) => ({ prefill: stats.prefillTokensPerSecond, decode: stats.decodeTokensPerSecond });

try {
  const engines = [await createEngine({ threads: 1 }), await createEngine({ threads: 1 })];
  for (const e of engines) await e.loadModel(model);
  const before = rate(await engines[0].complete(prompt, opts));
  const pair = (await Promise.all(engines.map((e) => e.complete(prompt, opts)))).map(rate);
  const after = rate(await engines[1].complete(prompt, opts));
  const lone = { prefill: (before.prefill + after.prefill) / 2, decode: (before.decode + after.decode) / 2 };
  window.kopitiamResult = { lone, pair };
} catch (e) {
  window.kopitiamResult = { error: { code: e.code, message: e.message ?? String(e) } };
}
document.getElementById("out").textContent = JSON.stringify(window.kopitiamResult, null, 1);
