// End to end: serve the repo like `npm start` does, open the demo in headless Chromium, and check
// that the wasm build computed the values on the page (against hand-computed results).
import test from "node:test";
import assert from "node:assert/strict";
import { serve } from "../../scripts/serve.mjs";
import { launch } from "./browser.mjs";

test("the demo page computes tensor ops in wasm", async () => {
  const server = await serve(0);
  const browser = await launch();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`http://127.0.0.1:${server.address().port}/`);
    await page.waitForSelector('#status[data-state="ok"]', { timeout: 30_000 });
    const cell = (expr) => page.locator(`td[data-expr="${expr}"]`).innerText();
    assert.equal(await cell("a.add(b), b = [10, 20, 30]"), "[11, 22, 33, 14, 25, 36]");
    assert.equal(await cell("a.matmul(a.transpose(0, 1))"), "[14, 32, 32, 77]");
    assert.equal(await cell("a.argmax(1)"), "[2, 2]");
    assert.match(await cell("a.matmul(a)  // bad shapes"), /^ShapeMismatch: /);
    assert.equal(await page.evaluate(() => crossOriginIsolated), true, "COOP/COEP served");
    await page.click("#bench");
    await page.waitForFunction(() => document.getElementById("bench-out").textContent.includes("GFLOP/s"));
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    server.close();
  }
});
