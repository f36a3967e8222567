// `npm run bench:long`: Gemma 3 270M Q4_0 on a 106-token prompt and on a ~1,000-token one
// (the bench:e2e text repeated), 64 greedy tokens each, 1 and 2 threads, in headless Chromium.
// Prefill rate, time to first token and decode rate (which then runs at positions ~100 and
// ~1,000); medians to a section of BENCHMARKS.md. A measurement tool, not a test.
//   RUNS=3 THREADS=1,2 node scripts/bench-long.mjs   (KOPITIAM_BENCH_NO_BUILD=1 skips the build)
import { execFileSync } from "node:child_process";
import { withRepoPage } from "../tests/js/browser.mjs";
import { writeSection } from "./bench-md.mjs";
import { PROMPT } from "./bench-e2e-prompt.mjs";

const MODEL = process.env.MODEL ?? "gemma-3-270m-q4_0";
const RUNS = Number(process.env.RUNS ?? 3);
const THREADS = (process.env.THREADS ?? "1,2").split(",").map(Number);
if (process.env.KOPITIAM_BENCH_NO_BUILD !== "1") {
  execFileSync("bash", ["scripts/build.sh", "relaxed", "relaxed-threads"], { stdio: "inherit" });
}
execFileSync("bash", ["scripts/prepare-model.sh"], { stdio: ["ignore", "ignore", "inherit"] });
const LONG = Array(10).fill(PROMPT).join("\n\n");

let chromium;
const rows = [];
for (const threads of THREADS) {
  const runs = await withRepoPage("/www/bench/long.html", async ({ page }) => {
    chromium = page.context().browser().version();
    await page.waitForFunction(() => globalThis.runLongBench);
    return page.evaluate(([m, t, s, l, n]) => globalThis.runLongBench(`/models/${m}.gguf`, t, s, l, n), [MODEL, threads, PROMPT, LONG, RUNS]);
  });
  const median = (xs) => xs.sort((a, b) => a - b)[(xs.length - 1) >> 1];
  const of = (kind, k) => median(runs.filter((r) => r.kind === kind).map((r) => r[k]));
  const [s, l] = ["short", "long"].map((kind) => ({
    prompt: of(kind, "prompt"), prefill: of(kind, "prefill"), ttft: of(kind, "ttftMs"), decode: of(kind, "decode"),
  }));
  rows.push(`| ${threads} | ${runs[0].build} | ${s.prompt} | ${s.prefill.toFixed(1)} | ${s.ttft.toFixed(0)} | ${s.decode.toFixed(1)} | ` +
    `${l.prompt} | ${l.prefill.toFixed(1)} | ${l.ttft.toFixed(0)} | ${l.decode.toFixed(1)} | ${(l.prefill / s.prefill).toFixed(2)} | ${(l.decode / s.decode).toFixed(2)} |`);
}
const body = [
  "## Long prompts",
  "",
  `\`npm run bench:long\`, ${new Date().toISOString().slice(0, 10)}: headless Chromium ${chromium}, ${MODEL}, medians of ${RUNS} runs;`,
  "the bench:e2e prompt and the same text ten times, 64 greedy tokens after each (so decode runs at",
  "positions ~100 and ~1,000). *TTFT* is from the `complete` call to the first token.",
  "",
  "| threads | build | short prompt | prefill tok/s | TTFT ms | decode tok/s | long prompt | prefill tok/s | TTFT ms | decode tok/s | prefill long/short | decode long/short |",
  "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ...rows,
].join("\n");
console.log(body);
writeSection("BENCHMARKS.md", "long", body);
