// Process-level measurements the browser benchmarks share: the PSS of the Chromium renderers
// this node process started (pages and their workers live there), and small statistics.
import { readFileSync, readdirSync } from "node:fs";

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

/** Renderers descended from this node process (its Chromium), so no other Chromium counts. */
export function renderers() {
  const ppid = parents();
  const ours = (pid) => {
    for (let p = ppid.get(pid); p > 1; p = ppid.get(p)) if (p === process.pid) return true;
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

export function rendererPssKiB() {
  let sum = 0;
  for (const pid of renderers()) {
    try {
      sum += Number(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8").match(/^Pss:\s+(\d+)/m)[1]);
    } catch {
      // exited
    }
  }
  return sum;
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


/** The empty page's renderer PSS (KiB): a blank page of the same origin, three fresh contexts,
 * five samples each, the median — what the benchmarks subtract. */
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
