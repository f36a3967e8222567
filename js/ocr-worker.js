// The OCR's worker: owns a single-thread wasm instance and the loaded OcrModel. Messages are
// those of js/protocol.js (the `OCR_REQUESTS`).
import { codedError } from "./errors.js";
import { loadKopitiam, relaxedSimdSupported } from "./loader.js";
import { loadFile, serve } from "./worker-host.js";

let kw = null;
let env = null;
let model = null;

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
    const next = (await loadFile((size) => new kw.OcrModelLoader(size), msg, signal)).finish();
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
