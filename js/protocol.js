// The workers' protocol: every message between the page (js/engine.js, js/ocr.js, over
// js/worker-client.js) and their workers (js/engine-worker.js, js/ocr-worker.js, over
// js/worker-host.js), in one place.
//
// Page → worker
//   { id, type, ...payload }         a request; `type` is a key of REQUESTS, `payload` its fields
//   { type: "abort", target: id }    abort request `id` (a load or a generation); no reply
//
// Worker → page, for request `id`, any number of events and then exactly one answer:
//   { id, kind: "progress", phase: "download" | "load", loaded, total }   during `load`
//   { id, kind: "tokens", pieces: [{ token, text }, …] }                 during `generate`: the
//                                     first token alone, then what came in each ~16 ms (FLUSH_MS)
//   { id, kind: "result", result }                                       the answer
//   { id, kind: "error", error: { code, message } }                      or the failure
//
// Errors carry the stable codes of `errorCodes()`; a worker that meets an error without a code
// (a bug) or a wasm trap answers `WorkerCrashed`, and the page then ends the engine.

/** The requests, with what each carries and answers. */
export const REQUESTS = Object.freeze({
  /** `{ threads, build }` → `{ build, threads }`: instantiates the wasm. */
  init: "init",
  /** `{ url, cache } | { buffer } | { blob } | { stream, total }` plus `contextLength` →
   * model info. Emits progress events. */
  load: "load",
  /** `{ text, addSpecial, parseSpecial }` → `number[]`. */
  tokenize: "tokenize",
  /** `{ ids }` → `string`. */
  detokenize: "detokenize",
  /** `{ prompt } | { messages }` plus `opts` → `{ text, tokens, stats, stopped }`. Emits token
   * events. Reuses the worker's KV cache: only the part of the prompt the cache does not hold
   * is evaluated. */
  generate: "generate",
  /** `{ ids }` → `Float32Array` (last-position logits, in a session of its own). */
  logits: "logits",
  /** `{}` → `true`: forgets the cached context. */
  resetContext: "resetContext",
  /** `{}` → `Uint8Array`: the cached context as bytes. */
  saveSession: "saveSession",
  /** `{ bytes }` → `{ tokens }`: restores a saved context. */
  loadSession: "loadSession",
  /** `{}` → `true`: frees the model (the page then terminates the worker). */
  dispose: "dispose",
});

/** The OCR worker's requests (same envelopes, events and errors as the engine's). */
export const OCR_REQUESTS = Object.freeze({
  /** `{ build }` → `{ build }`: instantiates a single-thread wasm. */
  init: "init",
  /** `{ url, cache } | { buffer } | { blob } | { stream, total }` → `{ spec, inputHeight,
   * characters, build, memoryBytes }` (a `.traineddata`). Emits progress events. */
  load: "load",
  /** `{ width, height, data }` (RGBA or grey bytes) | `{ blob }` (an encoded image) |
   * `{ bitmap }` (a transferred ImageBitmap) → `OcrLine`. */
  recognizeLine: "recognizeLine",
  /** The same images → `OcrPage`. */
  recognize: "recognize",
  /** `{}` → `true`: frees the model (the page then terminates the worker). */
  dispose: "dispose",
});

/** How long the worker gathers tokens into one `tokens` event: a frame at 60 Hz, so a page
 * that draws each event draws each frame at most once, while a message and a yield to the
 * worker's events a token cost ~0.06 ms of each two-thread token (section profile). */
export const FLUSH_MS = 16;

export const progress = (id, phase, loaded, total) => ({ id, kind: "progress", phase, loaded, total });
export const tokens = (id, pieces) => ({ id, kind: "tokens", pieces });
export const result = (id, value) => ({ id, kind: "result", result: value });
export const failure = (id, code, message) => ({ id, kind: "error", error: { code, message } });
