// Headless Debian Chromium driven by playwright-core (no browser download): the flags a closed
// network and a root user need.
import { chromium } from "playwright-core";

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-quic",
  "--no-first-run",
  "--enable-features=WebAssemblyRelaxedSimd",
];

/** The Chromium binary (`CHROMIUM` overrides Debian's). */
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
}

/**
 * Serves the repo (as `npm start` does), opens `path` in a new headless Chromium and hands
 * `{ page, errors }` (uncaught page errors) to `body`; closes both afterwards.
 */
export async function withRepoPage(path, body) {
  const { serve } = await import("../../scripts/serve.mjs");
  const server = await serve(0);
  const browser = await launch();
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`http://127.0.0.1:${server.address().port}${path}`);
    return await body({ page, errors });
  } finally {
    await browser.close();
    server.close();
  }
}
