// `npm run bench:e2e`: our engine against wllama (@wllama/wllama, llama.cpp in wasm) end to end
// in headless Chromium — same GGUF, prompt, greedy sampling and origin (COOP/COEP) — on 1 and 2
// threads. Load time, prefill/decode tok/s and peak renderer memory; medians go to the e2e
// section of BENCHMARKS.md. A measurement tool, not a test.
//   RUNS=3 THREADS=1,2 node scripts/bench-e2e.mjs     (KOPITIAM_BENCH_NO_BUILD=1 skips the build)
//   MODEL=gemma-3-270m-q4_k_m …                       (the downloaded Q4_K_M file; own section)
//   LONG_RUNS=3 …   runs per side of the long prompt (the prompt ten times, 2048-token context;
//                   default 3 for the Q4_0 file, 0 otherwise), each with its time to first token
//   CTX4096=1 …     MEM_RUNS memory runs of ours with a 4096-token context (default on for Q4_0)
//   PAIR_RUNS=2 …   runs of two single-thread engines at once against one alone (the two-core
//                   bound for our 2-thread ratios; default 2 when THREADS has 2, else 0)
//   NO_RELAXED=1 …  ours on the builds a browser without relaxed SIMD gets (simd, threads); its
//                   own section, the long-prompt, 4096-context and pair runs off by default
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { serve } from "./serve.mjs";
import { launch } from "../tests/js/browser.mjs";
import { writeSection } from "./bench-md.mjs";
import { emptyBarePssKiB, launchBare, median, rendererPssKiB, settle } from "./bench-proc.mjs";
import { PROMPT } from "./bench-e2e-prompt.mjs";

const MAX_TOKENS = 64;
/** The cached GGUF to run (`MODEL=gemma-3-270m-q4_k_m` for the file people download). */
const MODEL = process.env.MODEL ?? "gemma-3-270m-q4_0";
const QUANT = MODEL.split("-").pop().toUpperCase();
const NO_RELAXED = process.env.NO_RELAXED === "1";
/** The build our side asks for: the engine's own choice, or the SIMD128 ones. */
const ourBuild = (threads) => (NO_RELAXED ? (threads > 1 ? "threads" : "simd") : "auto");
/** The file's default runs (the full set for Q4_0 on the default builds). */
const FULL = QUANT === "Q4_0" && !NO_RELAXED;
const MODEL_URL = `/models/${MODEL}.gguf`;
const RUNS = Number(process.env.RUNS ?? 3);
// Memory is sampled in runs of its own: reading smaps_rollup of a renderer that holds a wasm
// memory reservation costs 10–20 ms of CPU and takes that process's mmap lock, which at 10 Hz
// would slow the very runs being timed (most on 2 threads, where no core is spare).
const MEM_RUNS = Number(process.env.MEM_RUNS ?? 1);
const THREADS = (process.env.THREADS ?? "1,2").split(",").map(Number);
const RUN_TIMEOUT_MS = 1000 * Number(process.env.RUN_TIMEOUT_S ?? 240);
const LONG_RUNS = Number(process.env.LONG_RUNS ?? (FULL ? 3 : 0));
const CTX4096 = (process.env.CTX4096 ?? (FULL ? "1" : "0")) === "1";
const PAIR_RUNS = Number(process.env.PAIR_RUNS ?? (THREADS.includes(2) && !NO_RELAXED ? 2 : 0));
/** The prompt kinds: the bench prompt in a 1024-token context (both sides' default), the same
 * text ten times (as bench:long) in 2048, and the bench prompt in a 4096-token context. */
const KINDS = {
  short: { prompt: PROMPT, ctx: 1024 },
  long: { prompt: Array(10).fill(PROMPT).join("\n\n"), ctx: 2048 },
  ctx4096: { prompt: PROMPT, ctx: 4096 },
};
const SIDES = {
  ours: { page: "e2e-ours.html" },
  wllama: { page: "wllama.html" },
};

if (process.env.KOPITIAM_BENCH_NO_BUILD !== "1") {
  execFileSync("bash", ["scripts/build.sh", "simd", "relaxed", "threads", "relaxed-threads"], { stdio: "inherit" });
}
const modelFile = join(process.env.KOPITIAM_CACHE ?? join(homedir(), ".cache", "kopitiam"), `${MODEL}.gguf`);
if (!existsSync(modelFile)) {
  execFileSync("bash", ["scripts/prepare-model.sh"], { stdio: ["ignore", "ignore", "inherit"] });
}
const ggufBytes = statSync(modelFile).size;
const wllamaVersion = JSON.parse(readFileSync("node_modules/@wllama/wllama/package.json", "utf8")).version;

// ---- runs ----

/** Results that the runs' bare browsers POST, by run name. */
const reports = new Map();
const server = await serve(0, "127.0.0.1", { onReport: (name, body) => reports.get(name)?.(body) });
const base = `http://127.0.0.1:${server.address().port}`;
/** For the read ceiling and the pair runs, which time loops in one page against each other. */
const browser = await launch();
const chromium = browser.version();

let bareRuns = 0;

/** One run in a bare browser (`launchBare`: as Playwright's, without the DevTools client whose
 * attachment costs memory of its own), with `memory` its peak renderer PSS sampled every 100 ms. */
async function runOnce(side, threads, memory, kind = "short") {
  const { prompt, ctx } = KINDS[kind];
  // The same prompt a second time only where it is reported: the timed short runs (a memory
  // run samples the first prompt alone, and a long one would take seconds more).
  const again = kind === "short" && !memory ? "1" : "0";
  const q = new URLSearchParams({ model: MODEL_URL, prompt, maxTokens: MAX_TOKENS, threads, ctx, build: ourBuild(threads), again });
  await settle();
  const name = String(++bareRuns);
  const posted = new Promise((ok) => reports.set(name, ok));
  q.set("report", `/__report/${name}`);
  const bare = launchBare(`${base}/www/bench/${SIDES[side].page}?${q}`);
  let peak = 0;
  const sample = () => (peak = Math.max(peak, rendererPssKiB(bare.pid)));
  const timer = memory ? setInterval(sample, 100) : null;
  let timeout;
  try {
    const late = new Promise((_, fail) => {
      timeout = setTimeout(() => fail(new Error(`no result after ${RUN_TIMEOUT_MS / 1000} s`)), RUN_TIMEOUT_MS);
    });
    const body = await Promise.race([posted, late]);
    if (memory) sample();
    return { ...resultOf(JSON.parse(body)), peakPssKiB: peak };
  } catch (e) {
    const tail = bare.logs().join("\n    ");
    throw new Error(`${side} ×${threads}: ${e.message}${tail ? `\n    ${tail}` : ""}`);
  } finally {
    clearTimeout(timeout);
    clearInterval(timer);
    reports.delete(name);
    await bare.close();
  }
}

/** A page's result, or its error thrown. */
function resultOf(r) {
  if (r.error) throw new Error(`${r.error.code ?? "Error"}: ${r.error.message}`);
  return r;
}

/** Both sides in one shape. */
function normalise(side, r) {
  if (side === "ours") {
    return {
      loadMs: r.loadMs,
      ttftMs: r.ttftMs,
      prefill: r.stats.prefillTokensPerSecond,
      decode: r.stats.decodeTokensPerSecond,
      promptTokens: r.stats.promptTokens,
      generatedTokens: r.stats.generatedTokens,
      build: `${r.info.build} ×${r.info.threads}`,
      text: r.text,
      peakPssKiB: r.peakPssKiB,
      passBytes: r.passBytes,
      againPrefill: r.again?.prefill,
      againDecode: r.again?.decode,
    };
  }
  return {
    loadMs: r.loadMs,
    ttftMs: r.ttftMs,
    prefill: r.prefillTokensPerSecond,
    decode: r.decodeTokensPerSecond,
    promptTokens: r.promptTokens,
    generatedTokens: r.generatedTokens,
    build: `${r.build} ×${r.threads}`,
    text: r.text,
    peakPssKiB: r.peakPssKiB,
  };
}

const runs = []; // { side, threads, i, kind, ...normalised } or { side, threads, i, kind, error }
/** Read ceiling (GB/s) per thread count: as many readers at once, before and after all the runs. */
const ceilings = {};

/** `threads` Workers running the plain SIMD128 read loop at once (www/bench/read-ceiling.js). */
async function readCeiling(threads) {
  await settle();
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${base}/www/bench/ceiling.html`);
    await page.waitForFunction(() => globalThis.runReadCeiling);
    return await page.evaluate((n) => globalThis.runReadCeiling(n), threads);
  } finally {
    await context.close();
  }
}

/** Two single-thread engines at once against one alone (www/bench/pair.js): `{ lone, pair }`,
 * or null (the failure printed). */
async function pairRun() {
  await settle();
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const q = new URLSearchParams({ model: MODEL_URL, prompt: PROMPT, maxTokens: MAX_TOKENS });
    await page.goto(`${base}/www/bench/pair.html?${q}`);
    await page.waitForFunction(() => window.kopitiamResult, null, { timeout: RUN_TIMEOUT_MS, polling: 200 });
    const r = resultOf(await page.evaluate(() => window.kopitiamResult));
    const f = ({ prefill, decode }) => `${prefill.toFixed(1)}/${decode.toFixed(1)}`;
    console.log(`  pair: alone ${f(r.lone)} tok/s (prefill/decode, mean of two), two at once ${r.pair.map(f).join(" + ")}`);
    return r;
  } catch (e) {
    console.error(`  pair: ${e.message}`);
    return null;
  } finally {
    await context.close();
  }
}
const pairs = [];

/** One run of a non-default kind, its failure recorded rather than retried. */
async function tryRun(side, threads, memory, kind, i) {
  try {
    return { side, threads, i, memory, kind, ...normalise(side, await runOnce(side, threads, memory, kind)) };
  } catch (e) {
    console.error(`  ${e.message}`);
    return { side, threads, i, kind, error: e.message };
  }
}

function record(entry) {
  entry.kind ??= "short";
  runs.push(entry);
  if (entry.error) return;
  console.log(
    `  ${entry.side.padEnd(6)} ×${entry.threads} ${entry.kind} run ${entry.i + 1}: load ${(entry.loadMs / 1e3).toFixed(2)} s, ` +
      `prefill ${entry.prefill.toFixed(1)} tok/s (${entry.promptTokens}), TTFT ${entry.ttftMs?.toFixed(0)} ms, ` +
      `decode ${entry.decode.toFixed(1)} tok/s (${entry.generatedTokens})` +
      (entry.memory ? `, peak PSS − empty ${((entry.peakPssKiB - emptyKiB) / 1024).toFixed(0)} MiB` : "") +
      ` [${entry.build}]`,
  );
}
let emptyKiB, cpu, cores;
try {
  // The empty page, measured the same way: a blank page of the same (isolated) origin.
  emptyKiB = await emptyBarePssKiB(base);
  console.log(`Chromium ${chromium}; empty page ${(emptyKiB / 1024).toFixed(1)} MiB PSS; GGUF ${(ggufBytes / 2 ** 20).toFixed(1)} MiB`);

  let wllamaFailures = 0;
  /** One timed (or, from run RUNS on, memory) run of the bench prompt; a failure of ours is
   * retried once, wllama's are reported and, after two, its runs skipped. */
  const shortRun = async (side, threads, i) => {
    const memory = i >= RUNS;
    let entry;
    for (let attempt = 0; attempt < 2 && !entry?.loadMs; attempt++) {
      try {
        entry = { side, threads, i, memory, ...normalise(side, await runOnce(side, threads, memory)) };
      } catch (e) {
        entry = { side, threads, i, error: e.message };
        console.error(`  ${e.message}`);
        if (side === "wllama") break;
      }
    }
    if (entry.error && side === "wllama") wllamaFailures++;
    record(entry);
  };
  const sides = () => ["ours", "wllama"].filter((side) => side === "ours" || wllamaFailures < 2);
  if (QUANT === "Q4_0") for (const threads of THREADS) ceilings[threads] = [await readCeiling(threads)];
  // Round by round, every thread count and side in turn (ours ×1, wllama ×1, ours ×2, …), so a
  // slow phase of the machine (its memory bandwidth moves within minutes) hits every cell and
  // the two-thread ratios are side by side, like ours against wllama.
  for (let i = 0; i < RUNS + MEM_RUNS; i++) {
    for (const threads of THREADS) for (const side of sides()) await shortRun(side, threads, i);
  }
  for (let i = 0; i < LONG_RUNS; i++) {
    for (const threads of THREADS) for (const side of sides()) record(await tryRun(side, threads, false, "long", i));
  }
  for (let i = 0; CTX4096 && i < MEM_RUNS; i++) {
    for (const threads of THREADS) record(await tryRun("ours", threads, true, "ctx4096", i));
  }
  for (const threads of THREADS) ceilings[threads]?.push(await readCeiling(threads));
  for (let i = 0; i < PAIR_RUNS; i++) pairs.push(await pairRun());
  cores = execFileSync("nproc").toString().trim();
  cpu = (readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/) ?? [])[1] ?? "?";
} finally {
  await browser.close();
  server.close();
}

// ---- report ----

const mib = (kib) => (kib - emptyKiB) / 1024;
const fmt = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "–");
const cells = {};
for (const side of Object.keys(SIDES)) {
  for (const threads of THREADS) {
    for (const kind of Object.keys(KINDS)) {
      const all = runs.filter((r) => r.side === side && r.threads === threads && r.kind === kind && !r.error);
      const ok = all.filter((r) => !r.memory);
      const mem = all.filter((r) => r.memory);
      const key = `${side}${threads}${kind === "short" ? "" : kind}`;
      cells[key] = all.length
        ? {
            n: ok.length,
            build: [...new Set(all.map((r) => r.build))].join(", "),
            load: median(ok.map((r) => r.loadMs / 1e3)),
            ttft: median(ok.map((r) => r.ttftMs)),
            prefill: median(ok.map((r) => r.prefill)),
            decode: median(ok.map((r) => r.decode)),
            pss: mem.length ? median(mem.map((r) => mib(r.peakPssKiB))) : NaN,
            memRuns: mem.length,
            passBytes: median(all.map((r) => r.passBytes)),
            againPrefill: median(ok.map((r) => r.againPrefill)),
            againDecode: median(ok.map((r) => r.againDecode)),
            tokens: [...new Set(all.map((r) => `${r.promptTokens}+${r.generatedTokens}`))].join(", "),
          }
        : null;
    }
  }
}

const ourRuns = runs.filter((r) => r.side === "ours" && r.kind === "short" && !r.error);
if (!ourRuns.length) {
  console.error("no run of our engine succeeded: BENCHMARKS.md left as it was");
  process.exit(1);
}
const firstText = (side, threads, kind = "short") =>
  runs.find((r) => r.side === side && r.threads === threads && r.kind === kind && !r.error)?.text;
const lines = [
  `## End to end: kopitiam-wasm vs wllama${QUANT === "Q4_0" ? "" : `, Gemma 3 270M ${QUANT}`}${NO_RELAXED ? ", without relaxed SIMD" : ""}`,
  "",
  `\`npm run bench:e2e\`, ${new Date().toISOString().slice(0, 10)}: headless Chromium ${chromium}, ${cores} cores (${cpu}).`,
  `Gemma 3 270M ${QUANT} (${(ggufBytes / 2 ** 20).toFixed(1)} MiB GGUF) served from localhost with COOP/COEP to both`,
  `sides; one ${PROMPT.split(" ").length}-word prompt (${ourRuns[0].promptTokens} Gemma 3 tokens with BOS), raw completion, greedy, ${MAX_TOKENS}`,
  `new tokens. wllama is @wllama/wllama ${wllamaVersion} (\`loadModelFromUrl\` with n_threads, n_ctx 1024,`,
  "n_gpu_layers 0; `createCompletion` with temperature 0, top_k 1); its speeds are llama.cpp's own",
  "`timings`. Ours is `createEngine` + `loadModel` + `complete` with a 1024-token context (1 thread: the single-thread " +
    (NO_RELAXED ? "SIMD128" : "relaxed-SIMD"),
  `build; 2: the threaded${NO_RELAXED ? " SIMD128" : ""} build), speeds from \`stats\`. *Load* is everything before the first prompt can`,
  "run (worker and wasm start-up, download, parse, and on both sides a warm-up pass; wllama also copies the",
  "file to OPFS). *PSS* is the peak summed `Pss` of the browser's renderer processes (page and",
  `workers), sampled every 100 ms, minus an empty page of the same origin (${fmt(emptyKiB / 1024)} MiB); wllama's`,
  "OPFS copy lives outside the renderers and is not counted. Every run (and the empty page) has a",
  "Chromium of its own, started with Playwright's switches but no DevTools client, as a user's is:",
  "Playwright's attachment left 10–32 MiB of the file's bytes in the renderer for a moment in half of",
  "the loads it drove (its speeds are the same). Sides and thread counts take turns (each round runs ours and",
  "wllama on each thread count), so the two-thread ratios are side by side; speeds are medians of",
  `${RUNS} run(s) per cell, memory the median of ${MEM_RUNS} further run(s) sampled for it (sampling`,
  "costs CPU, so timed runs are not sampled).",
  "",
  "*TTFT* is time to first token: ours from the `complete` call to the first streamed token (tokenizing,",
  "the worker round trip, prefill and sampling); wllama's is llama.cpp's own prompt time (`timings.prompt_ms`).",
  "",
  "| side | threads | build | load s | TTFT ms | prefill tok/s | decode tok/s | peak PSS − empty MiB | tokens (prompt+new) | runs |",
  "|---|---:|---|---:|---:|---:|---:|---:|---|---:|",
];
for (const side of Object.keys(SIDES)) {
  for (const threads of THREADS) {
    const c = cells[`${side}${threads}`];
    lines.push(
      c
        ? `| ${side} | ${threads} | ${c.build} | ${fmt(c.load, 2)} | ${fmt(c.ttft, 0)} | ${fmt(c.prefill)} | ${fmt(c.decode)} | ${fmt(c.pss, 0)} | ${c.tokens} | ${c.n} |`
        : `| ${side} | ${threads} | failed | | | | | | | 0 |`,
    );
  }
}
lines.push("", "| threads | decode ours/wllama | prefill ours/wllama | load wllama/ours | our PSS / GGUF size | same text |", "|---:|---:|---:|---:|---:|---|");
for (const threads of THREADS) {
  const o = cells[`ours${threads}`];
  const w = cells[`wllama${threads}`];
  const a = firstText("ours", threads);
  const b = firstText("wllama", threads);
  const same = a === undefined || b === undefined ? "–" : a === b ? "yes" : "no";
  lines.push(
    `| ${threads} | ${fmt(o && w ? o.decode / w.decode : NaN, 2)} | ${fmt(o && w ? o.prefill / w.prefill : NaN, 2)} | ` +
      `${fmt(o && w ? w.load / o.load : NaN, 2)} | ${fmt(o ? (o.pss * 2 ** 20) / ggufBytes : NaN, 2)} | ${same} |`,
  );
}
if (cells.ours1 && cells.ours2) {
  lines.push(
    "",
    `Our 2 threads / 1 thread: decode ${fmt(cells.ours2.decode / cells.ours1.decode, 2)}, prefill ${fmt(cells.ours2.prefill / cells.ours1.prefill, 2)}` +
      (cells.wllama1 && cells.wllama2
        ? ` (wllama: ${fmt(cells.wllama2.decode / cells.wllama1.decode, 2)}, ${fmt(cells.wllama2.prefill / cells.wllama1.prefill, 2)}).`
        : "."),
  );
  const [a1, a2] = [cells.ours1, cells.ours2];
  lines.push(
    "",
    "The same prompt again in the same engine (`cache: false`, so prefilled anew), after each timed run: 1 thread " +
      `prefill ${fmt(a1.againPrefill)}, decode ${fmt(a1.againDecode)} tok/s; 2 threads ${fmt(a2.againPrefill)}, ${fmt(a2.againDecode)}; ` +
      `2 threads / 1 thread: decode ${fmt(a2.againDecode / a1.againDecode, 2)}, prefill ${fmt(a2.againPrefill / a1.againPrefill, 2)}. ` +
      "The first prompt after loading shares the two cores with V8 compiling the functions it makes hot.",
  );
}
const ceilingParts = THREADS.filter((t) => ceilings[t]?.length === 2 && cells[`ours${t}`]).map((t) => {
  const c = cells[`ours${t}`];
  const ceil = (ceilings[t][0] + ceilings[t][1]) / 2;
  const gbs = (c.decode * c.passBytes) / 1e9;
  return `${t} thread(s): ${fmt(c.decode)} tok/s × ${fmt(c.passBytes / 1e6)} MB of weights a token = ${fmt(gbs, 2)} GB/s ` +
    `of ${fmt(ceil, 2)} GB/s (${t} reader(s) at once; ${ceilings[t].map((x) => fmt(x, 2)).join(" before, ")} after) = **${fmt(gbs / ceil, 2)}**`;
});
if (ceilingParts.length) {
  lines.push(
    "",
    "Decode against the read ceiling measured in this run (a plain SIMD128 loop that only reads 160 MiB, in as many",
    `Workers at once as threads, before and after all the runs; www/bench/read-ceiling.js): ${ceilingParts.join("; ")}.`,
  );
}
const pairOk = pairs.filter(Boolean);
if (pairOk.length) {
  // Per run: the two engines' summed rate over the lone one's; then the median of the runs.
  const bound = (k) => median(pairOk.map((r) => (r.pair[0][k] + r.pair[1][k]) / r.lone[k]));
  const team = (k) => (cells.ours1 && cells.ours2 ? `; our 2-thread team reached ${fmt(cells.ours2[k] / cells.ours1[k], 2)} × our 1 thread` : "");
  lines.push(
    "",
    "Two cores without a team (www/bench/pair.js): two single-thread engines, each in its own Worker with its own",
    "model, complete the prompt at once, against each alone in the same page (one just before, one just after). Their",
    `summed rate over the lone runs' mean (median of ${pairOk.length} run(s)) is what two cores give this work with nothing shared:`,
    `prefill **${fmt(bound("prefill"), 2)}** ×${team("prefill")}; decode **${fmt(bound("decode"), 2)}** ×${team("decode")}.`,
  );
}
if (LONG_RUNS > 0) {
  lines.push(
    "",
    `Long prompt: the bench prompt ten times (both sides' 2048-token context), ${MAX_TOKENS} greedy tokens after it, so decode`,
    `runs at positions ~1,000 (medians of ${LONG_RUNS} runs). *long/short* divides by the same side's row above.`,
    "",
    "| side | threads | prompt tokens | TTFT ms | prefill tok/s | decode tok/s | prefill long/short | decode long/short | same text |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---|",
  );
  for (const side of Object.keys(SIDES)) {
    for (const threads of THREADS) {
      const c = cells[`${side}${threads}long`];
      const s0 = cells[`${side}${threads}`];
      const a = firstText("ours", threads, "long");
      const b = firstText("wllama", threads, "long");
      const same = a === undefined || b === undefined ? "–" : a === b ? "yes" : "no";
      lines.push(
        c
          ? `| ${side} | ${threads} | ${c.tokens.split("+")[0]} | ${fmt(c.ttft, 0)} | ${fmt(c.prefill)} | ${fmt(c.decode)} | ` +
              `${fmt(s0 ? c.prefill / s0.prefill : NaN, 2)} | ${fmt(s0 ? c.decode / s0.decode : NaN, 2)} | ${same} |`
          : `| ${side} | ${threads} | failed | | | | | | |`,
      );
    }
  }
  for (const threads of THREADS) {
    const o = cells[`ours${threads}long`];
    const w = cells[`wllama${threads}long`];
    if (o && w) {
      lines.push(
        "",
        `Long prompt, ${threads} thread(s), ours / wllama: prefill ${fmt(o.prefill / w.prefill, 2)}, decode ${fmt(o.decode / w.decode, 2)}, TTFT ${fmt(w.ttft / o.ttft, 2)}× shorter.`,
      );
    }
  }
}
if (CTX4096) {
  const parts = THREADS.map((t) => cells[`ours${t}ctx4096`])
    .map((c, k) => (c ? `${THREADS[k]} thread(s) ${fmt(c.pss, 0)} MiB = ${fmt((c.pss * 2 ** 20) / ggufBytes, 2)} × the GGUF (median of ${c.memRuns})` : null))
    .filter(Boolean);
  if (parts.length) lines.push("", `Ours with a 4096-token context (the bench prompt, peak PSS − empty page): ${parts.join("; ")}.`);
}
lines.push("", "Per run (load s, TTFT ms, prefill tok/s, decode tok/s, peak PSS − empty MiB, prompt+new tokens):", "");
for (const r of runs) {
  lines.push(
    r.error
      ? `- ${r.side} ×${r.threads} ${r.kind} #${r.i + 1}: error: ${r.error.split("\n")[0]}`
      : `- ${r.side} ×${r.threads} ${r.kind} #${r.i + 1}${r.memory ? " (memory)" : ""}: ${fmt(r.loadMs / 1e3, 2)}, ${fmt(r.ttftMs, 0)}, ${fmt(r.prefill)}, ${fmt(r.decode)}, ${r.memory ? fmt(mib(r.peakPssKiB), 0) : "–"}, ${r.promptTokens}+${r.generatedTokens}`,
  );
}
const short = runs.filter((r) => !r.error && r.generatedTokens < MAX_TOKENS);
if (short.length) lines.push("", `Stopped early (EOS) in ${short.length} run(s): ${short.map((r) => `${r.side} ×${r.threads} #${r.i + 1}`).join(", ")}.`);
const report = lines.join("\n") + "\n";
const section = (QUANT === "Q4_0" ? "e2e" : `e2e-${QUANT.toLowerCase()}`) + (NO_RELAXED ? "-simd128" : "");
writeSection("BENCHMARKS.md", section, report, { top: true });
console.log("\n" + report);
for (const threads of THREADS) {
  for (const side of Object.keys(SIDES)) {
    const t = firstText(side, threads);
    if (t !== undefined) console.log(`${side} ×${threads} text: ${JSON.stringify(t.slice(0, 160))}`);
  }
}
