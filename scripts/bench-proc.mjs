// Process-level measurements the browser benchmarks share: the PSS of the Chromium renderers
// this node process started (pages and their workers live there), a Chromium with no DevTools
// client for the benchmarks' runs, and small statistics.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHROMIUM, CHROMIUM_ARGS } from "../tests/js/browser.mjs";

/** pid → ppid for every process. */
function parents() {
  const map = new Map();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      map.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // the process exited meanwhile
    }
  }
  return map;
}

/** Renderers descended from `root` (by default this node process: its Chromiums), so no other
 * Chromium counts. */
export function renderers(root = process.pid) {
  const ppid = parents();
  const ours = (pid) => {
    for (let p = ppid.get(pid); p > 1; p = ppid.get(p)) if (p === root) return true;
    return false;
  };
  const out = [];
  for (const pid of ppid.keys()) {
    try {
      if (ours(pid) && readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("--type=renderer")) out.push(pid);
    } catch {
      // exited
    }
  }
  return out;
}

export function rendererPssKiB(root) {
  let sum = 0;
  for (const pid of renderers(root)) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8").match(/^Pss:\s+(\d+)/m)[1]);
    } catch {
      // exited
    }
  }
  return sum;
}

/** Switches Playwright gives Chromium that change how a page runs (a tab never backgrounded or
 * throttled, no field trials), so a bare browser runs pages as the Playwright one does. */
const AS_PLAYWRIGHT = [
  "--disable-field-trial-config",
  "--disable-background-timer-throttling",
  "--disable-backgrounding-occluded-windows",
  "--disable-renderer-backgrounding",
  "--disable-back-forward-cache",
  "--disable-ipc-flooding-protection",
  "--disable-hang-monitor",
  "--disable-breakpad",
  "--disable-extensions",
  "--disable-default-apps",
  "--no-default-browser-check",
  "--metrics-recording-only",
  "--password-store=basic",
];

/** How long a bare browser waits before opening its page (www/bench/start.html). */
const START_MS = 1500;

/**
 * Chromium opened on `url` (an address of the bench server, which serves www/bench/start.html)
 * in a profile of its own with no DevTools client attached, as a user's browser runs: `{ pid,
 * logs, close }`, `logs()` the page's last console lines. The benchmarks' runs use it because
 * Playwright's attachment (it enables Network and Runtime on every page and worker) costs the
 * page memory of its own: in half of 12 two-thread engine loads driven by it, 10–32 MiB of the
 * model file's bytes (consecutive GGUF data, read out of the mapping) sat in the renderer for a
 * few hundred ms around the end of the download, in none of 24 loads without it. Timing is the
 * same either way (a fresh engine's first and second prompt on two threads, medians of 10
 * interleaved runs: 220.7 and 187.8 ms bare, 222.8 and 188.2 driven). Results come back by POST
 * (www/bench/report.js).
 */
export function launchBare(url) {
  const dir = mkdtempSync(join(tmpdir(), "kopitiam-bare-"));
  // The page opens once the browser's start-up is over (0.8–1 s of both cores busy, measured).
  const start = new URL("/www/bench/start.html", url);
  start.search = new URLSearchParams({ next: url, after: START_MS }).toString();
  const args = [...CHROMIUM_ARGS, ...AS_PLAYWRIGHT, "--headless", "--enable-logging=stderr", `--user-data-dir=${dir}`, start.href];
  // A process group of its own, so closing ends its helper processes too.
  const child = spawn(CHROMIUM, args, { stdio: ["ignore", "ignore", "pipe"], detached: true });
  const lines = [];
  // A browser that cannot start ends the run with its reason among the logs, not an uncaught error.
  const exited = new Promise((ok) => {
    child.once("exit", ok);
    child.once("error", (e) => {
      lines.push(`could not start ${CHROMIUM}: ${e.message}`);
      ok();
    });
  });
  let partial = "";
  child.stderr.setEncoding("utf8").on("data", (d) => {
    const parts = (partial + d).split("\n");
    partial = parts.pop();
    lines.push(...parts.filter((l) => l.includes(":CONSOLE")));
    lines.splice(0, Math.max(0, lines.length - 8));
  });
  return {
    pid: child.pid,
    logs: () => lines.slice(),
    async close() {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await exited;
      rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    },
  };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Waits (≤ 5 s) for the renderers of closed contexts to exit, so they don't count next time. */
export async function settle() {
  for (let i = 0; i < 50 && renderers().length > 0; i++) await sleep(100);
  // Then for the machine to go quiet (at most 10 s): a closed page's workers, or the OPFS copy
  // wllama writes, can still hold a core, and on two cores that slows whichever side runs next.
  for (let i = 0; i < 50 && (await busyFraction(200)) > 0.1; i++);
}

/** The fraction of all cores' time spent busy over the next `ms` milliseconds (/proc/stat). */
async function busyFraction(ms) {
  const read = () => {
    const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = f[3] + (f[4] ?? 0); // idle + iowait
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  };
  const a = read();
  await sleep(ms);
  const b = read();
  const total = b.total - a.total;
  return total > 0 ? 1 - (b.idle - a.idle) / total : 0;
}

/** The empty page's renderer PSS (KiB), what the benchmarks subtract: three openings of a blank
 * page of the same origin (`open()` → `{ sample, close }`), five samples each, the median. */
async function emptyPss(open) {
  const blanks = [];
  for (let i = 0; i < 3; i++) {
    await settle();
    const { sample, close } = await open();
    try {
      for (let j = 0; j < 5; j++, await sleep(100)) blanks.push(sample());
    } finally {
      await close();
    }
  }
  return median(blanks);
}

/** [`emptyPss`] in fresh contexts of a Playwright browser, one second after the page loaded. */
export function emptyPagePssKiB(browser, base) {
  return emptyPss(async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/www/bench/blank.html`);
    await sleep(1000);
    return { sample: () => rendererPssKiB(), close: () => context.close() };
  });
}

/** [`emptyPss`] in [`launchBare`] browsers, one second after the blank page opened. */
export function emptyBarePssKiB(base) {
  return emptyPss(async () => {
    const bare = launchBare(`${base}/www/bench/blank.html`);
    for (let j = 0; j < 100 && renderers(bare.pid).length === 0; j++) await sleep(100);
    await sleep(START_MS + 1000);
    return { sample: () => rendererPssKiB(bare.pid), close: () => bare.close() };
  });
}
