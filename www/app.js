// The demo's shell: the engine in a Worker (createEngine), loading a model, the two tabs (chat
// and completion), the sampling controls and the stats bar.
// Scriptable: ?model=URL&mode=chat|complete&prompt=…&maxTokens=…&temperature=…&seed=…&threads=N
// &build=…&autorun=1. A completion publishes its result on window.kopitiamResult ({ text, tokens,
// stats, info } or { error }); chat turns go to window.kopitiamChat (see chat.js).
import { createEngine } from "../js/engine.js";
import { ChatPanel } from "./chat.js";
import { CompletePanel } from "./complete.js";

export const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const DEFAULT_MODEL = "/models/gemma-3-270m-q4_0.gguf";

const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** What the panels share: the engine, the loaded model's name, options, errors and stats. */
export const ui = {
  engine: null,
  /** The loaded model's name (its URL or file name), the key chats are saved under. */
  model: null,
  /** One generation at a time: the running one's AbortController. */
  running: null,

  options() {
    return {
      maxTokens: Number($("max-tokens").value),
      temperature: Number($("temperature").value),
      topK: Number($("top-k").value),
      topP: Number($("top-p").value),
      minP: Number($("min-p").value),
      repeatPenalty: Number($("repeat-penalty").value),
      seed: Number($("seed").value),
    };
  },

  showError(e) {
    $("error").hidden = false;
    $("error").textContent = `${e.code ? e.code + ": " : ""}${e.message ?? e}`;
  },

  clearError() {
    $("error").hidden = true;
  },

  /** Live decode rate while tokens stream in. */
  showRate(count, seconds) {
    if (seconds > 0) $("stat-decode").textContent = `${(count / seconds).toFixed(1)} tok/s`;
  },

  showStats(st) {
    const evaluated = st.promptTokens - st.cachedTokens;
    $("stat-prefill").textContent = evaluated > 0
      ? `${st.prefillTokensPerSecond.toFixed(1)} tok/s (${evaluated} tokens)`
      : "– (all cached)";
    $("stat-decode").textContent = `${st.decodeTokensPerSecond.toFixed(1)} tok/s (${st.generatedTokens} tokens)`;
    $("stat-cached").textContent = `${st.cachedTokens} of ${st.promptTokens}`;
    $("stat-memory").textContent = mib(st.memoryBytes);
  },

  /** Enables the Send/Generate buttons when a model is loaded and nothing runs. */
  refresh() {
    const idle = ui.model !== null && ui.running === null;
    for (const p of panels) p.refresh(idle);
  },
};

let chat;
let complete;
let panels = [];

async function ensureEngine() {
  if (ui.engine && !ui.engine.dead) return ui.engine;
  const threads = params.get("threads");
  ui.engine = await createEngine({
    threads: threads ? Number(threads) : "auto",
    build: params.get("build") ?? "auto",
  });
  $("stat-build").textContent = ui.engine.info.build;
  $("stat-threads").textContent = ui.engine.info.threads;
  return ui.engine;
}

async function load(source, label) {
  ui.clearError();
  ui.model = null;
  ui.refresh();
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
      `${info.layers} layers, vocabulary ${info.vocabSize} (${info.tokenizer}), ` +
      `${info.chatTemplate ? "its own chat template" : "the Gemma chat format"} — loaded in ${((performance.now() - t0) / 1e3).toFixed(2)} s`;
    $("stat-memory").textContent = mib(info.memoryBytes);
    // A file without a chat template is usually a pretrained (base) model — the default Gemma 3
    // 270M is one — which continues text rather than answering; say so where the chat is.
    $("chat-hint").hidden = info.chatTemplate;
    $("chat-hint").textContent = "This file has no chat template, so it is probably a base (pretrained) model: " +
      "turns use the Gemma format, and replies may just continue the text (llama.cpp gives the same). " +
      "For a real chat, load an instruction-tuned GGUF (e.g. Gemma 3 270M IT, Qwen2.5 0.5B Instruct, SmolLM2 Instruct) — or try the Completion tab.";
    ui.model = label;
    await chat.restore();
    ui.refresh();
    return info;
  } catch (e) {
    $("model-status").textContent = "No model loaded.";
    ui.showError(e);
    throw e;
  }
}

function setMode(m) {
  $("mode-chat").classList.toggle("active", m === "chat");
  $("mode-complete").classList.toggle("active", m === "complete");
  $("chat-panel").hidden = m !== "chat";
  $("complete-panel").hidden = m !== "complete";
  return m;
}

$("model-url").value = params.get("model") ?? DEFAULT_MODEL;
for (const [param, id] of [["maxTokens", "max-tokens"], ["temperature", "temperature"], ["topK", "top-k"], ["topP", "top-p"], ["minP", "min-p"], ["seed", "seed"]]) {
  if (params.has(param)) $(id).value = params.get(param);
}
chat = new ChatPanel(ui);
complete = new CompletePanel(ui);
panels = [chat, complete];
let mode = setMode(params.get("mode") === "complete" ? "complete" : "chat");
$("mode-chat").onclick = () => (mode = setMode("chat"));
$("mode-complete").onclick = () => (mode = setMode("complete"));
if (params.has("prompt")) (mode === "chat" ? $("chat-input") : $("prompt")).value = params.get("prompt");

$("load-url").onclick = () => load($("model-url").value, $("model-url").value).catch(() => {});
$("model-file").onchange = (ev) => {
  const f = ev.target.files[0];
  if (f) load(f, `${f.name} (${f.size} bytes)`).catch(() => {});
};
const drop = $("drop");
drop.ondragover = (ev) => { ev.preventDefault(); drop.classList.add("over"); };
drop.ondragleave = () => drop.classList.remove("over");
drop.ondrop = (ev) => {
  ev.preventDefault();
  drop.classList.remove("over");
  const f = ev.dataTransfer.files[0];
  if (f) load(f, `${f.name} (${f.size} bytes)`).catch(() => {});
};

(async () => {
  try {
    await ensureEngine();
    if (params.get("autorun") === "1" || params.has("model")) {
      await load($("model-url").value, $("model-url").value);
      if (params.get("autorun") === "1") await (mode === "chat" ? chat.send() : complete.generate());
    } else {
      $("model-status").textContent = "Press Load to fetch the default model (Gemma 3 270M, Q4_0).";
    }
  } catch (e) {
    window.kopitiamResult = { error: { code: e.code, message: e.message } };
  }
})();
