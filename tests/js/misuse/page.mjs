// The misuse table in Chromium: the public API on the page's main thread (simd build), then the
// Worker engine. Sets `window.misuseResult`.
import * as kw from "/js/index.js";
import { engineCases } from "./cases.mjs";
import { expectCode, fixtureOf, runMisuse } from "./run.mjs";

const FIXTURE = "/tests/fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf";

async function runEngine(fx) {
  const failures = [];
  const engine = await kw.createEngine({ threads: 1, build: "simd" });
  await engine.loadModel(FIXTURE);
  const bare = await kw.createEngine({ threads: 1, build: "simd" });
  const disposed = await kw.createEngine({ threads: 1, build: "simd" });
  await disposed.dispose();
  const ctx = { createEngine: kw.createEngine, engine, bare, disposed };
  const cases = engineCases(fx, FIXTURE);
  for (const [name, f, code] of cases) {
    const why = await expectCode(() => f(ctx), code);
    if (why) failures.push(`engine ${name}: expected ${code}, ${why}`);
  }
  // Still healthy: llama.cpp's greedy tokens from the engine that saw every bad call.
  const { tokens } = await engine.complete(fx.hello.prompt, { temperature: 0, maxTokens: fx.hello.greedy.length });
  if (tokens.join() !== fx.hello.greedy.join()) failures.push(`engine greedy after misuse: ${tokens}`);
  await engine.dispose();
  await bare.dispose();
  return { cases: cases.length, failures };
}

try {
  const { memory } = await kw.default();
  const gguf = new Uint8Array(await (await fetch(FIXTURE)).arrayBuffer());
  const reference = await (await fetch("/tests/fixtures/tiny-gemma3/reference.json")).json();
  const fx = fixtureOf(kw, gguf, reference);
  const api = await runMisuse(kw, fx, memory);
  const engine = await runEngine(fx);
  window.misuseResult = { api, engine };
} catch (e) {
  window.misuseResult = { error: `${e?.code ?? ""} ${e?.stack ?? e}` };
}
