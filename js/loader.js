// Picks and loads the best kopitiam-wasm build for the environment it runs in:
//   relaxed-threads — relaxed SIMD + Web Worker pool (wasm-bindgen-rayon); only inside a Worker
//                     of a crossOriginIsolated page (rayon blocks, which a page's main thread
//                     may not do), where WebAssembly.validate accepts a relaxed op
//   threads         — the same with plain SIMD128
//   relaxed         — relaxed-SIMD dot products, one thread
//   simd            — SIMD128, one thread: the default that runs everywhere
//   ocr, ocr-relaxed — the OCR's own single-thread builds (no LLM half: a quarter of the code),
//                     which createOcr() picks
// `build` overrides the choice; `threads` is the pool size ("auto" = hardwareConcurrency); with
// `threads: 1` the automatic choice is a single-thread build (no atomics, no pool to start).

import { bind } from "./api.js";
import * as check from "./args.js";
import { codedError } from "./errors.js";

/** A minimal module whose one function executes i32x4.relaxed_dot_i8x16_i7x16_add_s. */
const RELAXED_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type: () -> v128
  0x03, 0x02, 0x01, 0x00, // one function of type 0
  0x0a, 0x3d, 0x01, 0x3b, 0x00, // code: one body of 59 bytes, no locals
  ...[0, 1, 2].flatMap(() => [0xfd, 0x0c, ...new Array(16).fill(0)]), // 3 × v128.const 0
  0xfd, 0x93, 0x02, // i32x4.relaxed_dot_i8x16_i7x16_add_s
  0x0b, // end
]);

export function relaxedSimdSupported() {
  try {
    return WebAssembly.validate(RELAXED_PROBE);
  } catch {
    return false;
  }
}

export function threadsSupported() {
  const inWorker =
    typeof WorkerGlobalScope !== "undefined" && globalThis instanceof WorkerGlobalScope;
  return inWorker && globalThis.crossOriginIsolated === true && typeof SharedArrayBuffer === "function";
}

const BUILDS = {
  simd: () => import("../pkg/kopitiam_wasm.js"),
  relaxed: () => import("../pkg-relaxed/kopitiam_wasm.js"),
  threads: () => import("../pkg-threads/kopitiam_wasm.js"),
  "relaxed-threads": () => import("../pkg-relaxed-threads/kopitiam_wasm.js"),
  ocr: () => import("../pkg-ocr/kopitiam_wasm.js"),
  "ocr-relaxed": () => import("../pkg-ocr-relaxed/kopitiam_wasm.js"),
};

const THREADED = new Set(["threads", "relaxed-threads"]);

/** The build `auto` resolves to here (for a pool of `threads`, if given). */
export function pickBuild(threads = "auto") {
  check.threads("pickBuild", "threads", threads);
  const relaxed = relaxedSimdSupported();
  if (threads !== 1 && threadsSupported()) return relaxed ? "relaxed-threads" : "threads";
  return relaxed ? "relaxed" : "simd";
}

/** `threads` as a pool size ("auto" = the hardware's). */
function threadCount(threads) {
  const n = check.threads("loadKopitiam", "threads", threads);
  return n === "auto" ? Math.max(1, globalThis.navigator?.hardwareConcurrency || 1) : n;
}

/**
 * Loads and initialises a build. Resolves to `{ build, threads, module, memory }` where `module`
 * is the public API over that build (Tensor, Model, buildInfo, … as exported by the package) and
 * `memory` its WebAssembly.Memory.
 * @param {{ build?: "auto" | "simd" | "relaxed" | "threads" | "relaxed-threads" | "ocr" | "ocr-relaxed", threads?: number | "auto", wasm?: any }} [options]
 */
export async function loadKopitiam({ build = "auto", threads = "auto", wasm } = {}) {
  const n = threadCount(threads);
  const chosen = build === "auto" ? pickBuild(threads) : build;
  if (!Object.hasOwn(BUILDS, chosen)) {
    throw codedError("InvalidArgument", `unknown build ${String(build)} (known: auto, ${Object.keys(BUILDS).join(", ")})`);
  }
  if (THREADED.has(chosen) && !threadsSupported()) {
    throw codedError("UnsupportedEnvironment", "the threads build needs a Worker in a crossOriginIsolated page (COOP/COEP)");
  }
  const module = bind(await BUILDS[chosen]());
  const exports = await module.default(wasm === undefined ? undefined : { module_or_path: wasm });
  // n threads: this one and n − 1 pool Workers (each Worker is an isolate of its own).
  if (THREADED.has(chosen)) await module.startThreads(n);
  return { build: chosen, threads: THREADED.has(chosen) ? n : 1, module, memory: exports.memory };
}
