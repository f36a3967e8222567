// `npm run bench:ocr`: our OCR against tesseract.js 7 in headless Chromium — the same 90
// fixture lines (PNG bytes to text), the same eng.traineddata, one worker each, sides
// alternating in fresh contexts. Lines per second (medians of RUNS), exact lines against the
// ground truth, and peak renderer memory above an empty page (runs of their own); writes the
// ocr section of BENCHMARKS.md. A measurement tool, not a test.
//   RUNS=3 COUNT=90 node scripts/bench-ocr.mjs      (KOPITIAM_BENCH_NO_BUILD=1 skips the build)
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { serve } from "./serve.mjs";
import { launch } from "../tests/js/browser.mjs";
import { writeSection } from "./bench-md.mjs";
import { emptyPagePssKiB, median, rendererPssKiB, settle } from "./bench-proc.mjs";

const RUNS = Number(process.env.RUNS ?? 3);
const MEM_RUNS = Number(process.env.MEM_RUNS ?? 1);
const COUNT = Number(process.env.COUNT ?? 90);
const SIDES = ["ours", "tesseractjs"];

if (process.env.KOPITIAM_BENCH_NO_BUILD !== "1") {
  execFileSync("bash", ["scripts/build.sh", "simd", "ocr", "ocr-relaxed"], { stdio: "inherit" });
}
const tjsVersion = JSON.parse(readFileSync("node_modules/tesseract.js/package.json", "utf8")).version;
const server = await serve(0);
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await launch();

async function runOnce(side, memory) {
  await settle();
  const context = await browser.newContext();
  let peak = 0;
  const sample = () => (peak = Math.max(peak, rendererPssKiB()));
  const timer = memory ? setInterval(sample, 100) : null;
  try {
    const page = await context.newPage();
    await page.goto(`${base}/www/bench/ocr.html?side=${side}&count=${COUNT}`);
    await page.waitForFunction(() => window.ocrBench, null, { timeout: 600_000, polling: 200 });
    if (memory) sample();
    const r = await page.evaluate(() => window.ocrBench);
    if (r.error) throw new Error(`${side}: ${r.error.code ?? "Error"}: ${r.error.message}`);
    return { ...r, peakPssKiB: peak };
  } finally {
    if (timer) clearInterval(timer);
    await context.close();
  }
}

const emptyKiB = await emptyPagePssKiB(browser, base);
const runs = { ours: [], tesseractjs: [] };
for (let i = 0; i < RUNS + MEM_RUNS; i++) {
  for (const side of SIDES) {
    const r = await runOnce(side, i >= RUNS);
    r.memory = i >= RUNS;
    runs[side].push(r);
    console.log(`${side} #${i + 1}${r.memory ? " (memory)" : ""}: ${r.linesPerSecond.toFixed(1)} lines/s, ${r.exact}/${r.lines} exact` +
      (r.memory ? `, peak PSS − empty ${((r.peakPssKiB - emptyKiB) / 1024).toFixed(0)} MiB` : ""));
  }
}
await browser.close();
server.close();

const summary = Object.fromEntries(SIDES.map((side) => {
  const speed = runs[side].filter((r) => !r.memory);
  const mem = runs[side].filter((r) => r.memory);
  return [side, {
    build: speed[0].build,
    lps: median(speed.map((r) => r.linesPerSecond)),
    load: median(speed.map((r) => r.loadMs)),
    exact: speed[0].exact,
    mib: median(mem.map((r) => (r.peakPssKiB - emptyKiB) / 1024)),
  }];
}));
const o = summary.ours;
const t = summary.tesseractjs;
const sameText = runs.ours[0].texts.filter((x, i) => x === runs.tesseractjs[0].texts[i]).length;
const date = new Date().toISOString().slice(0, 10);
const body = `## OCR: kopitiam-wasm against tesseract.js ${tjsVersion} (${date})

\`npm run bench:ocr\`: headless Chromium ${browser.version()}, ${COUNT} fixture lines (tests/fixtures/ocr, PNG bytes to text, one worker each, \`--psm 7\` on tesseract.js), Debian's eng.traineddata for both; lines/s are medians of ${RUNS} alternating runs after one warm-up line, memory the peak renderer PSS above an empty page (${(emptyKiB / 1024).toFixed(0)} MiB) in ${MEM_RUNS} run(s) of its own.

| | build | lines/s | load (ms) | exact vs truth | peak memory (MiB) |
|---|---|---:|---:|---:|---:|
| kopitiam-wasm | ${o.build} | ${o.lps.toFixed(1)} | ${o.load.toFixed(0)} | ${o.exact}/${COUNT} | ${o.mib.toFixed(0)} |
| tesseract.js ${tjsVersion} | relaxed-SIMD LSTM core | ${t.lps.toFixed(1)} | ${t.load.toFixed(0)} | ${t.exact}/${COUNT} | ${t.mib.toFixed(0)} |
| ratio | | **${(o.lps / t.lps).toFixed(2)}×** | | | **${(o.mib / t.mib).toFixed(2)}×** |

The two read the same text on ${sameText}/${COUNT} lines (tesseract.js keeps Tesseract's dictionaries; ours runs without them, as tesseract does on the model without its dawg entries).
`;
console.log(body);
writeSection("BENCHMARKS.md", "ocr", body);
