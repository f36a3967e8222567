// End to end: serve the repo like `npm start` does, open the demo in headless Chromium, and check
// that the wasm build computed the values on the page (against hand-computed results).
import test from "node:test";
import assert from "node:assert/strict";
import { withRepoPage } from "./browser.mjs";

test("the demo page computes tensor ops in wasm", () => withRepoPage("/www/tensors.html", async ({ page, errors }) => {
  await page.waitForSelector('#status[data-state="ok"]', { timeout: 30_000 });
  const cell = (expr) => page.locator(`td[data-expr="${expr}"]`).innerText();
  assert.equal(await cell("a.add(b), b = [10, 20, 30]"), "[11, 22, 33, 14, 25, 36]");
  assert.equal(await cell("a.matmul(a.transpose(0, 1))"), "[14, 32, 32, 77]");
  assert.equal(await cell("a.argmax(1)"), "[2, 2]");
  assert.match(await cell("a.matmul(a)  // bad shapes"), /^ShapeMismatch: /);
  assert.equal(await page.evaluate(() => crossOriginIsolated), true, "COOP/COEP served");
  // The loader picked relaxed SIMD on the main thread (Chromium validates the relaxed probe).
  assert.equal(await page.locator("#status").getAttribute("data-build"), "relaxed-simd");
  // In a Worker of this crossOriginIsolated page it picks the threaded build, whose result has
  // the same bytes as the single-thread simd128 build's.
  const workerRun = async (build) => {
    await page.evaluate((b) => {
      const out = document.getElementById("worker-out");
      delete out.dataset.build;
      const w = new Worker("/www/worker-demo.js", { type: "module" });
      w.onmessage = ({ data }) => { out.dataset.build = data.build ?? data.error; out.dataset.checksum = data.checksum; w.terminate(); };
      w.postMessage({ build: b });
    }, build);
    await page.waitForFunction(() => document.getElementById("worker-out").dataset.build);
    const out = page.locator("#worker-out");
    return [await out.getAttribute("data-build"), await out.getAttribute("data-checksum")];
  };
  const [autoBuild, autoSum] = await workerRun("auto");
  const [simdBuild, simdSum] = await workerRun("simd");
  assert.match(autoBuild, /\+threads$/);
  assert.equal(simdBuild, "simd128");
  assert.equal(autoSum, simdSum, "2 threads give the same bytes as 1");
  await page.click("#bench");
  await page.waitForFunction(() => document.getElementById("bench-out").textContent.includes("GFLOP/s"));
  assert.deepEqual(errors, []);
}));
