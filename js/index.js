// kopitiam-wasm: the npm entry point.
//   Low level (any thread): `await init(); new Tensor…, Model.fromBytes(…)` — the single-thread
//   SIMD128 build; or `loadKopitiam({ build })` for the best build for this environment.
//   Engine (a model in a dedicated Worker): `createEngine()`.
export { default } from "../pkg/kopitiam_wasm.js";
export * from "../pkg/kopitiam_wasm.js";
export { loadKopitiam, pickBuild, relaxedSimdSupported, threadsSupported } from "./loader.js";
export { createEngine } from "./engine.js";
