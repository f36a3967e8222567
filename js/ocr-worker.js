// The OCR's worker: owns a single-thread wasm instance and the loaded OcrModel. Messages are
// those of js/protocol.js (the `OCR_REQUESTS`).
import { codedError } from "./errors.js";
import { loadKopitiam } from "./loader.js";
import * as protocol from "./protocol.js";
import { openSource, serve } from "./worker-host.js";

let kw = null;
let env = null;
let model = null;

/** The whole stream, with download progress events; into one buffer when the size is known,
 * so no chunk outlives its copy. */
async function readAll(stream, total, id, signal) {
  const chunks = [];
  const whole = total !== undefined ? new Uint8Array(total) : null;
  let loaded = 0;
  const reader = stream.getReader();
  for (;;) {
    if (signal.aborted) {
      await reader.cancel().catch(() => {});
      throw codedError("Aborted", "loading was aborted");
    }
    const { done, value } = await reader.read();
    if (done) break;
    if (whole && loaded + value.byteLength <= total) whole.set(value, loaded);
    else chunks.push(value);
    loaded += value.byteLength;
    postMessage(protocol.progress(id, "download", loaded, total));
  }
  if (total !== undefined && loaded !== total) {
    throw codedError("TruncatedDownload", `the download ended after ${loaded} of ${total} bytes`);
  }
  if (whole) return whole;
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}

/** One canvas for decoding, reused: an image's pixels as RGBA. */
let canvas = null;
async function pixels({ blob, bitmap, width, height, data }) {
  if (!blob && !bitmap) return { width, height, data };
  let image;
  try {
    image = bitmap ?? (await createImageBitmap(blob));
  } catch (e) {
    throw codedError("InvalidImage", `the image could not be decoded: ${e.message}`);
  }
  try {
    if (!canvas) canvas = new OffscreenCanvas(image.width, image.height);
    canvas.width = image.width;
    canvas.height = image.height;
    const ctx = canvas.getContext("2d", { willReadFrequently: true });
    ctx.drawImage(image, 0, 0);
    const d = ctx.getImageData(0, 0, image.width, image.height);
    return { width: d.width, height: d.height, data: d.data };
  } finally {
    image.close();
  }
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

  async recognizeLine(msg) {
    requireModel();
    return model.recognizeLine(await pixels(msg));
  },

  async recognize(msg) {
    requireModel();
    return model.recognize(await pixels(msg));
  },

  dispose() {
    model?.free();
    model = null;
    return true;
  },
};

serve(handlers, new Set(["load", "recognizeLine", "recognize", "dispose"]));
