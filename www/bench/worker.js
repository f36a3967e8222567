// One benchmark configuration: load a build, optionally start its thread pool, time the kernels
// through the public Tensor API, post medians back.
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

/** The read ceiling: a plain SIMD128 loop that only loads (four i32x4 accumulators, 64 bytes
 * a step) over 160 MiB, in a module of its own (147 bytes, assembled by binaryen from):
 *   (module (memory (export "mem") 2561)
 *    (func (export "read") (param $p i32) (param $end i32) (result i32)
 *     (local $a v128) (local $b v128) (local $c v128) (local $d v128)
 *     (block $done (loop $next
 *       (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
 *       (local.set $a (i32x4.add (local.get $a) (v128.load offset=0 (local.get $p))))
 *       … offsets 16, 32, 48 into $b, $c, $d …
 *       (local.set $p (i32.add (local.get $p) (i32.const 64)))
 *       (br $next)))
 *     (i32x4.extract_lane 0 (i32x4.add (i32x4.add $a $b) (i32x4.add $c $d))))) */
const READ_WASM =
  "0061736d0100000001070160027f7f017f03020100050401008114070e02036d656d0200047265616400000a6601" +
  "6401047b02400340200020014f0d0120022000fd000400fdae01210220032000fd000410fdae01210320042000fd" +
  "000420fdae01210420052000fd000430fdae012105200041c0006a21000c000b000b20022003fdae0120042005fd" +
  "ae01fdae01fd1b000b";
const READ_BYTES = 160 * 2 ** 20;

async function streamingReadMs(bytes) {
  const code = Uint8Array.from(READ_WASM.match(/../g), (h) => parseInt(h, 16));
  const { instance } = await WebAssembly.instantiate(code);
  const { read, mem } = instance.exports;
  new Uint8Array(mem.buffer).fill(1, 0, bytes); // touch every page first
  return measure(() => read(0, bytes), 5);
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
    const readMs = await streamingReadMs(READ_BYTES);
    results.push({ name: "streaming read 160 MiB (SIMD128 loop)", ms: readMs, gbs: READ_BYTES / readMs / 1e6 });

    postMessage({ build: kw.buildInfo(), results });
  } catch (e) {
    postMessage({ error: `${e.code ?? ""} ${e.message ?? e}` });
  }
};
