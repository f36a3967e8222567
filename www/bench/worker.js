// One benchmark configuration: load a build, optionally start its thread pool, time the kernels
// through the public Tensor API, post medians back.
import { READ_BYTES, readModule } from "./read-ceiling.js";
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Median ms per call over `runs` timed batches, each long enough (>= 40 ms) to time well. */
function measure(fn, runs = 7) {
  fn(); // warm up (and JIT/tier-up)
  let iters = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) fn();
    if (performance.now() - t0 >= 40 || iters >= 1 << 20) break;
    iters *= 2;
  }
  const samples = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) fn();
    samples.push((performance.now() - t0) / iters);
  }
  return median(samples);
}

/** Random Q4_0 blocks with scale 0.01 (f16 0x211F), like real weights in size and spread. */
function randomQ4_0(rows, cols) {
  const blocks = (rows * cols) / 32;
  const bytes = new Uint8Array(blocks * 18);
  let s = 0x9e3779b9;
  for (let i = 0; i < bytes.length; i++) {
    s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
    bytes[i] = s & 0xff;
  }
  for (let b = 0; b < blocks; b++) {
    bytes[b * 18] = 0x1f;
    bytes[b * 18 + 1] = 0x21;
  }
  return bytes;
}

self.onmessage = async ({ data: config }) => {
  try {
    const kw = await import(`../../${config.pkg}/kopitiam_wasm.js`);
    await kw.default();
    if (config.threads) await kw.initThreadPool(config.threads);
    const { Tensor } = kw;
    const results = [];

    const shapes = [
      [1, 640, 1024], [1, 640, 2048], [1, 2048, 640], [1, 640, 262144], [128, 640, 1024],
    ];
    for (const [rows, k, n] of shapes) {
      postMessage({ progress: `q4_0 ${rows}×${k}→${n}` });
      const w = Tensor.fromQuantized(randomQ4_0(n, k), "q4_0", [n, k]);
      const x = Tensor.fromFloat32Array(Float32Array.from({ length: rows * k }, (_, i) => Math.sin(i)), [rows, k]);
      const ms = measure(() => x.quantizedMatmul(w).free());
      const weightBytes = (n * k / 32) * 18;
      results.push({
        name: rows === 1 ? `q4_0 matvec ${k}→${n}` : `q4_0 matmul ${rows}×${k}→${n}`,
        ms,
        gops: (2 * rows * k * n) / ms / 1e6,
        gbs: weightBytes / ms / 1e6,
      });
      w.free();
      x.free();
    }

    postMessage({ progress: "copies" });
    const side = 4096;
    const t = Tensor.zeros([side, side]);
    const bytes = side * side * 4;
    const copyMs = measure(() => t.copy().free(), 5);
    results.push({ name: "memcpy 4096×4096 f32", ms: copyMs, gbs: bytes / copyMs / 1e6 });
    const tt = t.transpose(0, 1);
    const trMs = measure(() => tt.contiguous().free(), 5);
    results.push({ name: "transpose copy 4096×4096 f32", ms: trMs, gbs: bytes / trMs / 1e6 });
    tt.free();
    t.free();

    postMessage({ progress: "streaming read" });
    const read = await readModule();
    const readMs = measure(read, 5);
    results.push({ name: "streaming read 160 MiB (SIMD128 loop)", ms: readMs, gbs: READ_BYTES / readMs / 1e6 });

    postMessage({ build: kw.buildInfo(), results });
  } catch (e) {
    postMessage({ error: `${e.code ?? ""} ${e.message ?? e}` });
  }
};
