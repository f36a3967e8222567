// The OCR's worker: owns a single-thread wasm instance and the loaded OcrModel. Messages are
// those of js/protocol.js (the `OCR_REQUESTS`).
import { codedError } from "./errors.js";
import { loadKopitiam } from "./loader.js";
import * as protocol from "./protocol.js";
import { openSource, serve } from "./worker-host.js";

let kw = null;
let env = null;
let model = null;

/** The whole stream, with download progress events. */
async function readAll(stream, total, id, signal) {
  const chunks = [];
  let loaded = 0;
  const reader = stream.getReader();
  for (;;) {
    if (signal.aborted) {
      await reader.cancel().catch(() => {});
      throw codedError("Aborted", "loading was aborted");
    }
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.byteLength;
    postMessage(protocol.progress(id, "download", loaded, total));
  }
  if (total !== undefined && loaded !== total) {
    throw codedError("TruncatedDownload", `the download ended after ${loaded} of ${total} bytes`);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}

function requireModel() {
  if (!model) throw codedError("NoModel", "no OCR model is loaded: call loadModel first");
}

const handlers = {
  async init({ build }) {
    env = await loadKopitiam({ build, threads: 1 });
    kw = env.module;
    return { build: kw.buildInfo() };
  },

  /** A file that fails to load leaves the previous model in place. */
  async load(msg, signal) {
    const source = await openSource(msg, signal);
    const bytes = source.bytes ?? (await readAll(source.stream, source.total, msg.id, signal));
    postMessage(protocol.progress(msg.id, "load", bytes.byteLength, bytes.byteLength));
    const next = kw.OcrModel.fromBytes(bytes);
    model?.free();
    model = next;
    return { ...model.info, build: kw.buildInfo(), memoryBytes: env.memory.buffer.byteLength };
  },

  recognizeLine({ width, height, data }) {
    requireModel();
    return model.recognizeLine({ width, height, data });
  },

  recognize({ width, height, data }) {
    requireModel();
    return model.recognize({ width, height, data });
  },

  dispose() {
    model?.free();
    model = null;
    return true;
  },
};

serve(handlers, new Set(["load", "recognizeLine", "recognize", "dispose"]));
