// `npm run bench`: builds the release wasm variants, runs www/bench in headless Chromium, prints
// a table of medians and writes it to its own section of BENCHMARKS.md (the end-to-end section
// of `npm run bench:e2e` stays). A measurement tool, not a test.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { serve } from "./serve.mjs";
import { launch } from "../tests/js/browser.mjs";
import { writeSection } from "./bench-md.mjs";

execFileSync("bash", ["scripts/build.sh", "simd", "relaxed", "scalar", "threads", "relaxed-threads"], { stdio: "inherit" });

const server = await serve(0);
const browser = await launch();
let results, chromium;
try {
  chromium = browser.version();
  const page = await browser.newPage();
  page.on("console", (m) => m.type() === "error" && console.error(m.text()));
  await page.goto(`http://127.0.0.1:${server.address().port}/www/bench/index.html`);
  results = await page.evaluate(
    () => globalThis.runBench(undefined, (p) => console.log(p)),
  );
} finally {
  await browser.close();
  server.close();
}

const cores = execFileSync("nproc").toString().trim();
const cpu = (readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/) ?? [])[1] ?? "?";
const roofline = Object.fromEntries(
  results.map((r) => [r.name, r.results.find((k) => k.name.startsWith("streaming read")).gbs]),
);
const baseline = Object.fromEntries(
  results.find((r) => r.name === "simd128").results.map((k) => [k.name, k.ms]),
);
const fmt = (v, d = 2) => (v === undefined ? "" : v.toFixed(d));
const lines = [
  "## Kernels",
  "",
  `Kernel benchmark (\`npm run bench\`), ${new Date().toISOString().slice(0, 10)}: headless Chromium ${chromium},`,
  `${cores} cores (${cpu}). Medians of 7 timed batches per cell; every kernel runs through the public`,
  "JS Tensor API on random Q4_0 weights (scale 0.01) in a dedicated Worker per build. GB/s counts",
  "weight bytes read (Q4_0: 18 bytes per 32 weights); *roofline* is that GB/s over a plain SIMD128",
  "loop that only reads 160 MiB (a 147-byte module of its own, `www/bench/worker.js`), timed in the",
  "same Worker: the single-thread read ceiling; *× simd128* is the speed-up over the single-thread simd128 build. Each",
  "call here is a separate JS → wasm op, so the threaded rows pay a pool wake-up per call (about a",
  "millisecond in Chromium); the model's forward pass avoids that with its spinning thread team.",
  "",
  "| build | kernel | ms | GOP/s | GB/s | roofline | × simd128 |",
  "|---|---|---:|---:|---:|---:|---:|",
];
for (const r of results) {
  for (const k of r.results) {
    const frac = k.name.startsWith("q4_0") ? fmt(k.gbs / roofline[r.name]) : "";
    lines.push(
      `| ${r.name} (${r.build}) | ${k.name} | ${fmt(k.ms, 3)} | ${fmt(k.gops)} | ${fmt(k.gbs)} | ${frac} | ${fmt(baseline[k.name] / k.ms)} |`,
    );
  }
}
const table = lines.join("\n") + "\n";
writeSection("BENCHMARKS.md", "kernels", table);
console.log(table);
