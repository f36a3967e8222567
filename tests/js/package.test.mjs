// The packed npm tarball, installed into a fresh consumer folder, used from Node (Tensor API and
// a model from a file) and from a plain ES-module page with no bundler (the Worker engine).
import test from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createServer } from "node:http";
import { createReadStream, statSync } from "node:fs";
import { launch } from "./browser.mjs";

const repo = new URL("../..", import.meta.url).pathname;
const reference = JSON.parse(readFileSync(join(repo, "tests/fixtures/tiny-gemma3/reference.json")));
const hello = reference.find((c) => c.prompt === "Hello world");
let dir;

test.before(() => {
  dir = mkdtempSync(join(tmpdir(), "kopitiam-consumer-"));
  const tgz = execFileSync("npm", ["pack", "--silent", "--pack-destination", dir], { cwd: repo }).toString().trim().split("\n").pop();
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--silent", join(dir, tgz)], { cwd: dir });
  copyFileSync(join(repo, "tests/fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf"), join(dir, "tiny.gguf"));
});

// The consumer project holds the installed tarball (tens of MB): gone after the file's tests.
test.after(() => rmSync(dir, { recursive: true, force: true }));

test("the tarball carries every wasm build, the licence files and the checked API layer", () => {
  const tgz = readdirSync(dir).find((f) => f.endsWith(".tgz"));
  const files = execFileSync("tar", ["tzf", join(dir, tgz)]).toString().split("\n");
  for (const f of ["LICENSE-MIT", "LICENSE-APACHE", "js/api.js", "js/args.js", "js/errors.js",
    ...["pkg", "pkg-relaxed", "pkg-threads", "pkg-relaxed-threads", "pkg-ocr", "pkg-ocr-relaxed"].flatMap((p) => [`${p}/kopitiam_wasm.js`, `${p}/kopitiam_wasm_bg.wasm`])]) {
    assert.ok(files.includes(`package/${f}`), `${f} is in the tarball`);
  }
});

test("npm pack in a clean clone without the wasm toolchain refuses instead of packing a broken package", () => {
  // The tracked and new files of this checkout, without pkg*/, target/ or node_modules/.
  const clone = mkdtempSync(join(tmpdir(), "kopitiam-clone-"));
  const home = mkdtempSync(join(tmpdir(), "kopitiam-home-"));
  const list = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: repo }).toString().split("\0").filter(Boolean);
  for (const f of list.filter((f) => existsSync(join(repo, f)))) {
    mkdirSync(dirname(join(clone, f)), { recursive: true });
    copyFileSync(join(repo, f), join(clone, f));
  }
  try {
    // HOME elsewhere hides ~/.cargo/bin (wasm-pack, wasm-bindgen); no node_modules hides wasm-opt.
    const r = spawnSync("npm", ["pack", "--pack-destination", clone], {
      cwd: clone, env: { ...process.env, HOME: home, PATH: "/usr/local/bin:/usr/bin:/bin" }, encoding: "utf8",
    });
    assert.notEqual(r.status, 0, "npm pack must fail");
    assert.match(r.stderr, /prepack: .* is missing, so the wasm builds \(pkg\*\/\) cannot be made; run `npm run setup`/);
    assert.equal(readdirSync(clone).filter((f) => f.endsWith(".tgz")).length, 0, "no tarball written");
  } finally {
    for (const d of [clone, home]) rmSync(d, { recursive: true, force: true });
  }
});

test("Node 20: Tensor API and a model from a file", () => {
  writeFileSync(join(dir, "node.mjs"), `
    import { readFileSync } from "node:fs";
    import { createRequire } from "node:module";
    import { initSync, Tensor, Model } from "kopitiam-wasm";
    const wasm = readFileSync(createRequire(import.meta.url).resolve("kopitiam-wasm/wasm"));
    initSync({ module: wasm });
    const a = Tensor.fromFloat32Array(new Float32Array([1, 2, 3, 4]), [2, 2]);
    const sum = Array.from(a.add(a.transpose(0, 1)).toFloat32Array());
    const model = Model.fromBytes(readFileSync("tiny.gguf"));
    const ids = model.tokenize("Hello world");
    const s = model.createSession(64);
    s.prefill(ids, { temperature: 0 });
    const out = [];
    for (let i = 0; i < 8; i++) out.push(s.step().token);
    console.log(JSON.stringify({ sum, ids: Array.from(ids), out }));
  `);
  const r = JSON.parse(execFileSync("node", ["node.mjs"], { cwd: dir }).toString());
  assert.deepEqual(r.sum, [2, 5, 5, 8]);
  assert.deepEqual(r.ids, hello.tokens);
  assert.deepEqual(r.out, hello.greedy.slice(0, 8));
});

/** Serves `root` with COOP/COEP, opens `path` in Chromium and returns `window.result`. */
async function runPage(root, path) {
  const server = createServer((req, res) => {
    const file = join(root, decodeURIComponent(new URL(req.url, "http://x").pathname));
    try {
      const type = file.endsWith(".js") ? "text/javascript" : file.endsWith(".wasm") ? "application/wasm" : file.endsWith(".html") ? "text/html" : "application/octet-stream";
      res.writeHead(200, { "Content-Type": type, "Content-Length": statSync(file).size,
        "Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp" });
      createReadStream(file).pipe(res);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const browser = await launch();
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${server.address().port}${path}`);
    await page.waitForFunction(() => window.result, null, { timeout: 60_000 });
    return await page.evaluate(() => window.result);
  } finally {
    await browser.close();
    server.close();
  }
}

test("a plain <script type=module> page with no bundler runs the engine", async () => {
  writeFileSync(join(dir, "index.html"), `<!doctype html><script type="module">
    import { createEngine } from "./node_modules/kopitiam-wasm/js/index.js";
    const engine = await createEngine();
    await engine.loadModel("./tiny.gguf");
    const r = await engine.complete("Hello world", { maxTokens: 8, temperature: 0 });
    window.result = { tokens: r.tokens, build: engine.info.build };
  </script>`);
  const r = await runPage(dir, "/index.html");
  assert.deepEqual(r.tokens, hello.greedy.slice(0, 8));
  assert.match(r.build, /\+threads$/, "the threaded build (relaxed SIMD where Chromium has it)");
});

test("a Vite app built from the tarball runs in Chromium", async () => {
  const app = join(dir, "vite-app");
  execFileSync("mkdir", ["-p", join(app, "public")]);
  copyFileSync(join(dir, "tiny.gguf"), join(app, "public", "tiny.gguf"));
  writeFileSync(join(app, "index.html"), `<!doctype html><pre id="out"></pre><script type="module" src="./main.js"></script>`);
  writeFileSync(join(app, "main.js"), `
    import { createEngine } from "kopitiam-wasm";
    const engine = await createEngine();
    await engine.loadModel("/tiny.gguf");
    const r = await engine.complete("Hello world", { maxTokens: 8, temperature: 0 });
    window.result = { tokens: r.tokens, build: engine.info.build };
  `);
  // The engine's worker imports its builds dynamically: Vite needs ES-module workers.
  writeFileSync(join(app, "vite.config.js"), `export default { worker: { format: "es" }, build: { target: "esnext" } };`);
  // Vite resolves "kopitiam-wasm" from the consumer's node_modules (the installed tarball).
  execFileSync(join(repo, "node_modules/.bin/vite"), ["build", "--logLevel", "error"], { cwd: app });
  const r = await runPage(join(app, "dist"), "/index.html");
  assert.deepEqual(r.tokens, hello.greedy.slice(0, 8));
  assert.match(r.build, /\+threads$/, "the threaded build (relaxed SIMD where Chromium has it)");
});
