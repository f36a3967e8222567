// kopitiam-wasm: the npm entry point.
//   Low level (any thread): `await init(); Tensor…, Model.fromBytes(…)` — the single-thread
//   SIMD128 build, every argument checked by js/api.js; or `loadKopitiam({ build })` for the best
//   build for this environment.
//   Engine (a model in a dedicated Worker): `createEngine()`; OCR the same way: `createOcr()`.
import * as simd from "../pkg/kopitiam_wasm.js";
import { bind } from "./api.js";

const api = bind(simd);
export default api.default;
export const { initSync, Tensor, GgufFile, Tokenizer, Model, Session, ModelLoader, OcrModel, OcrModelLoader, buildInfo, version, errorCodes } = api;
export { isKopitiamError, JS_ERROR_CODES } from "./errors.js";
export { loadKopitiam, pickBuild, relaxedSimdSupported, threadsSupported } from "./loader.js";
export { createEngine } from "./engine.js";
export { createOcr } from "./ocr.js";
