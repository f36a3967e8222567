// The OCR's worker: owns a single-thread wasm instance and the loaded OcrModel. Messages are
// those of js/protocol.js (the `OCR_REQUESTS`).
import { codedError } from "./errors.js";
import { loadKopitiam, relaxedSimdSupported } from "./loader.js";
import * as protocol from "./protocol.js";
import { openSource, serve } from "./worker-host.js";

let kw = null;
let env = null;
let model = null;

/** The whole stream into an OcrModelLoader (wasm memory, one allocation when the size is
 * known), with download progress events. */
async function readInto(loader, stream, total, id, signal) {
  const reader = stream.getReader();
  for (;;) {
    if (signal.aborted) {
      await reader.cancel().catch(() => {});
      throw codedError("Aborted", "loading was aborted");
    }
    const { done, value } = await reader.read();
    if (done) break;
    loader.push(value);
    postMessage(protocol.progress(id, "download", loader.loaded, total));
  }
  if (total !== undefined && loader.loaded !== total) {
    throw codedError("TruncatedDownload", `the download ended after ${loader.loaded} of ${total} bytes`);
  }
}

/** One canvas for decoding, grown as needed and never shrunk (resizing reallocates its
 * backing store): an image's pixels as RGBA. */
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
    const { width: w, height: h } = image;
    if (!canvas || canvas.width < w || canvas.height < h) {
      canvas = new OffscreenCanvas(Math.max(w, canvas?.width ?? 0), Math.max(h, canvas?.height ?? 0));
    }
    const ctx = canvas.getContext("2d", { willReadFrequently: true });
    ctx.clearRect(0, 0, w, h);
    ctx.drawImage(image, 0, 0);
    return { width: w, height: h, data: ctx.getImageData(0, 0, w, h).data };
  } finally {
    image.close();
  }
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** A Blob's bytes when it is a PNG (decoded in wasm: no canvas and no RGBA buffer per image,
 * which the garbage collector is slow to reclaim), else null. */
async function pngBytes({ blob }) {
  if (!blob || blob.size < 8) return null;
  const bytes = new Uint8Array(await blob.arrayBuffer());
  return PNG_SIGNATURE.every((b, i) => bytes[i] === b) ? bytes : null;
}

function requireModel() {
  if (!model) throw codedError("NoModel", "no OCR model is loaded: call loadModel first");
}

const handlers = {
  /** "auto": the OCR's own build, relaxed SIMD where the browser has it. */
  async init({ build }) {
    const chosen = build === "auto" ? (relaxedSimdSupported() ? "ocr-relaxed" : "ocr") : build;
    env = await loadKopitiam({ build: chosen, threads: 1 });
    kw = env.module;
    return { build: kw.buildInfo() };
  },

  /** A file that fails to load leaves the previous model in place. */
  async load(msg, signal) {
    const source = await openSource(msg, signal);
    let next;
    if (source.bytes) {
      next = kw.OcrModel.fromBytes(source.bytes);
    } else {
      const loader = new kw.OcrModelLoader(source.total);
      try {
        await readInto(loader, source.stream, source.total, msg.id, signal);
      } catch (e) {
        loader.free();
        throw e;
      }
      postMessage(protocol.progress(msg.id, "load", loader.loaded, loader.loaded));
      next = loader.finish();
    }
    model?.free();
    model = next;
    return { ...model.info, build: kw.buildInfo(), memoryBytes: env.memory.buffer.byteLength };
  },

  async recognizeLine(msg) {
    requireModel();
    const png = await pngBytes(msg);
    return png ? model.recognizeLinePng(png) : model.recognizeLine(await pixels(msg));
  },

  async recognize(msg) {
    requireModel();
    const png = await pngBytes(msg);
    return png ? model.recognizePng(png) : model.recognize(await pixels(msg));
  },

  dispose() {
    model?.free();
    model = null;
    return true;
  },
};

serve(handlers, new Set(["load", "recognizeLine", "recognize", "dispose"]));
