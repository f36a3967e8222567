// The misuse table (tests/js/misuse/cases.mjs) in Node against the package's public API over the
// simd build: every case throws its exact code, the instance stays healthy after each, and
// 100,000 caught errors of each kind leave it computing llama.cpp's tokens with no memory growth.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import kw, { memory } from "./load.mjs";
import { fixtureOf, runMisuse } from "./misuse/run.mjs";

const fixture = (p) => new URL(`../fixtures/tiny-gemma3/${p}`, import.meta.url);

test("misuse of the public API gives typed errors and never hurts the instance", async () => {
  const gguf = new Uint8Array(readFileSync(fixture("tiny-gemma3-q4_0.gguf")));
  const fx = fixtureOf(kw, gguf, JSON.parse(readFileSync(fixture("reference.json"))));
  const r = await runMisuse(kw, fx, memory);
  console.log(`misuse: ${r.cases} cases; loops (ms): ${JSON.stringify(r.timings)}; memory growth ${r.memoryGrowth} bytes`);
  assert.deepEqual(r.failures, []);
  assert.ok(r.cases >= 150, `${r.cases} cases`);
  assert.ok(r.greedyOk, "greedy tokens equal llama.cpp's after everything");
  assert.ok(r.memoryGrowth <= 4 << 20, `wasm memory grew by ${r.memoryGrowth} bytes during the loops`);
});

test("every error code is in the README's Errors table and the TypeScript union, and nothing else", () => {
  const codes = [...kw.errorCodes()].sort();
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const section = readme.slice(readme.indexOf("## Errors"), readme.indexOf("\n## ", readme.indexOf("## Errors") + 1));
  const documented = section.split("\n").filter((l) => l.startsWith("| `"))
    .flatMap((l) => [...l.split("|")[1].matchAll(/`(\w+)`/g)].map((m) => m[1]));
  assert.deepEqual([...documented].sort(), codes);
  const dts = readFileSync(new URL("../../pkg/kopitiam_wasm.d.ts", import.meta.url), "utf8");
  const union = dts.match(/export type ErrorCode =([^;]+);/)[1];
  assert.deepEqual([...union.matchAll(/"(\w+)"/g)].map((m) => m[1]).sort(), codes);
});

test("an input too large for wasm memory is AllocationFailed, not an aborted instance", () => {
  // wasm-bindgen's glue `malloc` aborts the instance when it fails: js/api.js asks first.
  const big = new Uint8Array(4e9); // more than the 4 GiB address space minus what is in use
  for (const f of [() => kw.GgufFile.parse(big), () => kw.Model.fromBytes(big), () => new kw.ModelLoader().push(big)]) {
    assert.throws(f, (e) => e.code === "AllocationFailed" && /4000000000 bytes/.test(e.message));
  }
  // Sizes above 4 GiB are reported as they are, not saturated at 2^32 - 1.
  assert.throws(() => new kw.ModelLoader(2 ** 40), (e) => e.code === "AllocationFailed" && /1099511627776 bytes/.test(e.message));
  assert.throws(() => kw.Tensor.zeros([65536, 65536, 16]), (e) => e.code === "SizeOverflow" && /68719476736/.test(e.message));
  assert.deepEqual(Array.from(kw.Tensor.fromFloat32Array([1, 2], [2]).exp().toFloat32Array()), [Math.fround(Math.E), Math.fround(Math.E ** 2)]);
});
