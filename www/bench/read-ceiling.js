// The read ceiling of `npm run bench` and `npm run bench:profile`: a plain SIMD128 loop that only
// loads, so weight bytes per token over its rate is the fastest decode this memory system allows.

/** Four i32x4 accumulators, 64 bytes a step, over 160 MiB, in a module of its own (147 bytes,
 * assembled by binaryen from):
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
export const READ_BYTES = 160 * 2 ** 20;

/** A fresh instance with every page touched; the returned function reads all 160 MiB once. */
export async function readModule() {
  const code = Uint8Array.from(READ_WASM.match(/../g), (h) => parseInt(h, 16));
  const { instance } = await WebAssembly.instantiate(code);
  const { read, mem } = instance.exports;
  new Uint8Array(mem.buffer).fill(1, 0, READ_BYTES);
  return () => read(0, READ_BYTES);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** GB/s of `threads` dedicated Workers reading at once, each its own 160 MiB (the ceiling a
 * thread team shares): the median over `runs` rounds of the slowest worker's time. */
export async function readCeilingGBs(threads, runs = 5) {
  const workers = Array.from({ length: threads }, () =>
    new Worker(new URL("./read-ceiling-worker.js", import.meta.url), { type: "module" }));
  const ask = (w, msg) => new Promise((resolve) => {
    w.onmessage = ({ data }) => resolve(data);
    w.postMessage(msg);
  });
  try {
    await Promise.all(workers.map((w) => ask(w, "init")));
    const rounds = [];
    for (let r = 0; r < runs; r++) {
      const ms = await Promise.all(workers.map((w) => ask(w, "read")));
      rounds.push(Math.max(...ms));
    }
    return (threads * READ_BYTES) / median(rounds) / 1e6;
  } finally {
    workers.forEach((w) => w.terminate());
  }
}

/** The worker side: "init" builds the module (and warms it up), "read" times one pass. */
export function serveReads() {
  let read = null;
  self.onmessage = async ({ data }) => {
    if (data === "init") {
      read = await readModule();
      read();
      postMessage(0);
    } else {
      const t0 = performance.now();
      read();
      postMessage(performance.now() - t0);
    }
  };
}
