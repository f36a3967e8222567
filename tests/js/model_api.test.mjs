// GgufFile, Tokenizer, Model and Session from JavaScript (Node, the same wasm the page loads),
// checked against llama.cpp's reference for the tiny fixture.
import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import kw from "./load.mjs";

const { GgufFile, Model, ModelLoader } = kw;
const bytes = readFileSync(new URL("../fixtures/tiny-gemma3/tiny-gemma3-q4_0.gguf", import.meta.url));
const reference = JSON.parse(readFileSync(new URL("../fixtures/tiny-gemma3/reference.json", import.meta.url)));

test("GgufFile exposes metadata and the tensor table", () => {
  const g = GgufFile.parse(bytes);
  assert.equal(g.version, 3);
  assert.equal(g.get("general.architecture"), "gemma3");
  assert.equal(g.get("gemma3.block_count"), 6);
  assert.equal(g.get("tokenizer.ggml.tokens").length, 512);
  assert.equal(g.get("no.such.key"), undefined);
  const embd = g.tensors.find((t) => t.name === "token_embd.weight");
  assert.deepEqual([embd.dtype, embd.shape, embd.nbytes], ["q4_0", [512, 64], (512 * 64 / 32) * 18]);
  assert.equal(g.tensorBytes("output_norm.weight").length, 64 * 4);
  assert.throws(() => GgufFile.parse(new Uint8Array([1, 2, 3])), (e) => e.code === "InvalidGguf");
});

test("Tokenizer gives llama.cpp's token ids", () => {
  const tok = GgufFile.parse(bytes).tokenizer();
  assert.equal(tok.vocabSize, 512);
  for (const c of reference) assert.deepEqual(Array.from(tok.encode(c.prompt)), c.tokens, c.prompt);
  assert.equal(tok.decode(tok.encode("Hello world", false)), "Hello world");
});

test("ModelLoader streams chunks; Session generates llama.cpp's greedy tokens", () => {
  const loader = new ModelLoader(bytes.length);
  for (let i = 0; i < bytes.length; i += 10_000) loader.push(bytes.subarray(i, i + 10_000));
  assert.equal(loader.loaded, bytes.length);
  const model = loader.finish();
  assert.equal(model.info.architecture, "gemma3");
  const c = reference.find((r) => r.prompt === "café, naïve: 3.14!");
  const session = model.createSession(64);
  session.prefill(model.tokenize(c.prompt), { temperature: 0 });
  const got = [];
  for (let i = 0; i < c.greedy.length; i++) got.push(session.step().token);
  assert.deepEqual(got, c.greedy);
  assert.throws(() => model.createSession(64).eval(new Uint32Array([9999])), (e) => e.code === "IndexOutOfRange");
  assert.throws(() => Model.fromBytes(bytes.subarray(0, 5000)), (e) => e.code === "InvalidGguf");
});

test("every architecture loads from JS: info, llama.cpp's ids, the file's chat template", () => {
  const chat = [
    ["tiny-qwen2", [{ role: "system", content: "You are a helpful assistant." }], undefined],
    ["tiny-qwen3", [{ role: "system", content: "You are a helpful assistant." }], false],
    ["tiny-phi3", [], undefined],
  ];
  for (const [name, system, enableThinking] of chat) {
    const dir = new URL(`../fixtures/${name}/`, import.meta.url);
    const ref = JSON.parse(readFileSync(new URL("reference.json", dir)));
    const model = Model.fromBytes(readFileSync(new URL(`${name}-q4_0.gguf`, dir)));
    const info = model.info;
    assert.equal(info.architecture, name.slice(5));
    assert.equal(info.tokenizer, name === "tiny-phi3" ? "spm" : "bpe");
    assert.equal(info.chatTemplate, true);
    for (const c of ref) assert.deepEqual(Array.from(model.tokenize(c.prompt)), c.tokens, `${name} ${c.prompt}`);
    const messages = [...system, { role: "user", content: "What is the capital of France?" }];
    assert.deepEqual(Array.from(model.chatTokens(messages, enableThinking)), ref[1].tokens, `${name} chat`);
    // The first greedy token after the plain English prompt (no near-tie there) is llama.cpp's.
    const s = model.createSession(64);
    s.prefill(ref[0].tokens, { temperature: 0 });
    assert.equal(s.step().token, ref[0].greedy[0], `${name} greedy`);
    model.free();
  }
});
