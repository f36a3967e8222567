// `npm run bench:chat`: a 10-turn greedy chat on Gemma 3 270M Q4_0 in headless Chromium, with
// the engine's KV cache reused and without (`cache: false`), one thread. Writes a table of the
// prompt tokens evaluated and the prefill time per turn to its own section of BENCHMARKS.md.
// A measurement tool, not a test.   (KOPITIAM_BENCH_NO_BUILD=1 skips the build.)
import { execFileSync } from "node:child_process";
import { withRepoPage } from "../tests/js/browser.mjs";
import { writeSection } from "./bench-md.mjs";

const MODEL = process.env.MODEL ?? "gemma-3-270m-q4_0";
const BUILD = process.env.BUILD ?? "relaxed";
if (process.env.KOPITIAM_BENCH_NO_BUILD !== "1") {
  execFileSync("bash", ["scripts/build.sh", BUILD], { stdio: "inherit" });
}
execFileSync("bash", ["scripts/prepare-model.sh"], { stdio: ["ignore", "ignore", "inherit"] });

let chromium;
const r = await withRepoPage("/www/bench/chat.html", async ({ page }) => {
  chromium = page.context().browser().version();
  page.on("console", (m) => m.type() === "error" && console.error(m.text()));
  await page.waitForFunction(() => globalThis.runChatBench);
  return page.evaluate(([m, b]) => globalThis.runChatBench(`/models/${m}.gguf`, b), [MODEL, BUILD]);
});

const sum = (turns, k) => turns.reduce((a, t) => a + t[k], 0);
const rows = r.reuse.turns.map((t, i) => {
  const f = r.fresh.turns[i];
  return `| ${i + 1} | ${t.prompt} | ${t.cached} | ${t.evaluated} | ${t.prefillMs.toFixed(0)} | ${f.evaluated} | ${f.prefillMs.toFixed(0)} |`;
});
const perK = (r.reuse.sessionBytes / r.reuse.positions) * 1000;
const body = [
  "## Conversations: KV-cache reuse",
  "",
  `\`npm run bench:chat\`, ${new Date().toISOString().slice(0, 10)}: headless Chromium ${chromium}, ${MODEL}, ${r.reuse.build} on 1 thread.`,
  "Ten greedy chat turns (48 new tokens at most) through `engine.chat`, first with the engine's",
  "cache reused, then the same messages with `cache: false`. Prefill time counts only evaluated tokens.",
  "",
  "| turn | prompt tokens | from cache | evaluated (reuse) | prefill ms (reuse) | evaluated (no reuse) | prefill ms (no reuse) |",
  "|---:|---:|---:|---:|---:|---:|---:|",
  ...rows,
  `| all | ${sum(r.reuse.turns, "prompt")} | ${sum(r.reuse.turns, "cached")} | ${sum(r.reuse.turns, "evaluated")} | ${sum(r.reuse.turns, "prefillMs").toFixed(0)} | ${sum(r.fresh.turns, "evaluated")} | ${sum(r.fresh.turns, "prefillMs").toFixed(0)} |`,
  "",
  `Saved session (\`saveSession()\`) after the last turn: ${r.reuse.sessionBytes} bytes for ${r.reuse.positions} positions = ` +
    `${(perK / 2 ** 20).toFixed(2)} MiB per 1,000 positions.`,
].join("\n");
console.log(body);
writeSection("BENCHMARKS.md", "chat", body, { top: true });
