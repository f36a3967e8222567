// The OCR in headless Chromium through createOcr() (tests/js/ocr/page.mjs), single-thread
// SIMD128 and relaxed-SIMD builds: every fixture line's text against tesseract's (the same
// oracle as tests/ocr.rs, and the native build's bits), a stacked page, and misuse that must
// reject with typed errors and leave the OCR working.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { withRepoPage } from "./browser.mjs";

const meta = JSON.parse(readFileSync(new URL("../fixtures/ocr/lines.json", import.meta.url)));

for (const build of ["ocr", "ocr-relaxed", "simd"]) {
  test(`OCR in a Worker (${build}): tesseract's text, a page, misuse`, () =>
    withRepoPage(`/tests/js/ocr/page.html?build=${build}`, async ({ page, errors }) => {
      await page.waitForFunction(() => window.ocrResult, null, { timeout: 300_000 });
      const r = await page.evaluate(() => window.ocrResult);
      assert.equal(r.error, undefined);
      const same = r.texts.filter((t, i) => t === meta.lines[i].tesseract_nodict).length;
      console.log(`# ${r.info.build}: ${same}/${r.texts.length} lines as tesseract; ${(r.texts.length / (r.ms / 1e3)).toFixed(1)} lines/s`);
      assert.equal(r.texts.length, meta.lines.length);
      assert.ok(same * 100 >= r.texts.length * 98, `${same}/${r.texts.length} identical`);
      assert.equal(r.info.inputHeight, 36);
      assert.ok(r.first.confidence > 0 && r.first.confidence <= 100 && r.first.chars.length > 0);
      assert.ok(r.first.chars.every((c, i, a) => c.x0 <= c.x1 && (i === 0 || a[i - 1].x0 <= c.x0)), "character boxes in order");
      assert.equal(r.grey, r.texts[0], "grey bytes read as the RGBA ImageData");
      assert.equal(r.fromBlob, r.texts[0], "a PNG Blob decoded in the worker reads as its ImageData");
      assert.equal(r.fromBitmap, r.texts[0], "a transferred ImageBitmap reads the same");
      assert.ok(r.bitmapClosed, "the transferred ImageBitmap is detached");
      assert.equal(r.again, r.texts[0], "still reads after the misuse");
      // The page's lines against tesseract's reading of each line alone (one may land on another
      // near-tie: the page cuts each line from its band).
      const theirs = r.pageLines.map((i) => meta.lines[i].tesseract_nodict);
      assert.equal(r.page.length, theirs.length, JSON.stringify(r.page));
      assert.ok(r.page.filter((t, i) => t === theirs[i]).length + 1 >= theirs.length, `${JSON.stringify(r.page)} vs ${JSON.stringify(theirs)}`);
      assert.deepEqual(r.misuse, {
        beforeLoad: "NoModel",
        garbageModel: "InvalidTraineddata",
        notAnImage: "InvalidArgument",
        shortData: "InvalidArgument",
        zeroWidth: "InvalidArgument",
        floatData: "InvalidArgument",
        badBlob: "InvalidImage",
        tiny: "resolved",
        badModelAfterLoad: "InvalidTraineddata",
        afterBadModel: "resolved",
        afterDispose: "EngineDisposed",
      });
      assert.deepEqual(errors, []);
    }));
}
