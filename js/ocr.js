// OCR in a dedicated Worker, with Tesseract's own LSTM models (`.traineddata`, the integer
// "fast" kind: tessdata_fast, Debian's tesseract-ocr-eng):
//
//   const ocr = await createOcr();
//   await ocr.loadModel("eng.traineddata");
//   const { text, confidence, chars } = await ocr.recognizeLine(imageData);
//   const { lines } = await ocr.recognize(pageImageData);   // a simple one-column page
//
// Images are an encoded image `Blob` / `File` (PNG, JPEG, WebP …: decoded in the worker), an
// `ImageBitmap` (transferred: it is closed afterwards), an `ImageData` or `{ width, height,
// data }` (RGBA or 8-bit grey bytes, checked here and copied, so the caller's buffers stay
// usable).
import * as check from "./args.js";
import { WorkerClient, sourcePayload } from "./worker-client.js";

const LOAD = Object.freeze({ onProgress: check.isFunction, signal: check.isSignal, cache: check.optionalBool });
const CREATE = Object.freeze({ build: check.string, workerUrl: check.workerUrl });

class Ocr extends WorkerClient {
  constructor(worker) {
    super(worker, "OCR");
    this.info = null;
  }

  /** Loads a `.traineddata` from a URL string | URL | Response | ArrayBuffer | Uint8Array |
   * Blob | ReadableStream; resolves to `ocr.info` (`{ spec, inputHeight, characters, build }`). */
  async loadModel(source, options) {
    const { onProgress, signal, cache = false } = check.options("loadModel", options, LOAD) ?? {};
    const { payload, transfer } = sourcePayload("loadModel", source, cache);
    const info = await this.call("load", payload, { transfer, signal, onEvent: (e) => onProgress?.(e) });
    this.info = { ...this.info, ...info };
    return this.info;
  }

  /** Reads one line of text: `{ text, confidence, chars: [{ text, confidence, x0, x1 }], bbox }`. */
  async recognizeLine(image) {
    const [payload, transfer] = imagePayload("recognizeLine", image);
    return this.call("recognizeLine", payload, { transfer });
  }

  /** Reads a simple page (one column of horizontal lines on a plain background):
   * `{ text, lines: [line…] }`. Columns, tables and skewed scans are not laid out. */
  async recognize(image) {
    const [payload, transfer] = imagePayload("recognize", image);
    return this.call("recognize", payload, { transfer });
  }

  /** Frees the model and stops the worker. */
  async dispose() {
    await this.close("EngineDisposed", "the OCR was disposed");
  }
}

/** The image as a request payload and its transfer list: a Blob or ImageBitmap as it is (the
 * worker decodes it), pixels checked and copied. */
function imagePayload(op, image) {
  if (typeof Blob !== "undefined" && image instanceof Blob) return [{ blob: image }, []];
  if (typeof ImageBitmap !== "undefined" && image instanceof ImageBitmap) return [{ bitmap: image }, [image]];
  const { width, height, data } = check.image(op, "image", image);
  const copy = data.slice();
  return [{ width, height, data: copy }, [copy.buffer]];
}

/**
 * Starts the OCR in a dedicated Worker (one thread: a line is small work). `build` "auto" picks
 * the OCR's own wasm (`ocr-relaxed` where relaxed SIMD validates, else `ocr`); the full builds
 * ("simd", "relaxed") run it too.
 * @param {{ build?: "auto" | "ocr" | "ocr-relaxed" | "simd" | "relaxed", workerUrl?: string | URL }} [options]
 */
export async function createOcr(options) {
  const { build = "auto", workerUrl } = check.options("createOcr", options, CREATE) ?? {};
  // Written out literally so bundlers (Vite, webpack) recognise the worker and bundle it.
  const worker = workerUrl
    ? new Worker(workerUrl, { type: "module" })
    : new Worker(new URL("./ocr-worker.js", import.meta.url), { type: "module" });
  const ocr = new Ocr(worker);
  try {
    ocr.info = await ocr.call("init", { build });
  } catch (e) {
    worker.terminate();
    throw e;
  }
  return ocr;
}
