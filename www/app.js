// The demo: a model in a Worker (createEngine), streamed generation, live stats.
// Scriptable: ?model=URL&prompt=…&maxTokens=…&temperature=…&seed=…&threads=N&build=…&chat=1&autorun=1
// publishes the final result on window.kopitiamResult ({ text, tokens, stats, info } or { error }).
import { createEngine } from "../js/engine.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const DEFAULT_MODEL = "/models/gemma-3-270m-q4_0.gguf";

let engine = null;
let mode = params.get("chat") === "1" ? "chat" : "complete";
let running = null;

$("model-url").value = params.get("model") ?? DEFAULT_MODEL;
if (params.has("prompt")) $("prompt").value = params.get("prompt");
for (const [param, id] of [["maxTokens", "max-tokens"], ["temperature", "temperature"], ["topK", "top-k"], ["topP", "top-p"], ["minP", "min-p"], ["seed", "seed"]]) {
  if (params.has(param)) $(id).value = params.get(param);
}

const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;

function showError(e) {
  $("error").hidden = false;
  $("error").textContent = `${e.code ? e.code + ": " : ""}${e.message ?? e}`;
}

function clearError() {
  $("error").hidden = true;
}

function setMode(m) {
  mode = m;
  $("mode-complete").classList.toggle("active", m === "complete");
  $("mode-chat").classList.toggle("active", m === "chat");
}
$("mode-complete").onclick = () => setMode("complete");
$("mode-chat").onclick = () => setMode("chat");
setMode(mode);

async function ensureEngine() {
  if (engine && !engine.dead) return engine;
  const threads = params.get("threads");
  engine = await createEngine({
    threads: threads ? Number(threads) : "auto",
    build: params.get("build") ?? "auto",
  });
  $("stat-build").textContent = engine.info.build;
  $("stat-threads").textContent = engine.info.threads;
  return engine;
}

async function load(source, label) {
  clearError();
  $("generate").disabled = true;
  $("bar").style.width = "0";
  $("model-status").textContent = `Loading ${label}…`;
  const t0 = performance.now();
  try {
    const e = await ensureEngine();
    const info = await e.loadModel(source, {
      onProgress: (p) => {
        if (p.total) $("bar").style.width = `${(100 * p.loaded) / p.total}%`;
        $("model-status").textContent = p.phase === "load"
          ? `Parsing ${label}…`
          : `Downloading ${label}: ${mib(p.loaded)}${p.total ? " of " + mib(p.total) : ""}`;
      },
    });
    $("bar").style.width = "100%";
    $("model-status").textContent =
      `${label}: ${info.architecture}, ${(info.parameters / 1e6).toFixed(0)}M parameters, ${info.quantization}, ` +
      `${info.layers} layers, vocabulary ${info.vocabSize} — loaded in ${((performance.now() - t0) / 1e3).toFixed(2)} s`;
    $("stat-memory").textContent = mib(info.memoryBytes);
    $("generate").disabled = false;
    return info;
  } catch (e) {
    $("model-status").textContent = "No model loaded.";
    showError(e);
    throw e;
  }
}

$("load-url").onclick = () => load($("model-url").value, $("model-url").value.split("/").pop()).catch(() => {});
$("model-file").onchange = (ev) => {
  const f = ev.target.files[0];
  if (f) load(f, f.name).catch(() => {});
};
const drop = $("drop");
drop.ondragover = (ev) => { ev.preventDefault(); drop.classList.add("over"); };
drop.ondragleave = () => drop.classList.remove("over");
drop.ondrop = (ev) => {
  ev.preventDefault();
  drop.classList.remove("over");
  const f = ev.dataTransfer.files[0];
  if (f) load(f, f.name).catch(() => {});
};

function options() {
  return {
    maxTokens: Number($("max-tokens").value),
    temperature: Number($("temperature").value),
    topK: Number($("top-k").value),
    topP: Number($("top-p").value),
    minP: Number($("min-p").value),
    repeatPenalty: Number($("repeat-penalty").value),
    seed: Number($("seed").value),
  };
}

async function generate() {
  clearError();
  const out = $("output");
  out.textContent = "";
  const promptSpan = document.createElement("span");
  promptSpan.className = "prompt";
  const text = $("prompt").value;
  promptSpan.textContent = mode === "chat" ? "" : text;
  out.append(promptSpan);
  const gen = document.createElement("span");
  out.append(gen);
  const controller = new AbortController();
  running = controller;
  $("generate").disabled = true;
  $("stop").disabled = false;
  const t0 = performance.now();
  let first = null;
  let count = 0;
  try {
    const onToken = (piece) => {
      gen.textContent += piece.text;
      count++;
      first ??= performance.now();
      const s = (performance.now() - first) / 1e3;
      if (s > 0) $("stat-decode").textContent = `${(count / s).toFixed(1)} tok/s`;
    };
    const opts = { ...options(), signal: controller.signal, onToken };
    const result = mode === "chat"
      ? await engine.chat([{ role: "user", content: text }], opts)
      : await engine.complete(text, opts);
    const st = result.stats;
    $("stat-prefill").textContent = `${st.prefillTokensPerSecond.toFixed(1)} tok/s (${st.promptTokens} tokens)`;
    $("stat-decode").textContent = `${st.decodeTokensPerSecond.toFixed(1)} tok/s (${st.generatedTokens} tokens)`;
    $("stat-memory").textContent = mib(st.memoryBytes);
    gen.textContent = result.text;
    window.kopitiamResult = { ...result, info: engine.info, wallMs: performance.now() - t0 };
  } catch (e) {
    showError(e);
    window.kopitiamResult = { error: { code: e.code, message: e.message } };
  } finally {
    running = null;
    $("generate").disabled = false;
    $("stop").disabled = true;
  }
}

$("generate").onclick = generate;
$("stop").onclick = () => running?.abort();
$("prompt").onkeydown = (ev) => {
  if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && !$("generate").disabled) generate();
};

(async () => {
  try {
    await ensureEngine();
    if (params.get("autorun") === "1" || params.has("model")) {
      await load($("model-url").value, $("model-url").value.split("/").pop());
      if (params.get("autorun") === "1") await generate();
    } else {
      $("model-status").textContent = "Press Load to fetch the default model (Gemma 3 270M, Q4_0).";
    }
  } catch (e) {
    window.kopitiamResult = { error: { code: e.code, message: e.message } };
  }
})();
