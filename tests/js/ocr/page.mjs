// The OCR through its Worker (createOcr) in Chromium, on the fixture lines decoded by the
// browser's own PNG decoder: sets `window.ocrResult` with every line's text (the node test
// compares them with tesseract's), a page assembled from lines, and the misuse cases.
import { createOcr } from "/js/index.js";

const MODEL = "/tessdata/eng.traineddata";
const params = new URLSearchParams(location.search);
const build = params.get("build") ?? "simd";
const count = Number(params.get("count") ?? 1e9);

async function imageData(url) {
  const bitmap = await createImageBitmap(await (await fetch(url)).blob());
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const ctx = canvas.getContext("2d");
  ctx.drawImage(bitmap, 0, 0);
  return ctx.getImageData(0, 0, bitmap.width, bitmap.height);
}

/** The error code a promise rejects with, or "resolved". */
const codeOf = (p) => p.then(() => "resolved", (e) => e.code ?? String(e));

/** Stacks images one above another on white, 12 px apart. */
function stack(images) {
  const width = Math.max(...images.map((i) => i.width)) + 20;
  const height = images.reduce((h, i) => h + i.height + 12, 12);
  const canvas = new OffscreenCanvas(width, height);
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, height);
  let y = 12;
  for (const img of images) {
    ctx.putImageData(img, 10, y);
    y += img.height + 12;
  }
  return ctx.getImageData(0, 0, width, height);
}

async function run() {
  const ocr = await createOcr({ build });
  const misuse = {
    beforeLoad: await codeOf(ocr.recognizeLine({ width: 1, height: 1, data: new Uint8Array(1) })),
    garbageModel: await codeOf(ocr.loadModel(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]))),
  };
  const info = await ocr.loadModel(MODEL);
  const meta = await (await fetch("/tests/fixtures/ocr/lines.json")).json();
  const lines = meta.lines.slice(0, count);
  const images = [];
  const texts = [];
  const t0 = performance.now();
  for (const l of lines) {
    const img = await imageData(`/tests/fixtures/ocr/${l.image}`);
    images.push(img);
    texts.push((await ocr.recognizeLine(img)).text);
  }
  const ms = performance.now() - t0;
  const first = await ocr.recognizeLine(images[0]);
  const firstUrl = `/tests/fixtures/ocr/${lines[0].image}`;
  const fromBlob = (await ocr.recognizeLine(await (await fetch(firstUrl)).blob())).text;
  const bitmap = await createImageBitmap(await (await fetch(firstUrl)).blob());
  const fromBitmap = (await ocr.recognizeLine(bitmap)).text;
  const grey = { width: images[0].width, height: images[0].height, data: images[0].data.filter((_, i) => i % 4 === 0) };
  const flat = images.filter((_, i) => lines[i].angle === 0).slice(0, 6);
  const page = await ocr.recognize(stack(flat));
  Object.assign(misuse, {
    notAnImage: await codeOf(ocr.recognizeLine("picture.png")),
    shortData: await codeOf(ocr.recognizeLine({ width: 10, height: 10, data: new Uint8Array(99) })),
    zeroWidth: await codeOf(ocr.recognizeLine({ width: 0, height: 10, data: new Uint8Array(0) })),
    floatData: await codeOf(ocr.recognizeLine({ width: 2, height: 2, data: new Float32Array(16) })),
    badBlob: await codeOf(ocr.recognizeLine(new Blob([new Uint8Array([1, 2, 3])], { type: "image/png" }))),
    tiny: await codeOf(ocr.recognizeLine({ width: 2, height: 2, data: new Uint8Array([0, 255, 255, 255]) })),
    badModelAfterLoad: await codeOf(ocr.loadModel(new Uint8Array(64))),
    afterBadModel: await codeOf(ocr.recognizeLine(images[0])),
  });
  await ocr.loadModel(MODEL);
  const again = (await ocr.recognizeLine(images[0])).text;
  await ocr.dispose();
  misuse.afterDispose = await codeOf(ocr.recognizeLine(images[0]));
  return {
    info, texts, ms, first, again, fromBlob, fromBitmap, bitmapClosed: bitmap.width === 0, page: page.lines.map((l) => l.text),
    pageLines: flat.map((img) => images.indexOf(img)),
    grey: (await (async () => {
      const o = await createOcr({ build });
      await o.loadModel(MODEL);
      const r = (await o.recognizeLine(grey)).text;
      await o.dispose();
      return r;
    })()),
    misuse,
  };
}

run().then(
  (r) => (window.ocrResult = r),
  (e) => (window.ocrResult = { error: `${e.code ?? ""} ${e.stack ?? e}` }),
);
