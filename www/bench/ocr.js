// One side of `npm run bench:ocr`: the first `count` fixture lines, each from its PNG bytes to
// its text, on one worker — ours (createOcr) or tesseract.js 7 (its relaxed-SIMD LSTM core,
// `--psm 7`), both on Debian's eng.traineddata from /tessdata/. Sets `window.ocrBench`.
const params = new URLSearchParams(location.search);
const side = params.get("side") ?? "ours";
const count = Number(params.get("count") ?? 90);

async function ours() {
  const { createOcr } = await import("/js/index.js");
  const ocr = await createOcr();
  await ocr.loadModel("/tessdata/eng.traineddata");
  // The PNG's bytes as they are, as tesseract.js gets them: the worker decodes.
  const read = async (blob) => (await ocr.recognizeLine(blob)).text;
  return { read, build: ocr.info.build, close: () => ocr.dispose() };
}

async function tesseractjs() {
  const { createWorker, OEM } = (await import("/node_modules/tesseract.js/dist/tesseract.esm.min.js")).default;
  const worker = await createWorker("eng", OEM.LSTM_ONLY, {
    workerPath: "/node_modules/tesseract.js/dist/worker.min.js",
    corePath: "/node_modules/tesseract.js-core/",
    langPath: "/tessdata",
    gzip: false,
    cacheMethod: "none",
    workerBlobURL: false,
  });
  await worker.setParameters({ tessedit_pageseg_mode: "7" });
  const read = async (blob) => (await worker.recognize(blob)).data.text.replace(/\n+$/, "");
  return { read, build: "tesseract.js 7", close: () => worker.terminate() };
}

async function run() {
  const meta = await (await fetch("/tests/fixtures/ocr/lines.json")).json();
  const lines = meta.lines.slice(0, count);
  const blobs = await Promise.all(lines.map(async (l) => (await fetch(`/tests/fixtures/ocr/${l.image}`)).blob()));
  const t0 = performance.now();
  const engine = side === "ours" ? await ours() : await tesseractjs();
  const loadMs = performance.now() - t0;
  // One line first, outside the timing (tesseract.js sets up its API on the first call).
  await engine.read(blobs[0]);
  const texts = [];
  const t1 = performance.now();
  for (const b of blobs) texts.push(await engine.read(b));
  const ms = performance.now() - t1;
  await engine.close();
  const exact = texts.filter((t, i) => t === lines[i].truth).length;
  return { side, build: engine.build, lines: texts.length, ms, linesPerSecond: texts.length / (ms / 1e3), loadMs, exact, texts };
}

run().then(
  (r) => {
    window.ocrBench = r;
    document.getElementById("out").textContent = JSON.stringify(r, null, 1);
  },
  (e) => (window.ocrBench = { error: { code: e.code, message: String(e.stack ?? e) } }),
);
