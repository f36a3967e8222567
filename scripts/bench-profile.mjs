// `npm run bench:profile`: where a token's milliseconds go, section by section, in headless
// Chromium (the engine's `profile: true`, src/model/profile.rs), for Gemma 3 270M Q4_0 and
// Q4_K_M on 1 and 2 threads, a 106-token and a 1,060-token prompt; next to the read ceiling of
// as many readers at once, measured around the runs, so each matmul section's read rate is a
// fraction of what the memory system gives. A measurement tool, not a test.
//   RUNS=2 MODELS=gemma-3-270m-q4_0,gemma-3-270m-q4_k_m THREADS=1,2 node scripts/bench-profile.mjs
import { execFileSync } from "node:child_process";
import { withRepoPage } from "../tests/js/browser.mjs";
import { writeSection } from "./bench-md.mjs";
import { median, settle } from "./bench-proc.mjs";
import { PROMPT } from "./bench-e2e-prompt.mjs";

const MODELS = (process.env.MODELS ?? "gemma-3-270m-q4_0,gemma-3-270m-q4_k_m").split(",");
const RUNS = Number(process.env.RUNS ?? 2);
const THREADS = (process.env.THREADS ?? "1,2").split(",").map(Number);
const SECTIONS = ["embed", "norms", "qkv", "rope", "attend", "attnOut", "gateUp", "activation", "down", "lmHead", "sample"];
const MATMULS = new Set(["qkv", "attnOut", "gateUp", "down", "lmHead"]);
if (process.env.KOPITIAM_BENCH_NO_BUILD !== "1") {
  execFileSync("bash", ["scripts/build.sh", "relaxed", "relaxed-threads"], { stdio: "inherit" });
}
execFileSync("bash", ["scripts/prepare-model.sh"], { stdio: ["ignore", "ignore", "inherit"] });
const LONG = Array(10).fill(PROMPT).join("\n\n");

let chromium;
/** Per section: median over runs of ms per token (prefill: per prompt token) and weight bytes. */
function perToken(runs, phase) {
  const tokens = (r) => (phase === "prefill" ? r.prompt : r.generated);
  const row = {};
  for (const s of SECTIONS) {
    row[s] = {
      ms: median(runs.map((r) => r.profile[phase][s].ms / tokens(r))),
      bytes: median(runs.map((r) => r.profile[phase][s].weightBytes / tokens(r))),
      ops: median(runs.map((r) => r.profile[phase][s].ops / tokens(r))),
    };
  }
  row.wall = median(runs.map((r) => r[`${phase}Ms`] / tokens(r)));
  const team = (r) => r.profile[phase].team;
  row.team = {
    jobs: median(runs.map((r) => team(r).jobs / tokens(r))),
    helperShare: median(runs.map((r) => team(r).helperChunks / Math.max(1, team(r).chunks))),
    waitMs: median(runs.map((r) => team(r).waitMs / tokens(r))),
  };
  row.rest = row.wall - SECTIONS.reduce((a, s) => a + row[s].ms, 0);
  return row;
}

const f2 = (x) => x.toFixed(3);
/** The team's parallel loops per token (prefill: per prompt token) for each column. */
const teamLine = (cols) => "Team: " + cols.map(([name, c]) =>
  `${name}: ${c.team.jobs.toFixed(1)} loops a token, helpers ran ${(100 * c.team.helperShare).toFixed(0)} % of the chunks, ` +
  `the leader waited ${f2(c.team.waitMs)} ms a token (${(100 * c.team.waitMs / c.wall).toFixed(1)} %) for the helpers' last chunks`).join("; ") + ".";
const tables = [];
for (const model of MODELS) {
  for (const threads of THREADS) {
    await settle();
    const { runs, ceilings } = await withRepoPage("/www/bench/profile.html", async ({ page }) => {
      chromium = page.context().browser().version();
      await page.waitForFunction(() => globalThis.runProfileBench);
      return page.evaluate(([m, t, s, l, n]) => globalThis.runProfileBench(`/models/${m}.gguf`, t, s, l, n),
        [model, threads, PROMPT, LONG, RUNS]);
    });
    const of = (kind) => runs.filter((r) => r.kind === kind);
    const [ps, pl, ds, dl] = [perToken(of("short"), "prefill"), perToken(of("long"), "prefill"),
      perToken(of("short"), "decode"), perToken(of("long"), "decode")];
    const ceil = (ceilings[0] + ceilings[1]) / 2;
    const lines = SECTIONS.map((s) => {
      const mm = MATMULS.has(s) && s !== "lmHead"; // a prompt's LM head runs on its last row only
      const gops = mm ? (ps[s].ops / ps[s].ms / 1e6).toFixed(1) : "";
      const gbs = MATMULS.has(s) ? ds[s].bytes / ds[s].ms / 1e6 : null;
      return `| ${s} | ${f2(ps[s].ms)} | ${gops} | ${f2(pl[s].ms)} | ${f2(ds[s].ms)} | ${f2(dl[s].ms)} | ` +
        `${(100 * ds[s].ms / ds.wall).toFixed(1)} % | ${gbs ? gbs.toFixed(1) : ""} | ${gbs ? (gbs / ceil).toFixed(2) : ""} |`;
    });
    const layerOps = [...MATMULS].filter((s) => s !== "lmHead");
    const prefillGops = layerOps.reduce((a, s) => a + ps[s].ops, 0) / layerOps.reduce((a, s) => a + ps[s].ms, 0) / 1e6;
    const bytes = SECTIONS.reduce((a, s) => a + ds[s].bytes, 0);
    const gbs = bytes / ds.wall / 1e6;
    tables.push([
      `### ${model}, ${threads} thread(s) (${runs[0].build}), read ceiling ${ceil.toFixed(2)} GB/s ` +
        `(${threads} reader(s), ${ceilings.map((c) => c.toFixed(2)).join(" before, ")} after)`,
      "",
      "| section | prefill ms/tok, 106 | prefill GOP/s, 106 | prefill ms/tok, 1060 | decode ms/tok at ~100 | decode ms/tok at ~1000 | decode share | decode GB/s | of ceiling |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
      ...lines,
      `| not in a section | ${f2(ps.rest)} | | ${f2(pl.rest)} | ${f2(ds.rest)} | ${f2(dl.rest)} | ${(100 * ds.rest / ds.wall).toFixed(1)} % | | |`,
      `| **wall** | ${f2(ps.wall)} | ${prefillGops.toFixed(1)} | ${f2(pl.wall)} | ${f2(ds.wall)} | ${f2(dl.wall)} | | ${gbs.toFixed(1)} | ${(gbs / ceil).toFixed(2)} |`,
      "",
      `Rates: prefill ${(1e3 / ps.wall).toFixed(1)} / ${(1e3 / pl.wall).toFixed(1)} tok/s (long/short ${(ps.wall / pl.wall).toFixed(2)}), ` +
        `decode ${(1e3 / ds.wall).toFixed(1)} / ${(1e3 / dl.wall).toFixed(1)} tok/s (long/short ${(ds.wall / dl.wall).toFixed(2)}); ` +
        `decode reads ${(bytes / 1e6).toFixed(1)} MB of weights a token.`,
      ...(threads > 1 ? ["", teamLine([["prefill, 106", ps], ["prefill, 1060", pl], ["decode at ~100", ds], ["decode at ~1000", dl]])] : []),
    ].join("\n"));
  }
}
const body = [
  "## Where the time goes (section profile)",
  "",
  `\`npm run bench:profile\`, ${new Date().toISOString().slice(0, 10)}: headless Chromium ${chromium}, medians of ${RUNS} run(s) per cell, a fresh engine each,`,
  "64 greedy tokens after the bench:e2e prompt (106 tokens) and after it ten times (1,060). Each",
  "section is the leader thread's wall time (with 2 threads, waiting for the team included), from",
  "`performance.now()` around it (`profile: true`, src/model/profile.rs). *Not in a section*: the",
  "worker's loop, streaming text, the JS ↔ wasm calls. *Prefill GOP/s*: 2 operations per weight and",
  "prompt token over the section's time (on the wall row: the layer matmuls together). *Decode GB/s*: the section's weight bytes",
  "per token over its time; *read ceiling*: a plain SIMD128 read loop over 160 MiB in as many",
  "Workers at once as the engine has threads, on the same page just before and after its runs (the mean).",
  "*Team* (2 threads): the parallel loops the leader ran a token, the share of their chunks the helper ran, and",
  "how long the leader waited at the loops' ends for the helper's last chunk (`profile.team`).",
  "",
  ...tables.flatMap((t) => [t, ""]),
].join("\n").trimEnd();
console.log(body);
writeSection("BENCHMARKS.md", "profile", body);
