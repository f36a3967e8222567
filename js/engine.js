// The engine: a model running in a dedicated Worker, so the page never blocks.
//
//   const engine = await createEngine({ threads: "auto", build: "auto" });
//   await engine.loadModel(url, { onProgress, signal });
//   for await (const piece of engine.generate("Once upon a time", { maxTokens: 64 })) ...
//
// Every call is a message to the worker; errors come back as `Error`s with a stable `code`.
// Arguments are checked here, before anything is posted, with the same rules as the low-level
// API (js/args.js), so a bad call rejects with `InvalidArgument` and the worker never sees it.
import * as check from "./args.js";
import { describe, invalidArgument } from "./errors.js";
import { WorkerClient, sourcePayload } from "./worker-client.js";

const stopStrings = (op, name, v) => {
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || !list.every((x) => typeof x === "string")) {
    throw invalidArgument(op, `${name} must be a string or an array of strings, got ${describe(v)}`);
  }
  return list;
};
const contextLength = (op, name, v) => check.integer(op, name, v, 1);
const { isFunction, isSignal } = check;
const GENERATE = Object.freeze({
  ...check.SAMPLING,
  maxTokens: (op, name, v) => check.integer(op, name, v),
  stop: stopStrings,
  contextLength,
  /** false: evaluate the whole prompt (the cached context is dropped first). */
  cache: check.optionalBool,
  /** true: `stats.profile` gets the milliseconds per section of the pass (`profileStart`). */
  profile: check.optionalBool,
  signal: isSignal,
});
const STREAMING = Object.freeze({ ...GENERATE, onToken: isFunction });
/** `chat` also takes the template switch Qwen 3 reads (false: answer without reasoning) and
 * `contextShift` (drop the oldest turns when the conversation no longer fits). */
const CHAT = Object.freeze({ ...STREAMING, enableThinking: check.optionalBool, contextShift: check.optionalBool });
const LOAD = Object.freeze({ onProgress: isFunction, signal: isSignal, cache: check.optionalBool, contextLength });
const TOKENIZE = Object.freeze({ addSpecial: check.optionalBool, parseSpecial: check.optionalBool });
const CREATE = Object.freeze({
  threads: check.threads,
  build: check.string,
  workerUrl: check.workerUrl,
});


class Engine extends WorkerClient {
  constructor(worker) {
    super(worker, "engine");
    this.info = null;
  }

  /**
   * Loads a GGUF model from a URL string | URL | Response | ArrayBuffer | Uint8Array | Blob |
   * ReadableStream. The bytes stream into wasm memory in the worker; the page never holds the
   * model. Resolves to `engine.info`.
   */
  async loadModel(source, options) {
    const { onProgress, signal, cache = false, contextLength } = check.options("loadModel", options, LOAD) ?? {};
    const { payload, transfer } = sourcePayload("loadModel", source, cache);
    const info = await this.call("load", { ...payload, contextLength }, { transfer, signal, onEvent: (e) => onProgress?.(e) });
    this.info = { ...this.info, ...info };
    return this.info;
  }

  /** Token ids of `text` (BOS added and special tokens parsed by default). */
  async tokenize(text, options) {
    check.string("tokenize", "text", text);
    const { addSpecial = true, parseSpecial = true } = check.options("tokenize", options, TOKENIZE) ?? {};
    return this.call("tokenize", { text, addSpecial, parseSpecial });
  }

  async detokenize(ids) {
    return this.call("detokenize", { ids: Array.from(check.u32List("detokenize", "ids", ids)) });
  }

  /** Streams `{ text, token }` pieces; ends at EOG, `maxTokens`, a stop string, or `signal`. */
  async *generate(prompt, options) {
    check.string("generate", "prompt", prompt);
    const { signal, ...opts } = check.options("generate", options, GENERATE) ?? {};
    const queue = [];
    let wake = null;
    let done = false;
    let failure = null;
    const finished = this.call("generate", { prompt, opts }, {
      signal,
      onEvent: (e) => {
        queue.push(e);
        wake?.();
      },
    }).then(
      (r) => { done = r; wake?.(); },
      (e) => { failure = e; wake?.(); },
    );
    for (;;) {
      while (queue.length) yield queue.shift();
      if (failure) throw failure;
      if (done) break;
      await new Promise((r) => (wake = r));
      wake = null;
    }
    await finished;
  }

  /** Generates to the end; resolves to `{ text, tokens, stats, stopped }`. The prompt's longest
   * prefix already in the worker's KV cache (earlier prompts and replies) is not evaluated
   * again: `stats.cachedTokens` says how many tokens that was. */
  async complete(prompt, options) {
    check.string("complete", "prompt", prompt);
    const { signal, onToken, ...opts } = check.options("complete", options, STREAMING) ?? {};
    return this.call("generate", { prompt, opts }, { signal, onEvent: onToken });
  }

  /** `complete` over the model's own chat template (`[{ role, content }]`; the built-in Gemma
   * format for a file without one), with exactly one BOS. */
  async chat(messages, options) {
    const list = check.messages("chat", "messages", messages);
    const { signal, onToken, ...opts } = check.options("chat", options, CHAT) ?? {};
    return this.call("generate", { messages: list, opts }, { signal, onEvent: onToken });
  }

  /** Forgets the cached context: the next request evaluates its whole prompt. */
  async resetContext() {
    await this.call("resetContext");
  }

  /** The cached context (tokens and KV of the used positions) as bytes, for `loadSession`. */
  async saveSession() {
    return this.call("saveSession");
  }

  /** Restores `saveSession()` bytes into the cache; resolves to `{ tokens }` (positions held).
   * `InvalidSession` for damaged bytes, `SessionMismatch` for another model or a smaller context. */
  async loadSession(bytes) {
    const copy = check.bytes("loadSession", "bytes", bytes).slice();
    return this.call("loadSession", { bytes: copy }, { transfer: [copy.buffer] });
  }

  /** Float32Array of the last position's logits for `ids`. */
  async logits(ids) {
    return this.call("logits", { ids: Array.from(check.u32List("logits", "ids", ids)) });
  }

  /** Frees the model and stops the worker. */
  async dispose() {
    await this.close("EngineDisposed", "the engine was disposed");
  }
}

/**
 * Starts an engine in a dedicated Worker.
 * @param {{ threads?: number | "auto", build?: "auto" | "simd" | "relaxed" | "threads" | "relaxed-threads", workerUrl?: string | URL }} [options]
 */
export async function createEngine(options) {
  const { threads = "auto", build = "auto", workerUrl } = check.options("createEngine", options, CREATE) ?? {};
  // Written out literally so bundlers (Vite, webpack) recognise the worker and bundle it.
  const worker = workerUrl
    ? new Worker(workerUrl, { type: "module" })
    : new Worker(new URL("./engine-worker.js", import.meta.url), { type: "module" });
  const engine = new Engine(worker);
  try {
    engine.info = await engine.call("init", { threads, build });
  } catch (e) {
    worker.terminate();
    throw e;
  }
  return engine;
}
