// The misuse table (tests/js/misuse/cases.mjs) in headless Chromium: the public API on a page's
// main thread and the Worker engine, each case with its exact code, the instance healthy after.
import test from "node:test";
import assert from "node:assert/strict";
import { withRepoPage } from "./browser.mjs";

test("misuse in Chromium: public API and Worker engine", () => withRepoPage("/tests/js/misuse/page.html", async ({ page, errors }) => {
  await page.waitForFunction(() => window.misuseResult, null, { timeout: 240_000 });
  const r = await page.evaluate(() => window.misuseResult);
  assert.equal(r.error, undefined);
  console.log(`misuse in Chromium: ${r.api.cases} API cases, ${r.engine.cases} engine cases; loops (ms): ${JSON.stringify(r.api.timings)}`);
  assert.deepEqual([...r.api.failures, ...r.engine.failures], []);
  assert.ok(r.api.greedyOk, "greedy tokens equal llama.cpp's after everything");
  assert.ok(r.api.memoryGrowth <= 4 << 20, `wasm memory grew by ${r.api.memoryGrowth} bytes`);
  assert.deepEqual(errors, []);
}));
