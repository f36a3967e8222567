// `npm run bench:profile` (scripts/bench-profile.mjs) runs this in headless Chromium: our engine
// on a short and a long prompt with the section profile on (`profile: true`), fresh engine per
// run, between two measurements of the read ceiling for as many readers as threads.
import { once } from "./long.js";
import { readCeilingGBs } from "./read-ceiling.js";

/** The runs, and the read ceiling for `threads` readers measured before and after them. */
globalThis.runProfileBench = async (model, threads, short, long, runs) => {
  const out = [];
  const ceilings = [await readCeilingGBs(threads)];
  for (let i = 0; i < runs; i++) {
    out.push({ kind: "short", ...(await once(model, threads, short, true)) });
    out.push({ kind: "long", ...(await once(model, threads, long, true)) });
  }
  ceilings.push(await readCeilingGBs(threads));
  return { runs: out, ceilings };
};
