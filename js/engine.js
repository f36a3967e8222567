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
import { codedError, describe, invalidArgument } from "./errors.js";

let nextId = 1;

const isFunction = (op, name, v) => {
  if (typeof v !== "function") throw invalidArgument(op, `${name} must be a function, got ${describe(v)}`);
  return v;
};
const isSignal = (op, name, v) => {
  if (typeof AbortSignal === "undefined" || !(v instanceof AbortSignal)) {
    throw invalidArgument(op, `${name} must be an AbortSignal, got ${describe(v)}`);
  }
  return v;
};
const stopStrings = (op, name, v) => {
  const list = typeof v === "string" ? [v] : v;
  if (!Array.isArray(list) || !list.every((x) => typeof x === "string")) {
    throw invalidArgument(op, `${name} must be a string or an array of strings, got ${describe(v)}`);
  }
  return list;
};
const contextLength = (op, name, v) => check.integer(op, name, v, 1);
const GENERATE = Object.freeze({
  ...check.SAMPLING,
  maxTokens: (op, name, v) => check.integer(op, name, v),
  stop: stopStrings,
  contextLength,
  /** false: evaluate the whole prompt (the cached context is dropped first). */
  cache: check.optionalBool,
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
  workerUrl: (op, name, v) => {
    if (typeof v !== "string" && !(v instanceof URL)) throw invalidArgument(op, `${name} must be a string or URL, got ${describe(v)}`);
    return v;
  },
});


class Engine {
  constructor(worker) {
    this.worker = worker;
    this.pending = new Map();
    this.info = null;
    this.dead = null;
    worker.onmessage = ({ data }) => this.#receive(data);
    worker.onerror = (e) => {
      e.preventDefault?.();
      this.#crash(codedError("WorkerCrashed", `the engine worker crashed: ${e.message ?? "unknown error"}`));
    };
    worker.onmessageerror = () => this.#crash(codedError("WorkerCrashed", "a message could not be decoded"));
  }

  #crash(error) {
    if (this.dead) return;
    this.dead = error;
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
    this.worker.terminate();
  }

  /** One message of js/protocol.js from the worker. */
  #receive(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.kind === "progress") return p.onEvent?.({ phase: msg.phase, loaded: msg.loaded, total: msg.total });
    if (msg.kind === "token") return p.onEvent?.({ text: msg.text, token: msg.token });
    this.pending.delete(msg.id);
    if (msg.kind === "result") p.resolve(msg.result);
    else if (msg.error.code === "WorkerCrashed") {
      p.reject(codedError("WorkerCrashed", msg.error.message));
      this.#crash(codedError("WorkerCrashed", msg.error.message));
    }
    else p.reject(codedError(msg.error.code, msg.error.message));
  }

  /** Sends one request; `onEvent` receives progress/token events; `signal` aborts it. */
  call(type, payload = {}, { transfer = [], onEvent, signal } = {}) {
    if (this.dead) return Promise.reject(this.dead);
    if (signal?.aborted) return Promise.reject(codedError("Aborted", "aborted before it started"));
    const id = nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onEvent });
      signal?.addEventListener("abort", () => this.worker.postMessage({ type: "abort", target: id }), { once: true });
      this.worker.postMessage({ id, type, ...payload }, transfer);
    });
  }

  /**
   * Loads a GGUF model from a URL string | URL | Response | ArrayBuffer | Uint8Array | Blob |
   * ReadableStream. The bytes stream into wasm memory in the worker; the page never holds the
   * model. Resolves to `engine.info`.
   */
  async loadModel(source, options) {
    const { onProgress, signal, cache = false, contextLength } = check.options("loadModel", options, LOAD) ?? {};
    let payload;
    const transfer = [];
    if (typeof source === "string" || source instanceof URL) {
      let url;
      try {
        url = new URL(source, globalThis.location?.href).href;
      } catch (e) {
        throw invalidArgument("loadModel", `${describe(String(source))} is not a URL`, e);
      }
      payload = { url, cache };
    } else if (typeof Response !== "undefined" && source instanceof Response) {
      if (!source.ok) throw codedError("HttpError", `HTTP ${source.status} ${source.statusText}`);
      payload = { stream: source.body, total: Number(source.headers.get("content-length")) || undefined };
      transfer.push(source.body);
    } else if (source instanceof ArrayBuffer) {
      payload = { buffer: source };
      transfer.push(source);
    } else if (ArrayBuffer.isView(source)) {
      const copy = source.slice();
      payload = { buffer: copy.buffer };
      transfer.push(copy.buffer);
    } else if (typeof Blob !== "undefined" && source instanceof Blob) {
      payload = { blob: source };
    } else if (typeof ReadableStream !== "undefined" && source instanceof ReadableStream) {
      payload = { stream: source };
      transfer.push(source);
    } else {
      throw invalidArgument("loadModel", `source must be a URL, Response, ArrayBuffer, Uint8Array, Blob or ReadableStream, got ${describe(source)}`);
    }
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
    if (!this.dead) {
      try {
        await this.call("dispose");
      } catch {
        // the worker is going away either way
      }
      this.#crash(codedError("EngineDisposed", "the engine was disposed"));
    }
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
