// The worker side of js/worker-client.js: answers numbered requests with handlers, reports
// their errors with stable codes, and streams model files into wasm loaders. Messages are those of
// js/protocol.js.
import { codedError, isKopitiamError } from "./errors.js";
import * as protocol from "./protocol.js";

/**
 * Serves `handlers[type](msg, signal)` for each request; requests whose type is in `serial`
 * run one after another (they share state that a yielding handler would otherwise interleave
 * on), the rest at once. A handler's result is posted back (a typed array's buffer transferred).
 */
export function serve(handlers, serial) {
  const controllers = new Map();
  let queue = Promise.resolve();
  const serially = (run) => {
    const next = queue.then(run, run);
    queue = next.catch(() => {});
    return next;
  };
  self.onmessage = async ({ data }) => {
    if (data.type === "abort") {
      controllers.get(data.target)?.abort();
      return;
    }
    const controller = new AbortController();
    controllers.set(data.id, controller);
    try {
      if (!Object.hasOwn(handlers, data.type)) throw codedError("InvalidArgument", `unknown request ${String(data.type)}`);
      const run = () => handlers[data.type](data, controller.signal);
      const result = await (serial.has(data.type) ? serially(run) : run());
      const transfer = ArrayBuffer.isView(result) ? [result.buffer] : [];
      postMessage(protocol.result(data.id, result), transfer);
    } catch (e) {
      // A trap (a Rust panic is a bug) leaves the instance unusable, and an error without a code
      // is a state this worker does not know: either way the page reports it as crashed.
      const known = isKopitiamError(e) && e.code !== "WasmTrap";
      const code = known ? e.code : "WorkerCrashed";
      postMessage(protocol.failure(data.id, code, e?.message ?? String(e)));
    } finally {
      controllers.delete(data.id);
    }
  };
}

/**
 * Streams a `load` request's file into `makeLoader(size)` (a `ModelLoader` / `OcrModelLoader`:
 * wasm memory, one allocation when the size is known), posting download progress, then a
 * "load" progress event. Returns the filled loader, ready for `finish()`; freed on failure.
 */
export async function loadFile(makeLoader, msg, signal) {
  const source = await openSource(msg, signal);
  const loader = makeLoader(source.bytes ? source.bytes.byteLength : source.total);
  try {
    if (source.bytes) {
      loader.push(source.bytes);
      postMessage(protocol.progress(msg.id, "download", source.bytes.byteLength, source.bytes.byteLength));
    } else {
      await readInto(loader, source.stream, source.total, msg.id, signal);
    }
    if (signal.aborted) throw abortError();
  } catch (e) {
    loader.free();
    throw e;
  }
  postMessage(protocol.progress(msg.id, "load", loader.loaded, loader.loaded));
  return loader;
}

const abortError = () => codedError("Aborted", "loading was aborted");

/**
 * Pushes `stream` into `loader`, with progress events at most every 50 ms. An abort ends a read
 * that is still waiting (a stalled download) at once, and a stream that fails part-way is a
 * `NetworkError`: neither may reach `serve` as an uncoded error, which would end the worker.
 */
async function readInto(loader, stream, total, id, signal) {
  const chunks = byobChunks(stream) ?? defaultChunks(stream);
  const aborted = new Promise((_, reject) => signal.addEventListener("abort", () => reject(abortError()), { once: true }));
  aborted.catch(() => {});
  // The first chunk always reports (a worker's clock starts at zero with the worker).
  let last = -Infinity;
  try {
    for (;;) {
      if (signal.aborted) throw abortError();
      const { done, value } = await Promise.race([chunks.next(), aborted]);
      if (done) break;
      loader.push(value);
      const now = performance.now();
      if (now - last > 50) {
        last = now;
        postMessage(protocol.progress(id, "download", loader.loaded, total));
      }
    }
  } catch (e) {
    await chunks.cancel();
    if (signal.aborted) throw abortError();
    throw isKopitiamError(e) ? e : codedError("NetworkError", `the model's bytes stopped after ${loader.loaded} bytes: ${e?.message ?? String(e)}`, e);
  }
  postMessage(protocol.progress(id, "download", loader.loaded, total));
  if (total !== undefined && loader.loaded !== total) {
    throw codedError("TruncatedDownload", `the download ended after ${loader.loaded} of ${total} bytes`);
  }
}

/**
 * A byte stream's chunks through a BYOB reader over two 1 MiB buffers taken in turn (each read
 * hands its buffer back), so a 150 MB download leaves no chunk garbage behind in the worker's
 * heap. `next()` asks for the following chunk before returning one, so a read is pending while
 * the last one's bytes are copied into wasm memory and what arrives meanwhile has a buffer to go
 * to. Single-thread loads of Gemma 3 270M from localhost in Chromium that peaked 6–33 MiB above
 * the steady 189 MiB (anonymous memory outside wasm, gone ~250 ms after loading; the cause is
 * not pinned down): 9 of 41 with one buffer, 2 of 37 so. `null` for streams that are not byte
 * streams.
 */
function byobChunks(stream) {
  let reader;
  try {
    reader = stream.getReader({ mode: "byob" });
  } catch {
    return null;
  }
  // A read that fails surfaces at the next `next()`, or nowhere once the caller has stopped.
  const ask = (buffer) => {
    const read = reader.read(new Uint8Array(buffer));
    read.catch(() => {});
    return read;
  };
  let spare = new ArrayBuffer(1 << 20);
  let pending = ask(new ArrayBuffer(1 << 20));
  return {
    async next() {
      const chunk = await pending;
      if (chunk.done) return chunk;
      // The buffer handed back last time is no longer read from: the caller copied it.
      pending = ask(spare);
      spare = chunk.value.buffer;
      return chunk;
    },
    cancel: () => reader.cancel().catch(() => {}),
  };
}

/** Any stream's chunks through its default reader. */
function defaultChunks(stream) {
  const reader = stream.getReader();
  return { next: () => reader.read(), cancel: () => reader.cancel().catch(() => {}) };
}

/**
 * The bytes of a `load` request as a stream: `{ buffer }` is returned as `{ bytes }`;
 * `{ blob }`, `{ stream, total }` and `{ url, cache }` (fetched, through the Cache API when
 * `cache`) as `{ stream, total }`.
 */
async function openSource(msg, signal) {
  if (msg.buffer) return { bytes: new Uint8Array(msg.buffer) };
  if (msg.blob) return { stream: msg.blob.stream(), total: msg.blob.size };
  if (!msg.url) return { stream: msg.stream, total: msg.total };
  const cache = msg.cache ? await openCache() : null;
  let response = cache ? await cache.match(msg.url).catch(() => undefined) : undefined;
  if (!response) {
    try {
      response = await fetch(msg.url, { signal });
    } catch (e) {
      throw signal.aborted ? abortError() : codedError("NetworkError", `${msg.url}: ${e.message}`);
    }
    if (!response.ok) throw codedError("HttpError", `${msg.url}: HTTP ${response.status} ${response.statusText}`);
    // Stored beside the load, not before it: waiting for the copy would hold the whole file in
    // the other branch of the clone's tee first.
    if (cache) cache.put(msg.url, response.clone()).catch(() => {});
  }
  // No body (a 204 or 205, where the browser gives none; Chromium gives an empty stream): an
  // empty file, which the loader rejects as not GGUF.
  if (!response.body) return { bytes: new Uint8Array(0) };
  return { stream: response.body, total: Number(response.headers.get("content-length")) || undefined };
}

/** The models' Cache API cache, or `null` where there is none to use (an insecure or opaque
 * origin: `caches` missing or refusing): the file then loads uncached. */
async function openCache() {
  try {
    return typeof caches === "undefined" ? null : await caches.open("kopitiam-models");
  } catch {
    return null;
  }
}
