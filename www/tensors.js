// The demo page: loads the best wasm build for this browser and computes a few tensor ops visibly.
import { loadKopitiam } from "../js/loader.js";

const status = document.getElementById("status");
const rows = document.getElementById("results");

function show(expr, value) {
  const tr = rows.insertRow();
  tr.insertCell().innerHTML = `<code>${expr}</code>`;
  const cell = tr.insertCell();
  cell.innerHTML = `<code>${value}</code>`;
  cell.dataset.expr = expr;
}

const fmt = (a) => "[" + Array.from(a, (v) => +v.toFixed(4)).join(", ") + "]";

try {
  const build = new URLSearchParams(location.search).get("build") ?? "auto";
  const { module } = await loadKopitiam({ build });
  const { Tensor, version, buildInfo } = module;
  const a = Tensor.fromFloat32Array(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  const b = Tensor.fromFloat32Array(new Float32Array([10, 20, 30]), [3]);
  show("a = [[1, 2, 3], [4, 5, 6]]", `shape ${JSON.stringify(a.shape)}, dtype ${a.dtype}`);
  show("a.add(b), b = [10, 20, 30]", fmt(a.add(b).toFloat32Array()));
  show("a.matmul(a.transpose(0, 1))", fmt(a.matmul(a.transpose(0, 1)).toFloat32Array()));
  show("a.softmax(1)", fmt(a.softmax(1).toFloat32Array()));
  show("a.sum(0)", fmt(a.sum(0).toFloat32Array()));
  show("a.argmax(1)", fmt(a.argmax(1).toInt32Array()));
  show("a.gelu()", fmt(a.gelu().toFloat32Array()));
  try {
    a.matmul(a);
  } catch (e) {
    show("a.matmul(a)  // bad shapes", `${e.code}: ${e.message}`);
  }
  status.textContent = `ready — kopitiam-wasm ${version()}`;
  status.dataset.build = buildInfo();
  document.getElementById("build").textContent = buildInfo();
  status.dataset.state = "ok";

  document.getElementById("bench").onclick = () => {
    const n = 256;
    const x = Tensor.fromFloat32Array(Float32Array.from({ length: n * n }, (_, i) => (i % 7) - 3), [n, n]);
    const t0 = performance.now();
    const y = x.matmul(x);
    const ms = performance.now() - t0;
    document.getElementById("bench-out").textContent =
      `${ms.toFixed(1)} ms (${((2 * n ** 3) / ms / 1e6).toFixed(2)} GFLOP/s, reference kernel)`;
    x.free();
    y.free();
  };
} catch (e) {
  status.textContent = `error: ${e.code ?? ""} ${e.message}`;
  status.dataset.state = "error";
  throw e;
}

// The threaded build runs only in a Worker of a crossOriginIsolated page: the loader picks it there.
document.getElementById("worker").onclick = () => {
  const out = document.getElementById("worker-out");
  const worker = new Worker(new URL("./worker-demo.js", import.meta.url), { type: "module" });
  worker.onmessage = ({ data }) => {
    out.textContent = data.error ?? `build ${data.build} × ${data.threads} threads: ${data.ms.toFixed(1)} ms`;
    out.dataset.build = data.build;
    out.dataset.checksum = data.checksum;
    worker.terminate();
  };
  worker.postMessage({});
};
