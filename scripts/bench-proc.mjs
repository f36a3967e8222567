// Process-level measurements the browser benchmarks share: the PSS of the Chromium renderers
// this node process started (pages and their workers live there), a Chromium with no DevTools
// client for the memory runs, and small statistics.
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

/**
 * Chromium opened on `url` in a profile of its own with no DevTools client attached, as a user's
 * browser runs: `{ pid, close }`. The memory runs use it because Playwright's attachment costs
 * renderer memory of its own: in half of 12 two-thread engine loads driven by it, 10–32 MiB of
 * the model file's bytes (consecutive GGUF data, read out of the mapping) sat in the renderer for
 * a few hundred ms around the end of the download; in none of 24 loads without it. Its results
 * come back by POST (www/bench/report.js).
 */
export function launchBare(url) {
  const dir = mkdtempSync(join(tmpdir(), "kopitiam-bare-"));
  // A process group of its own, so closing ends its helper processes too.
  const args = [...CHROMIUM_ARGS, "--headless", `--user-data-dir=${dir}`, url];
  const child = spawn(CHROMIUM, args, { stdio: "ignore", detached: true });
  const exited = new Promise((ok) => child.once("exit", ok));
  return {
    pid: child.pid,
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


/** The empty page's renderer PSS (KiB) in a Playwright browser: a blank page of the same origin,
 * three fresh contexts, five samples each, the median — what the benchmarks subtract. */
export async function emptyPagePssKiB(browser, base) {
  const blanks = [];
  for (let i = 0; i < 3; i++) {
    await settle();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/www/bench/blank.html`);
    await sleep(1000);
    for (let j = 0; j < 5; j++, await sleep(100)) blanks.push(rendererPssKiB());
    await context.close();
  }
  return median(blanks);
}

/** [`emptyPagePssKiB`] for [`launchBare`] browsers: three launches on the blank page, five
 * samples each from one second after its renderer appears, the median. */
export async function emptyBarePssKiB(base) {
  const blanks = [];
  for (let i = 0; i < 3; i++) {
    await settle();
    const browser = launchBare(`${base}/www/bench/blank.html`);
    try {
      for (let j = 0; j < 100 && renderers(browser.pid).length === 0; j++) await sleep(100);
      await sleep(1000);
      for (let j = 0; j < 5; j++, await sleep(100)) blanks.push(rendererPssKiB(browser.pid));
    } finally {
      await browser.close();
    }
  }
  return median(blanks);
}
