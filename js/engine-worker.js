// The engine's worker: owns the wasm instance, the model and its session.
import { loadKopitiam } from "./loader.js";
import { codedError, isKopitiamError } from "./errors.js";

let kw = null;
let env = null;
let model = null;
const controllers = new Map();

/** A macrotask yield (faster than setTimeout) so abort messages get through between tokens. */
function yieldToEvents() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = resolve;
    ch.port2.postMessage(0);
  });
}

function modelInfo() {
  return { ...model.info, build: kw.buildInfo(), threads: env.threads, memoryBytes: env.memory.buffer.byteLength };
}

async function readInto(loader, stream, total, id, signal) {
  // A BYOB reader fills one 1 MiB buffer over and over (each read hands the same memory back),
  // so a 150 MB download leaves no chunk garbage behind in the worker's heap; the bytes go
  // straight on into wasm memory. Streams that are not byte streams get the default reader.
  let reader;
  let scratch = null;
  try {
    reader = stream.getReader({ mode: "byob" });
    scratch = new ArrayBuffer(1 << 20);
  } catch {
    reader = stream.getReader();
  }
  let loaded = 0;
  let last = 0;
  for (;;) {
    if (signal.aborted) {
      await reader.cancel().catch(() => {});
      throw codedError("Aborted", "loading was aborted");
    }
    const { done, value } = scratch ? await reader.read(new Uint8Array(scratch)) : await reader.read();
    if (done) break;
    loader.push(value);
    if (scratch) scratch = value.buffer;
    loaded += value.byteLength;
    const now = performance.now();
    if (now - last > 50) {
      last = now;
      postMessage({ id, event: { phase: "download", loaded, total } });
    }
  }
  postMessage({ id, event: { phase: "download", loaded, total } });
  if (total !== undefined && loaded !== total) {
    throw codedError("TruncatedDownload", `the download ended after ${loaded} of ${total} bytes`);
  }
  return loaded;
}

const handlers = {
  async init({ threads, build }) {
    env = await loadKopitiam({ threads, build });
    kw = env.module;
    return { build: kw.buildInfo(), threads: env.threads };
  },

  async load(msg, signal) {
    model?.free();
    model = null;
    let loader;
    let total = msg.total;
    if (msg.buffer) {
      loader = new kw.ModelLoader(msg.buffer.byteLength);
      loader.push(new Uint8Array(msg.buffer));
      postMessage({ id: msg.id, event: { phase: "download", loaded: msg.buffer.byteLength, total: msg.buffer.byteLength } });
    } else {
      let stream = msg.stream;
      if (msg.blob) {
        stream = msg.blob.stream();
        total = msg.blob.size;
      } else if (msg.url) {
        let response = null;
        const cache = msg.cache && typeof caches !== "undefined" ? await caches.open("kopitiam-models") : null;
        if (cache) response = await cache.match(msg.url);
        if (!response) {
          try {
            response = await fetch(msg.url, { signal });
          } catch (e) {
            throw signal.aborted ? codedError("Aborted", "the download was aborted") : codedError("NetworkError", `${msg.url}: ${e.message}`);
          }
          if (!response.ok) throw codedError("HttpError", `${msg.url}: HTTP ${response.status} ${response.statusText}`);
          if (cache) {
            await cache.put(msg.url, response.clone()).catch(() => {});
          }
        }
        total = Number(response.headers.get("content-length")) || undefined;
        stream = response.body;
      }
      loader = new kw.ModelLoader(total);
      try {
        await readInto(loader, stream, total, msg.id, signal);
      } catch (e) {
        loader.free();
        throw e;
      }
    }
    postMessage({ id: msg.id, event: { phase: "load", loaded: loader.loaded, total: loader.loaded } });
    if (signal.aborted) {
      loader.free();
      throw codedError("Aborted", "loading was aborted");
    }
    model = loader.finish();
    return modelInfo();
  },

  tokenize({ text, addSpecial, parseSpecial }) {
    requireModel();
    return Array.from(model.tokenize(text, addSpecial, parseSpecial));
  },

  detokenize({ ids }) {
    requireModel();
    return model.detokenize(Uint32Array.from(ids));
  },

  async generate(msg, signal) {
    requireModel();
    // The page checked every option (js/engine.js); what is not the loop's is the sampler's.
    const { maxTokens = 128, stop = [], contextLength, enableThinking, ...sampling } = msg.opts ?? {};
    const ids = msg.messages
      ? model.chatTokens(msg.messages, enableThinking)
      : model.tokenize(msg.prompt, true, true);
    const context = Math.min(model.info.contextLength, contextLength ?? ids.length + maxTokens);
    if (ids.length + 1 > context) {
      throw codedError("ContextFull", `the prompt has ${ids.length} tokens; the context holds ${context}`);
    }
    const session = model.createSession(context);
    try {
      const t0 = performance.now();
      session.prefill(ids, sampling);
      const t1 = performance.now();
      const tokens = [];
      let text = "";
      let stopped = false;
      while (tokens.length < maxTokens && session.position < session.capacity) {
        await yieldToEvents();
        if (signal.aborted) {
          stopped = true;
          break;
        }
        const step = session.step();
        if (step.eog) break;
        tokens.push(step.token);
        text += step.text;
        const hit = stop.find((s) => s && text.includes(s));
        if (hit) {
          text = text.slice(0, text.indexOf(hit));
          break;
        }
        postMessage({ id: msg.id, event: { token: step.token, text: step.text } });
      }
      text += session.flush();
      const t2 = performance.now();
      const stats = {
        promptTokens: ids.length,
        prefillMs: t1 - t0,
        generatedTokens: tokens.length,
        decodeMs: t2 - t1,
        prefillTokensPerSecond: ids.length / ((t1 - t0) / 1e3),
        decodeTokensPerSecond: tokens.length / ((t2 - t1) / 1e3),
      };
      stats.memoryBytes = env.memory.buffer.byteLength;
      return { text, tokens, stats, stopped };
    } finally {
      session.free();
    }
  },

  logits({ ids }) {
    requireModel();
    // Too many ids fail in eval with ContextFull, as for a generation.
    const session = model.createSession(Math.max(1, Math.min(ids.length, model.info.contextLength)));
    try {
      return session.eval(Uint32Array.from(ids));
    } finally {
      session.free();
    }
  },

  dispose() {
    model?.free();
    model = null;
    return true;
  },
};

function requireModel() {
  if (!model) throw codedError("NoModel", "no model is loaded: call loadModel first");
}

self.onmessage = async ({ data }) => {
  if (data.type === "abort") {
    controllers.get(data.target)?.abort();
    return;
  }
  const controller = new AbortController();
  controllers.set(data.id, controller);
  try {
    if (!Object.hasOwn(handlers, data.type)) throw codedError("InvalidArgument", `unknown request ${String(data.type)}`);
    const result = await handlers[data.type](data, controller.signal);
    const transfer = result instanceof Float32Array ? [result.buffer] : [];
    postMessage({ id: data.id, ok: true, result }, transfer);
  } catch (e) {
    // A trap (a Rust panic is a bug) leaves the instance unusable, and an error without a code
    // is a state this worker does not know: either way the engine reports it as crashed.
    const known = isKopitiamError(e) && e.code !== "WasmTrap";
    const code = known ? e.code : "WorkerCrashed";
    postMessage({ id: data.id, ok: false, error: { code, message: e?.message ?? String(e) } });
  } finally {
    controllers.delete(data.id);
  }
};
