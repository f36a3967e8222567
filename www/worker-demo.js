// A Worker that loads kopitiam-wasm with build "auto" (threads where crossOriginIsolated) and
// runs a Q4_0 matvec at a Gemma 3 270M shape; posts the time and a checksum of the result.
import { loadKopitiam } from "../js/loader.js";

export function q4Weights(rows, cols) {
  const bytes = new Uint8Array((rows * cols / 32) * 18);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24;
  for (let b = 0; b < bytes.length; b += 18) { bytes[b] = 0x1f; bytes[b + 1] = 0x21; }
  return bytes;
}

self.onmessage = async ({ data }) => {
  try {
    const { build, threads, module } = await loadKopitiam({ build: data.build ?? "auto", threads: 2 });
    const { Tensor } = module;
    const w = Tensor.fromQuantized(q4Weights(2048, 640), "q4_0", [2048, 640]);
    const x = Tensor.fromFloat32Array(Float32Array.from({ length: 640 }, (_, i) => Math.cos(i)), [1, 640]);
    const t0 = performance.now();
    const y = x.quantizedMatmul(w).toFloat32Array();
    const ms = performance.now() - t0;
    // Exact bytes: a float checksum that any difference in any element changes.
    const bits = new Uint32Array(y.buffer);
    let checksum = 0;
    for (const b of bits) checksum = (Math.imul(checksum, 31) + b) >>> 0;
    postMessage({ build: module.buildInfo(), threads, ms, checksum });
  } catch (e) {
    postMessage({ error: `${e.code ?? ""} ${e.message}` });
  }
};
