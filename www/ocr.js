// The OCR demo: an image (dropped, pasted, opened or drawn as a sample) read by createOcr()
// in a Worker, with the line and character boxes drawn over it.
import { createOcr } from "../js/index.js";

const $ = (id) => document.getElementById(id);
const view = $("view");
const ctx = view.getContext("2d", { willReadFrequently: true });
let ocr = null;
let current = null; // ImageData of the image shown

const status = (el, text, isError = false) => {
  el.textContent = text;
  el.classList.toggle("error", isError);
};
const mode = () => document.querySelector("input[name=mode]:checked").value;

async function loadModel(source) {
  status($("model-status"), "Loading the model…");
  try {
    const info = await ocr.loadModel(source);
    status($("model-status"), `Loaded: ${info.spec} · ${info.characters} characters · ${info.build}`);
    if (current) await read();
  } catch (e) {
    status($("model-status"), `${e.code ?? "Error"}: ${e.message}`, true);
  }
}

/** Shows `bitmap` and reads it. */
async function show(bitmap) {
  view.width = bitmap.width;
  view.height = bitmap.height;
  ctx.drawImage(bitmap, 0, 0);
  current = ctx.getImageData(0, 0, view.width, view.height);
  await read();
}

function drawBoxes(lines) {
  ctx.putImageData(current, 0, 0);
  ctx.lineWidth = Math.max(1, view.height / 300);
  for (const line of lines) {
    const [x0, y0, x1, y1] = line.bbox;
    ctx.strokeStyle = "rgba(200, 80, 20, .9)";
    ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
    ctx.strokeStyle = "rgba(20, 110, 200, .55)";
    for (const c of line.chars) ctx.strokeRect(c.x0, y0 + 2, c.x1 - c.x0, y1 - y0 - 4);
  }
}

async function read() {
  if (!current || !ocr?.info?.spec) return;
  status($("ocr-status"), "Reading…");
  const t0 = performance.now();
  try {
    const lines = mode() === "page" ? (await ocr.recognize(current)).lines : [await ocr.recognizeLine(current)];
    const ms = performance.now() - t0;
    drawBoxes(lines);
    $("ocr-text").textContent = lines.map((l) => l.text).join("\n");
    const conf = lines.length ? lines.reduce((s, l) => s + l.confidence, 0) / lines.length : 0;
    status($("ocr-status"), `${lines.length} line(s) in ${ms.toFixed(0)} ms · confidence ${conf.toFixed(0)}`);
  } catch (e) {
    status($("ocr-status"), `${e.code ?? "Error"}: ${e.message}`, true);
  }
}

async function fromBlob(blob) {
  try {
    await show(await createImageBitmap(blob));
  } catch (e) {
    status($("ocr-status"), `Could not decode the image: ${e.message}`, true);
  }
}

/** A line of text drawn in the browser's serif font, slightly grey, as a sample. */
function sample() {
  const text = mode() === "page"
    ? ["Kopitiam breakfast: kaya toast $2.40,", "two soft-boiled eggs and kopi-O.", "Open daily 06:30 to 14:00 (closed Mondays)."]
    : ["Kopitiam breakfast: kaya toast $2.40, kopi-O 1.80"];
  const c = new OffscreenCanvas(760, 30 + 44 * text.length);
  const g = c.getContext("2d");
  g.fillStyle = "#fbfaf7";
  g.fillRect(0, 0, c.width, c.height);
  g.fillStyle = "#222";
  g.font = "28px Georgia, serif";
  text.forEach((t, i) => g.fillText(t, 16, 42 + 44 * i));
  return c.transferToImageBitmap();
}

const drop = $("drop");
drop.addEventListener("dragover", (e) => {
  e.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const file = e.dataTransfer.files[0];
  if (file) fromBlob(file);
});
document.addEventListener("paste", (e) => {
  const item = [...e.clipboardData.items].find((i) => i.type.startsWith("image/"));
  if (item) fromBlob(item.getAsFile());
});
$("image-file").addEventListener("change", (e) => e.target.files[0] && fromBlob(e.target.files[0]));
$("sample").addEventListener("click", () => show(sample()));
$("load-url").addEventListener("click", () => loadModel($("model-url").value));
$("model-file").addEventListener("change", (e) => e.target.files[0] && loadModel(e.target.files[0]));
for (const r of document.querySelectorAll("input[name=mode]")) r.addEventListener("change", read);

ocr = await createOcr();
await loadModel($("model-url").value);
await show(sample());
window.ocrDemoReady = true;
