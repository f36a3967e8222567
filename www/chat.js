// The chat tab: a conversation rendered with the model's own chat template, replies streamed,
// Stop / Regenerate / Clear, and the conversation plus its KV cache kept across a reload
// (store.js). Each turn reuses the engine's cache, so only the new message and what follows the
// cached prefix are evaluated; the line under a reply says how many prompt tokens that saved.
// Every finished turn is appended to window.kopitiamChat.turns (for tests and scripts).
import { forget, loadConversation, loadSessionBytes, saveConversation, saveSessionBytes } from "./store.js";

const $ = (id) => document.getElementById(id);

export class ChatPanel {
  constructor(ui) {
    this.ui = ui;
    /** `{ role: "user" | "assistant", content, meta? }`, without the system prompt. */
    this.messages = [];
    window.kopitiamChat = { turns: [], restored: null };
    $("send").onclick = () => this.send();
    $("chat-stop").onclick = () => ui.running?.abort();
    $("regenerate").onclick = () => this.regenerate();
    $("clear").onclick = () => this.clear();
    $("chat-input").onkeydown = (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && !$("send").disabled) this.send();
    };
  }

  refresh(idle) {
    $("send").disabled = !idle;
    $("regenerate").disabled = !idle || this.messages.at(-1)?.role !== "assistant";
    $("clear").disabled = this.ui.running !== null;
    $("chat-stop").disabled = this.ui.running === null;
  }

  /** Sends the text in the input box as the next user message and streams the reply. */
  async send() {
    const text = $("chat-input").value.trim();
    if (!text || this.ui.running) return;
    $("chat-input").value = "";
    this.messages.push({ role: "user", content: text });
    this.render();
    await this.reply();
  }

  /** Drops the last reply and asks again (the cache keeps everything before it). */
  async regenerate() {
    if (this.messages.at(-1)?.role !== "assistant" || this.ui.running) return;
    this.messages.pop();
    this.render();
    await this.reply();
  }

  async clear() {
    this.messages = [];
    this.render();
    if (this.ui.model) {
      await this.ui.engine.resetContext();
      await forget(this.ui.model);
    }
    $("chat-status").textContent = "";
    this.ui.refresh();
  }

  /** The messages as the template sees them: the system prompt first, when there is one. */
  conversation() {
    const system = $("system").value.trim();
    const turns = this.messages.map(({ role, content }) => ({ role, content }));
    return system ? [{ role: "system", content: system }, ...turns] : turns;
  }

  async reply() {
    const ui = this.ui;
    ui.clearError();
    const bubble = this.bubble({ role: "assistant", content: "" });
    bubble.classList.add("streaming");
    const controller = new AbortController();
    ui.running = controller;
    ui.refresh();
    let count = 0;
    let first = null;
    try {
      const result = await ui.engine.chat(this.conversation(), {
        ...ui.options(),
        contextShift: true,
        signal: controller.signal,
        onToken: (piece) => {
          bubble.querySelector(".text").textContent += piece.text;
          count++;
          first ??= performance.now();
          ui.showRate(count, (performance.now() - first) / 1e3);
        },
      });
      const st = result.stats;
      const meta = `${st.generatedTokens} tokens · ${st.decodeTokensPerSecond.toFixed(1)} tok/s · ` +
        `${st.cachedTokens} of ${st.promptTokens} prompt tokens from cache` +
        (st.droppedMessages ? ` · ${st.droppedMessages} oldest messages left out to fit` : "") +
        (result.stopped ? " · stopped" : "");
      this.messages.push({ role: "assistant", content: result.text, meta });
      ui.showStats(st);
      window.kopitiamChat.turns.push({ text: result.text, tokens: result.tokens, stats: st, stopped: result.stopped });
      await this.persist();
    } catch (e) {
      ui.showError(e);
      window.kopitiamChat.turns.push({ error: { code: e.code, message: e.message } });
    } finally {
      ui.running = null;
      this.render();
      ui.refresh();
    }
  }

  /** Saves the conversation and the engine's KV cache under the model's name. */
  async persist() {
    saveConversation(this.ui.model, { system: $("system").value, messages: this.messages });
    try {
      await saveSessionBytes(this.ui.model, await this.ui.engine.saveSession());
    } catch (e) {
      $("chat-status").textContent = `The cache was not saved (${e.code ?? e.name}): a reload will evaluate the history again.`;
    }
  }

  /** After a model loads: its saved conversation, and the saved cache when it still fits. */
  async restore() {
    const saved = loadConversation(this.ui.model);
    this.messages = saved?.messages ?? [];
    if (saved?.system !== undefined) $("system").value = saved.system;
    this.render();
    if (!saved) return;
    const bytes = await loadSessionBytes(this.ui.model);
    if (!bytes) return;
    try {
      const { tokens } = await this.ui.engine.loadSession(bytes);
      window.kopitiamChat.restored = { tokens };
      $("chat-status").textContent = `Restored the conversation with ${tokens} cached positions.`;
    } catch (e) {
      // Another build of the model, or damaged bytes: the history is evaluated again instead.
      $("chat-status").textContent = `Restored the conversation; its cache did not fit (${e.code}).`;
    }
  }

  render() {
    $("messages").replaceChildren();
    for (const m of this.messages) this.bubble(m);
  }

  bubble(m) {
    const div = document.createElement("div");
    div.className = `msg ${m.role}`;
    const text = document.createElement("div");
    text.className = "text";
    text.textContent = m.content;
    div.append(text);
    if (m.meta) {
      const meta = document.createElement("div");
      meta.className = "meta";
      meta.textContent = m.meta;
      div.append(meta);
    }
    $("messages").append(div);
    div.scrollIntoView({ block: "nearest" });
    return div;
  }
}
