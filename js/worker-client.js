// The page side of a worker-backed object (the LLM engine, the OCR): numbered requests to a
// dedicated Worker and their answers, in the message shapes of js/protocol.js. A worker that
// dies or answers `WorkerCrashed` ends the object: every pending and later call rejects.
import { codedError, describe, invalidArgument } from "./errors.js";

let nextId = 1;

export class WorkerClient {
  /** `what` names the object in crash messages ("engine", "OCR"). */
  constructor(worker, what) {
    this.worker = worker;
    this.pending = new Map();
    this.dead = null;
    worker.onmessage = ({ data }) => this.#receive(data);
    worker.onerror = (e) => {
      e.preventDefault?.();
      this.#crash(codedError("WorkerCrashed", `the ${what} worker crashed: ${e.message ?? "unknown error"}`));
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

  /** Hands a `tokens` message's pieces to `onEvent` one by one; a callback that throws is
   * reported (as an uncaught error) without costing the pieces after it. */
  #each(pieces, onEvent) {
    for (const piece of pieces) {
      try {
        onEvent?.(piece);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  /** One message of js/protocol.js from the worker. */
  #receive(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    if (msg.kind === "progress") return p.onEvent?.({ phase: msg.phase, loaded: msg.loaded, total: msg.total });
    if (msg.kind === "tokens") return this.#each(msg.pieces, p.onEvent);
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

  /** Asks the worker to free what it holds, then stops it; later calls reject with `code`. */
  async close(code, message) {
    if (this.dead) return;
    try {
      await this.call("dispose");
    } catch {
      // the worker is going away either way
    }
    this.#crash(codedError(code, message));
  }
}

/**
 * A model source (URL string | URL | Response | ArrayBuffer | typed array | Blob |
 * ReadableStream) as the `load` request's payload and its transfer list. Bytes are copied
 * (a view's buffer may hold more than the view); buffers and streams are transferred.
 */
export function sourcePayload(op, source, cache) {
  if (typeof source === "string" || source instanceof URL) {
    let url;
    try {
      url = new URL(source, globalThis.location?.href).href;
    } catch (e) {
      throw invalidArgument(op, `${describe(String(source))} is not a URL`, e);
    }
    return { payload: { url, cache }, transfer: [] };
  }
  if (typeof Response !== "undefined" && source instanceof Response) {
    if (!source.ok) throw codedError("HttpError", `HTTP ${source.status} ${source.statusText}`);
    // A bodiless Response (`new Response(null)`, a 204) is an empty file: the worker says it is
    // not GGUF. (Its `null` body would fail the transfer list.)
    if (!source.body) return { payload: { buffer: new ArrayBuffer(0) }, transfer: [] };
    const total = Number(source.headers.get("content-length")) || undefined;
    return { payload: { stream: source.body, total }, transfer: [source.body] };
  }
  if (source instanceof ArrayBuffer) return { payload: { buffer: source }, transfer: [source] };
  if (ArrayBuffer.isView(source)) {
    const copy = new Uint8Array(source.buffer, source.byteOffset, source.byteLength).slice();
    return { payload: { buffer: copy.buffer }, transfer: [copy.buffer] };
  }
  if (typeof Blob !== "undefined" && source instanceof Blob) return { payload: { blob: source }, transfer: [] };
  if (typeof ReadableStream !== "undefined" && source instanceof ReadableStream) {
    return { payload: { stream: source }, transfer: [source] };
  }
  throw invalidArgument(op, `source must be a URL, Response, ArrayBuffer, Uint8Array, Blob or ReadableStream, got ${describe(source)}`);
}
