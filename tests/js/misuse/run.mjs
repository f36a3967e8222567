// Runs the misuse table against one instance of the public API and reports every disagreement
// (shared by the Node and the Chromium runs; returns data, asserts nothing itself).
import { asyncCases, greedyMatches, health, loopKinds, misuseCases } from "./cases.mjs";

export const LOOP_COUNT = 100_000;

/** Whether `f()` (or its promise) throws a KopitiamError with `code`: `null` if so, else why not. */
export async function expectCode(f, code) {
  try {
    await f();
    return "did not throw";
  } catch (e) {
    if (!(e instanceof Error)) return `threw a non-Error ${String(e)}`;
    if (code !== "none" && e.name !== "KopitiamError") return `threw ${e.name}: ${e.message}`;
    if (e.code !== code) return `code ${e.code} (${e.message})`;
    if (code !== "none" && !(e.message.length > 10)) return `message too short: ${e.message}`;
    return null;
  }
}

/** What the cases need of the tiny-gemma3 fixture: its bytes, llama.cpp's "Hello world"
 * reference and a tokenizer for the health checks. */
export function fixtureOf(kw, gguf, reference) {
  return { gguf, hello: reference.find((c) => c.prompt === "Hello world"), tokenizer: kw.GgufFile.parse(gguf).tokenizer() };
}

/** `{ cases, failures, loops: { kind: ms }, memoryGrowth, greedyOk }` for `kw` on fixture `fx`. */
export async function runMisuse(kw, fx, memory, loops = LOOP_COUNT) {
  const failures = [];
  const table = [...misuseCases(kw, fx), ...asyncCases(kw)];
  for (const [name, f, code] of table) {
    const why = await expectCode(f, code);
    if (why) failures.push(`${name}: expected ${code}, ${why}`);
    try {
      health(kw, fx);
    } catch (e) {
      failures.push(`${name}: the instance is unhealthy afterwards: ${e.code ?? ""} ${e.message}`);
      break;
    }
  }
  const timings = {};
  const before = memory.buffer.byteLength;
  for (const [kind, [f, code]] of Object.entries(loopKinds(kw, fx))) {
    const t0 = performance.now();
    for (let i = 0; i < loops; i++) {
      let caught = null;
      try {
        f();
      } catch (e) {
        caught = e;
      }
      if (caught?.code !== code) {
        failures.push(`loop ${kind}, iteration ${i}: expected ${code}, got ${caught?.code} ${caught?.message}`);
        break;
      }
    }
    timings[kind] = Math.round(performance.now() - t0);
    try {
      health(kw, fx);
    } catch (e) {
      failures.push(`after the ${kind} loop the instance is unhealthy: ${e.code ?? ""} ${e.message}`);
      break;
    }
  }
  const memoryGrowth = memory.buffer.byteLength - before;
  return { cases: table.length, failures, timings, memoryGrowth, greedyOk: greedyMatches(kw, fx) };
}
