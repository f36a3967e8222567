// The completion tab: one prompt, its continuation streamed after it.
const $ = (id) => document.getElementById(id);

export class CompletePanel {
  constructor(ui) {
    this.ui = ui;
    $("generate").onclick = () => this.generate();
    $("stop").onclick = () => ui.running?.abort();
    $("prompt").onkeydown = (ev) => {
      if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && !$("generate").disabled) this.generate();
    };
  }

  refresh(idle) {
    $("generate").disabled = !idle;
    $("stop").disabled = this.ui.running === null;
  }

  async generate() {
    const ui = this.ui;
    ui.clearError();
    const out = $("output");
    out.textContent = "";
    const text = $("prompt").value;
    const promptSpan = document.createElement("span");
    promptSpan.className = "prompt";
    promptSpan.textContent = text;
    const gen = document.createElement("span");
    out.append(promptSpan, gen);
    const controller = new AbortController();
    ui.running = controller;
    ui.refresh();
    const t0 = performance.now();
    let first = null;
    let count = 0;
    try {
      const onToken = (piece) => {
        gen.textContent += piece.text;
        count++;
        first ??= performance.now();
        ui.showRate(count, (performance.now() - first) / 1e3);
      };
      const result = await ui.engine.complete(text, { ...ui.options(), signal: controller.signal, onToken });
      ui.showStats(result.stats);
      gen.textContent = result.text;
      window.kopitiamResult = { ...result, info: ui.engine.info, wallMs: performance.now() - t0 };
    } catch (e) {
      ui.showError(e);
      window.kopitiamResult = { error: { code: e.code, message: e.message } };
    } finally {
      ui.running = null;
      ui.refresh();
    }
  }
}
