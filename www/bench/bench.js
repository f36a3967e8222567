// Drives the kernel benchmark: one fresh dedicated Worker per build configuration, run one after
// the other so they never compete for the two cores.
export const CONFIGS = [
  { name: "scalar", pkg: "pkg-scalar", threads: 0 },
  { name: "simd128", pkg: "pkg", threads: 0 },
  { name: "relaxed-simd", pkg: "pkg-relaxed", threads: 0 },
  { name: "relaxed+threads ×1", pkg: "pkg-relaxed-threads", threads: 1 },
  { name: "relaxed+threads ×2", pkg: "pkg-relaxed-threads", threads: 2 },
];

function runConfig(config, onProgress) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    worker.onmessage = ({ data }) => {
      if (data.progress) return onProgress?.(`${config.name}: ${data.progress}`);
      worker.terminate();
      data.error ? reject(new Error(`${config.name}: ${data.error}`)) : resolve({ ...config, ...data });
    };
    worker.onerror = (e) => reject(new Error(`${config.name}: ${e.message}`));
    worker.postMessage(config);
  });
}

export async function runAll(configs = CONFIGS, onProgress) {
  const out = [];
  for (const c of configs) out.push(await runConfig(c, onProgress));
  return out;
}

globalThis.runBench = runAll;

const button = document.getElementById("run");
if (button) {
  button.onclick = async () => {
    const state = document.getElementById("state");
    const results = await runAll(CONFIGS, (p) => (state.textContent = p));
    state.textContent = "done";
    const table = document.getElementById("out");
    table.innerHTML = "<tr><th>config</th><th>kernel</th><th>ms</th><th>GOP/s</th><th>GB/s</th></tr>";
    for (const r of results)
      for (const k of r.results)
        table.insertAdjacentHTML("beforeend",
          `<tr><td>${r.name}</td><td>${k.name}</td><td>${k.ms.toFixed(3)}</td>` +
          `<td>${k.gops?.toFixed(2) ?? ""}</td><td>${k.gbs.toFixed(2)}</td></tr>`);
  };
}
