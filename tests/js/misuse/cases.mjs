// The misuse table: the public API called wrongly, as a new user would, each call with the exact
// `code` it must throw. Shared by the Node run (misuse.test.mjs) and the Chromium run
// (misuse_browser.test.mjs), so it imports nothing platform-specific: `kw` is the package's
// public API (js/index.js), `fx` the tiny-gemma3 fixture bytes and llama.cpp's reference for it.
//
// After every case the runner checks the instance still computes known values (`health`); the
// loops at the end repeat each kind of caught error 100,000 times, which is where the instance
// used to die (a leaked shadow stack after ~7,300 unwound exceptions).

const f32 = (...v) => new Float32Array(v);

/** Raises if the instance no longer computes hand-worked values and llama.cpp's token ids. */
export function health(kw, fx) {
  const { Tensor } = kw;
  const a = Tensor.fromFloat32Array(f32(1, 2, 3, 4, 5, 6), [2, 3]);
  const b = Tensor.fromFloat32Array(f32(7, 8, 9, 10, 11, 12), [3, 2]);
  const c = a.matmul(b);
  const got = Array.from(c.toFloat32Array()).join();
  for (const t of [a, b, c]) t.free();
  if (got !== "58,64,139,154") throw new Error(`health: matmul gave ${got}`);
  const ids = Array.from(fx.tokenizer.encode(fx.hello.prompt)).join();
  if (ids !== fx.hello.tokens.join()) throw new Error(`health: tokenize gave ${ids}`);
}

/** Greedy tokens of the fixture against llama.cpp's (the full check, run once at the end). */
export function greedyMatches(kw, fx) {
  const model = kw.Model.fromBytes(fx.gguf);
  const s = model.createSession(64);
  s.prefill(model.tokenize(fx.hello.prompt), { temperature: 0 });
  const got = [];
  for (let i = 0; i < fx.hello.greedy.length; i++) got.push(s.step().token);
  s.free();
  model.free();
  return got.join() === fx.hello.greedy.join();
}

/** A GGUF header with no metadata and no tensors (valid, but no model and no tokenizer). */
function emptyGguf() {
  const b = new Uint8Array(24);
  b.set([0x47, 0x47, 0x55, 0x46, 3]); // "GGUF", version 3; tensor and key counts 0
  return b;
}

/** The fixture with its architecture renamed (same length), so it parses but is not supported. */
function renamedArchitecture(gguf) {
  const b = gguf.slice();
  const key = new TextEncoder().encode("general.architecture");
  outer: for (let i = 0; i < b.length; i++) {
    for (let j = 0; j < key.length; j++) if (b[i + j] !== key[j]) continue outer;
    // key, u32 type (8 = string), u64 length, then the bytes of "gemma3".
    b.set(new TextEncoder().encode("mamba9"), i + key.length + 4 + 8);
    return b;
  }
  throw new Error("fixture has no general.architecture");
}

/** Q4_0 blocks of zeros for a `[rows, cols]` weight. */
const q4 = (kw, rows, cols) => kw.Tensor.fromQuantized(new Uint8Array((rows * cols / 32) * 18), "q4_0", [rows, cols]);
const q8 = (kw, rows, cols) => kw.Tensor.fromQuantized(new Uint8Array((rows * cols / 32) * 34), "q8_0", [rows, cols]);

/** `[name, () => call, code]` for every synchronous class of the API. */
export function misuseCases(kw, fx) {
  const { Tensor, GgufFile, Model, ModelLoader } = kw;
  const a = Tensor.fromFloat32Array(f32(1, 2, 3, 4, 5, 6), [2, 3]);
  const int = Tensor.fromInt32Array(new Int32Array([1, 0]), [2]);
  const scalar = Tensor.fromFloat32Array(f32(3), []);
  const quant = Tensor.fromQuantized(new Uint8Array(18), "q4_0", [1, 32]);
  const freed = a.clone();
  freed.free();
  const z2 = Tensor.zeros([2]);
  const w3 = Tensor.fromFloat32Array(f32(1, 1, 1), [3]);
  const gguf = GgufFile.parse(fx.gguf);
  const tok = gguf.tokenizer();
  const deadGguf = GgufFile.parse(fx.gguf);
  deadGguf.free();
  const deadTok = gguf.tokenizer();
  deadTok.free();
  const model = Model.fromBytes(fx.gguf);
  const deadModel = Model.fromBytes(fx.gguf);
  deadModel.free();
  const session = model.createSession(8);
  const deadSession = model.createSession(8);
  deadSession.free();
  const finished = new ModelLoader(fx.gguf.length);
  finished.push(fx.gguf);
  finished.finish().free();
  const throwing = { get temperature() { throw new Error("getter"); } };
  // A caller's RangeError is no allocation failure and no trap: no wasm ran.
  const overflowing = { get temperature() { throw new RangeError("Maximum call stack size exceeded"); } };
  const hostile = new Proxy({}, { ownKeys() { throw new Error("ownKeys"); } });
  const hostileShape = new Proxy([2, 2], { get(t, k) { if (k === "0") throw new Error("index"); return t[k]; } });
  const IA = "InvalidArgument";

  return [
    // ------------------------------------------------ Tensor constructors
    ["zeros({})", () => Tensor.zeros({}), IA],
    ["zeros({length: 2**32-1})", () => Tensor.zeros({ length: 2 ** 32 - 1 }), IA],
    ["zeros(rank 65)", () => Tensor.zeros(new Array(65).fill(1)), IA],
    ["zeros(sparse array)", () => Tensor.zeros(new Array(3)), IA],
    ["zeros([-1])", () => Tensor.zeros([-1]), IA],
    ["zeros([1.5])", () => Tensor.zeros([1.5]), IA],
    ["zeros([2**32])", () => Tensor.zeros([2 ** 32]), IA],
    ["zeros(['2'])", () => Tensor.zeros(["2"]), IA],
    ["zeros([NaN])", () => Tensor.zeros([NaN]), IA],
    ["zeros([Infinity])", () => Tensor.zeros([Infinity]), IA],
    ["zeros()", () => Tensor.zeros(), IA],
    ["zeros(null)", () => Tensor.zeros(null), IA],
    ["zeros([2], extra)", () => Tensor.zeros([2], 3), IA],
    ["zeros(DataView)", () => Tensor.zeros(new DataView(new ArrayBuffer(4))), IA],
    ["zeros(Int32Array [-1])", () => Tensor.zeros(new Int32Array([-1])), IA],
    ["zeros(proxy throwing on index)", () => Tensor.zeros(hostileShape), IA],
    ["zeros([65536, 65536, 16]) overflows", () => Tensor.zeros([65536, 65536, 16]), "SizeOverflow"],
    ["zeros([2**32-1, 2**32-1]) overflows", () => Tensor.zeros([2 ** 32 - 1, 2 ** 32 - 1]), "SizeOverflow"],
    ["zeros(3 GiB)", () => Tensor.zeros([16384, 16384, 3]), "AllocationFailed"],
    ["new Tensor()", () => new Tensor(), IA],
    ["fromFloat32Array(['x'])", () => Tensor.fromFloat32Array(["x"], [1]), IA],
    ["fromFloat32Array([{}])", () => Tensor.fromFloat32Array([{}], [1]), IA],
    ["fromFloat32Array('abc')", () => Tensor.fromFloat32Array("abc", [3]), IA],
    ["fromFloat32Array(Float64Array)", () => Tensor.fromFloat32Array(new Float64Array(2), [2]), IA],
    ["fromFloat32Array too short", () => Tensor.fromFloat32Array(f32(1, 2, 3), [2, 2]), "StorageTooSmall"],
    ["fromFloat32Array too long", () => Tensor.fromFloat32Array(f32(1, 2, 3, 4, 5), [2, 2]), "LengthMismatch"],
    ["fromFloat32Array no shape", () => Tensor.fromFloat32Array(f32(1)), IA],
    ["fromFloat16Bits([70000])", () => Tensor.fromFloat16Bits([70000], [1]), IA],
    ["fromFloat16Bits too short", () => Tensor.fromFloat16Bits(new Uint16Array(1), [2]), "StorageTooSmall"],
    ["fromBFloat16Bits([1.5])", () => Tensor.fromBFloat16Bits([1.5], [1]), IA],
    ["fromInt8Array([200])", () => Tensor.fromInt8Array([200], [1]), IA],
    ["fromInt32Array([2**31])", () => Tensor.fromInt32Array([2 ** 31], [1]), IA],
    ["fromInt32Array(Uint32Array)", () => Tensor.fromInt32Array(new Uint32Array(1), [1]), IA],
    ["fromQuantized(b, 5, s)", () => Tensor.fromQuantized(new Uint8Array(18), 5, [32]), IA],
    ["fromQuantized unknown dtype", () => Tensor.fromQuantized(new Uint8Array(18), "q9_9", [32]), IA],
    ["fromQuantized partial block", () => Tensor.fromQuantized(new Uint8Array(18), "q4_0", [16]), "PartialQuantizedBlock"],
    ["fromQuantized short bytes", () => Tensor.fromQuantized(new Uint8Array(17), "q4_0", [32]), "StorageTooSmall"],
    ["fromQuantized('x')", () => Tensor.fromQuantized("x", "q4_0", [32]), IA],
    ["fromQuantized(bytes, 'f32')", () => Tensor.fromQuantized(new Uint8Array(4), "f32", [1]), "UnsupportedDType"],
    ["tessdataInt8ToF32 mismatch", () => Tensor.tessdataInt8ToF32([1, 2], [1], 1, 3), "ShapeMismatch"],
    ["tessdataInt8ToF32 rows 2**32", () => Tensor.tessdataInt8ToF32(new Int8Array(4), f32(1, 1), 2 ** 32, 2), IA],
    ["tessdataInt8ToF32 overflow", () => Tensor.tessdataInt8ToF32(new Int8Array(4), f32(1, 1), 65536, 65536), "SizeOverflow"],
    ["tessdataInt8ToF32 weights [300]", () => Tensor.tessdataInt8ToF32([300], [1], 1, 1), IA],
    ["concat('x')", () => Tensor.concat("x", 0), IA],
    ["concat([])", () => Tensor.concat([], 0), IA],
    ["concat([a, 'nope'])", () => Tensor.concat([a, "nope"], 0), IA],
    ["concat([a, freed])", () => Tensor.concat([a, freed], 0), "Freed"],
    ["concat axis 5", () => Tensor.concat([a, a], 5), "AxisOutOfRange"],
    ["concat shapes differ", () => Tensor.concat([a, z2], 0), "ShapeMismatch"],
    ["concat dim 1.5", () => Tensor.concat([a, a], 1.5), IA],
    ["lstmCell with 4 tensors", () => Tensor.lstmCell(z2, z2, z2, z2), IA],
    ["lstmCell shapes differ", () => Tensor.lstmCell(z2, z2, z2, z2, w3), "ShapeMismatch"],
    ["lstmCell freed", () => Tensor.lstmCell(z2, z2, z2, z2, freed), "Freed"],
    // ------------------------------------------------ Tensor handles and accessors
    ["freed.add(a)", () => freed.add(a), "Freed"],
    ["a.add(freed)", () => a.add(freed), "Freed"],
    ["freed.shape", () => freed.shape, "Freed"],
    ["freed.toFloat32Array()", () => freed.toFloat32Array(), "Freed"],
    ["freed.clone()", () => freed.clone(), "Freed"],
    ["a.add({})", () => a.add({}), IA],
    ["a.add(5)", () => a.add(5), IA],
    ["a.add(undefined)", () => a.add(undefined), IA],
    ["a.add(GgufFile)", () => a.add(gguf), IA],
    ["a.add(raw-looking object)", () => a.add({ __wbg_ptr: 8 }), IA],
    ["a.add(a, a)", () => a.add(a, a), IA],
    ["add called on {}", () => Tensor.prototype.add.call({}, a), IA],
    ["shape getter on {}", () => Object.getOwnPropertyDescriptor(Tensor.prototype, "shape").get.call({}), IA],
    ["free called on {}", () => Tensor.prototype.free.call({}), IA],
    ["a.toInt32Array()", () => a.toInt32Array(), "DTypeMismatch"],
    ["a.toUint16Array()", () => a.toUint16Array(), "DTypeMismatch"],
    ["a.toBytes()", () => a.toBytes(), "UnsupportedDType"],
    ["quant.toFloat32Array()", () => quant.toFloat32Array(), "QuantizedElementAccess"],
    // ------------------------------------------------ views and conversions
    ["transpose(2**32, 1)", () => a.transpose(2 ** 32, 1), IA],
    ["transpose(0, 5)", () => a.transpose(0, 5), "AxisOutOfRange"],
    ["transpose(-1, 0)", () => a.transpose(-1, 0), IA],
    ["transpose('0', 1)", () => a.transpose("0", 1), IA],
    ["transpose(0)", () => a.transpose(0), IA],
    ["quant.transpose(0, 0)", () => quant.transpose(0, 0), "QuantizedElementAccess"],
    ["permute([0])", () => a.permute([0]), "ShapeMismatch"],
    ["permute([0, 0])", () => a.permute([0, 0]), "ShapeMismatch"],
    ["permute('01')", () => a.permute("01"), IA],
    ["permute([0, 2**32])", () => a.permute([0, 2 ** 32]), IA],
    ["narrow(1, 2, 9)", () => a.narrow(1, 2, 9), "NarrowOutOfRange"],
    ["narrow(5, 0, 1)", () => a.narrow(5, 0, 1), "AxisOutOfRange"],
    ["narrow(0, 0.5, 1)", () => a.narrow(0, 0.5, 1), IA],
    ["narrow(1, 2**32-1, 2**32-1)", () => a.narrow(1, 2 ** 32 - 1, 2 ** 32 - 1), "NarrowOutOfRange"],
    ["broadcastTo([3, 3])", () => a.broadcastTo([3, 3]), "NotBroadcastable"],
    ["broadcastTo({})", () => a.broadcastTo({}), IA],
    ["reshape([4])", () => a.reshape([4]), "ShapeMismatch"],
    ["reshape([2.5])", () => a.reshape([2.5]), IA],
    ["reshape([65536, 65536, 65536])", () => a.reshape([65536, 65536, 65536]), "SizeOverflow"],
    ["toDtype(5)", () => a.toDtype(5), IA],
    ["toDtype('f64')", () => a.toDtype("f64"), IA],
    ["toDtype('q4_0')", () => a.toDtype("q4_0"), "UnsupportedDType"],
    ["toDtype()", () => a.toDtype(), IA],
    // ------------------------------------------------ ops
    ["add broadcast fails", () => a.add(Tensor.zeros([4])), "NotBroadcastable"],
    ["int.exp()", () => int.exp(), "DTypeMismatch"],
    ["int.add(a)", () => int.add(a), "DTypeMismatch"],
    ["matmul(a)", () => a.matmul(a), "ShapeMismatch"],
    ["matmul(int)", () => a.matmul(int), "DTypeMismatch"],
    ["sum(1.5)", () => a.sum(1.5), IA],
    ["sum(5)", () => a.sum(5), "AxisOutOfRange"],
    ["sum(0, 'yes')", () => a.sum(0, "yes"), IA],
    ["max(-1)", () => a.max(-1), IA],
    ["argmax(9)", () => a.argmax(9), "AxisOutOfRange"],
    ["softmax(-1)", () => scalar.softmax(-1), IA],
    ["scalar.softmax(0)", () => scalar.softmax(0), "AxisOutOfRange"],
    ["rmsNorm eps -1", () => a.rmsNorm(w3, -1), IA],
    ["rmsNorm eps NaN", () => a.rmsNorm(w3, NaN), IA],
    ["rmsNorm wrong weight", () => a.rmsNorm(z2, 1e-5), "ShapeMismatch"],
    ["layerNorm bias 'b'", () => a.layerNorm(w3, "b", 1e-5), IA],
    ["affine('2', 0)", () => a.affine("2", 0), IA],
    ["affine(Infinity, 0)", () => a.affine(Infinity, 0), IA],
    ["conv1d without stride", () => a.conv1d(a), IA],
    ["conv1d stride 0", () => Tensor.zeros([1, 4]).conv1d(Tensor.zeros([1, 1, 1]), undefined, 0), "ShapeMismatch"],
    ["conv1d bias 'b'", () => Tensor.zeros([1, 4]).conv1d(Tensor.zeros([1, 1, 1]), "b", 1), IA],
    ["conv1d freed bias", () => Tensor.zeros([1, 4]).conv1d(Tensor.zeros([1, 1, 1]), freed, 1), "Freed"],
    ["conv1d [1,65536] * [65536,1,1] overflows", () => Tensor.zeros([1, 65536]).conv1d(Tensor.zeros([65536, 1, 1]), undefined, 1), "SizeOverflow"],
    ["maxpool1d kernel 0", () => Tensor.zeros([1, 4]).maxpool1d(0, 1), "ShapeMismatch"],
    ["maxpool1d stride 0", () => Tensor.zeros([1, 4]).maxpool1d(2, 0), "ShapeMismatch"],
    ["maxpool1d kernel 'x'", () => Tensor.zeros([1, 4]).maxpool1d("x", 1), IA],
    ["quantizedMatmul q4_0 [65536,32] overflows", () => Tensor.zeros([65536, 32]).quantizedMatmul(q4(kw, 65536, 32)), "SizeOverflow"],
    ["quantizedMatmul q8_0 [65536,32] overflows", () => Tensor.zeros([65536, 32]).quantizedMatmul(q8(kw, 65536, 32)), "SizeOverflow"],
    ["quantizedMatmul f32 weight", () => a.quantizedMatmul(a), "UnsupportedDType"],
    ["quantizedMatmul inner mismatch", () => a.quantizedMatmul(quant), "ShapeMismatch"],
    ["gatherRows(f32 ids)", () => a.gatherRows(a), "DTypeMismatch"],
    ["gatherRows id 2", () => a.gatherRows(Tensor.fromInt32Array(new Int32Array([2]), [1])), "IndexOutOfRange"],
    ["gatherRows id -1", () => a.gatherRows(Tensor.fromInt32Array(new Int32Array([-1]), [1])), "IndexOutOfRange"],
    ["gatherRows on an empty table", () => Tensor.zeros([0, 3]).gatherRows(Tensor.fromInt32Array(new Int32Array([0]), [1])), "IndexOutOfRange"],
    ["gatherRows on empty rows", () => Tensor.zeros([3, 0]).gatherRows(Tensor.fromInt32Array(new Int32Array([5]), [1])), "IndexOutOfRange"],
    // ------------------------------------------------ GgufFile
    ["GgufFile.parse(5)", () => GgufFile.parse(5), IA],
    ["GgufFile.parse('x')", () => GgufFile.parse("x"), IA],
    ["GgufFile.parse()", () => GgufFile.parse(), IA],
    ["GgufFile.parse(3 bytes)", () => GgufFile.parse(new Uint8Array([1, 2, 3])), "InvalidGguf"],
    ["GgufFile.parse(truncated)", () => GgufFile.parse(fx.gguf.subarray(0, 5000)), "InvalidGguf"],
    ["GgufFile.parse(bad magic)", () => GgufFile.parse(new Uint8Array(64)), "InvalidGguf"],
    ["new GgufFile()", () => new GgufFile(), IA],
    ["gguf.get(42)", () => gguf.get(42), IA],
    ["gguf.get()", () => gguf.get(), IA],
    ["gguf.tensorBytes('nope')", () => gguf.tensorBytes("nope"), IA],
    ["gguf.tensorBytes(5)", () => gguf.tensorBytes(5), IA],
    ["freed gguf.get", () => deadGguf.get("general.architecture"), "Freed"],
    ["freed gguf.keys", () => deadGguf.keys, "Freed"],
    ["freed gguf.tokenizer()", () => deadGguf.tokenizer(), "Freed"],
    ["tokenizer() of an empty GGUF", () => GgufFile.parse(emptyGguf()).tokenizer(), "MissingMetadata"],
    // ------------------------------------------------ Tokenizer
    ["tok.encode(5)", () => tok.encode(5), IA],
    ["tok.encode()", () => tok.encode(), IA],
    ["tok.encode('x', 'yes')", () => tok.encode("x", "yes"), IA],
    ["tok.encode('x', true, 1)", () => tok.encode("x", true, 1), IA],
    ["tok.decode([2**32])", () => tok.decode([2 ** 32]), IA],
    ["tok.decode([7.9])", () => tok.decode([7.9]), IA],
    ["tok.decode('abc')", () => tok.decode("abc"), IA],
    ["tok.decode([99999])", () => tok.decode([99999]), "IndexOutOfRange"],
    ["tok.decode(ids, 'no')", () => tok.decode([1], "no"), IA],
    ["tok.tokenText(-1)", () => tok.tokenText(-1), IA],
    ["tok.tokenText(1.5)", () => tok.tokenText(1.5), IA],
    ["tok.isEndOfGeneration('1')", () => tok.isEndOfGeneration("1"), IA],
    ["freed tok.encode", () => deadTok.encode("x"), "Freed"],
    ["freed tok.vocabSize", () => deadTok.vocabSize, "Freed"],
    // ------------------------------------------------ Model
    ["Model.fromBytes(5)", () => Model.fromBytes(5), IA],
    ["Model.fromBytes(truncated)", () => Model.fromBytes(fx.gguf.subarray(0, 5000)), "InvalidGguf"],
    ["Model.fromBytes(empty GGUF)", () => Model.fromBytes(emptyGguf()), "MissingMetadata"],
    ["Model.fromBytes(unknown architecture)", () => Model.fromBytes(renamedArchitecture(fx.gguf)), "UnsupportedModel"],
    ["new Model()", () => new Model(), IA],
    ["model.tokenize(12345)", () => model.tokenize(12345), IA],
    ["model.tokenize('x', 1)", () => model.tokenize("x", 1), IA],
    ["model.detokenize([2**32+5])", () => model.detokenize([2 ** 32 + 5]), IA],
    ["model.detokenize([7.9])", () => model.detokenize([7.9]), IA],
    ["model.detokenize(['1'])", () => model.detokenize(["1"]), IA],
    ["model.detokenize([999999])", () => model.detokenize([999999]), "IndexOutOfRange"],
    ["model.isEndOfGeneration(-1)", () => model.isEndOfGeneration(-1), IA],
    ["formatChat(null)", () => model.formatChat(null), IA],
    ["formatChat('hi')", () => model.formatChat("hi"), IA],
    ["formatChat([null])", () => model.formatChat([null]), IA],
    ["formatChat role 1", () => model.formatChat([{ role: 1, content: "x" }]), IA],
    ["formatChat no content", () => model.formatChat([{ role: "user" }]), IA],
    ["formatChat throwing getter", () => model.formatChat([{ get role() { throw new Error("g"); }, content: "x" }]), IA],
    ["formatChat enableThinking 'no'", () => model.formatChat([{ role: "user", content: "x" }], "no"), IA],
    ["chatTokens(null)", () => model.chatTokens(null), IA],
    ["chatTokens([{ content: 'x' }])", () => model.chatTokens([{ content: "x" }]), IA],
    ["createSession(0)", () => model.createSession(0), IA],
    ["createSession(2**32+8)", () => model.createSession(2 ** 32 + 8), IA],
    ["createSession('8')", () => model.createSession("8"), IA],
    ["createSession past the model's context", () => model.createSession(1e9), IA],
    ["freed model.info", () => deadModel.info, "Freed"],
    ["freed model.createSession", () => deadModel.createSession(8), "Freed"],
    // ------------------------------------------------ Session
    ["session.eval('x')", () => session.eval("x"), IA],
    ["session.eval([2**32+5])", () => session.eval([2 ** 32 + 5]), IA],
    ["session.eval([7.9])", () => session.eval([7.9]), IA],
    ["session.eval([9999])", () => session.eval([9999]), "IndexOutOfRange"],
    ["session.eval 9 ids in 8", () => model.createSession(8).eval(new Array(9).fill(2)), "ContextFull"],
    ["step() before prefill", () => model.createSession(8).step(), IA],
    ["prefill temperature '0'", () => session.prefill([2], { temperature: "0" }), IA],
    ["prefill temprature (typo)", () => session.prefill([2], { temprature: 0 }), IA],
    ["prefill topK -1", () => session.prefill([2], { topK: -1 }), IA],
    ["prefill topK 7.5", () => session.prefill([2], { topK: 7.5 }), IA],
    ["prefill topP 2", () => session.prefill([2], { topP: 2 }), IA],
    ["prefill minP -0.1", () => session.prefill([2], { minP: -0.1 }), IA],
    ["prefill seed -1", () => session.prefill([2], { seed: -1 }), IA],
    ["prefill seed 2**53", () => session.prefill([2], { seed: 2 ** 53 }), IA],
    ["prefill repeatPenalty 0", () => session.prefill([2], { repeatPenalty: 0 }), IA],
    ["prefill repeatLastN 1.5", () => session.prefill([2], { repeatLastN: 1.5 }), IA],
    ["prefill temperature NaN", () => session.prefill([2], { temperature: NaN }), IA],
    ["prefill options 'greedy'", () => session.prefill([2], "greedy"), IA],
    ["prefill options []", () => session.prefill([2], []), IA],
    ["prefill throwing getter", () => session.prefill([2], throwing), IA],
    ["prefill getter throwing RangeError", () => session.prefill([2], overflowing), IA],
    ["shape of a proxy throwing RangeError", () => Tensor.zeros(new Proxy([2], { get() { throw new RangeError("too deep"); } })), IA],
    ["prefill proxy throwing ownKeys", () => session.prefill([2], hostile), IA],
    ["prefill too many ids", () => model.createSession(4).prefill([2, 2, 2, 2, 2], { temperature: 0 }), "ContextFull"],
    ["prefill maxTokens -1", () => session.prefill([2], { maxTokens: -1 }), IA],
    ["prefill stop 'x' (not an array)", () => session.prefill([2], { stop: "x" }), IA],
    ["prefill stop [5]", () => session.prefill([2], { stop: [5] }), IA],
    ["prefill []", () => session.prefill([], { temperature: 0 }), IA],
    ["step() after the generation ended", () => { const s = model.createSession(8); s.prefill([2], { maxTokens: 1 }); s.step(); return s.step(); }, IA],
    ["session.truncate(-1)", () => session.truncate(-1), IA],
    ["session.truncate('2')", () => session.truncate("2"), IA],
    ["session.load('x')", () => session.load("x"), IA],
    ["session.load(garbage)", () => session.load(new Uint8Array(64)), "InvalidSession"],
    ["session.load(a changed byte)", () => { const b = session.save(); b[30] ^= 1; return session.load(b); }, "InvalidSession"],
    ["session.load(cut short)", () => { const s = model.createSession(8); s.eval([2, 2]); return s.load(s.save().subarray(0, 40)); }, "InvalidSession"],
    ["session.load(too long for the context)", () => { const s = model.createSession(8); s.eval([2, 2, 2]); const b = s.save(); return model.createSession(2).load(b); }, "SessionMismatch"],
    ["freed session.save()", () => deadSession.save(), "Freed"],
    ["freed session.tokens", () => deadSession.tokens, "Freed"],
    ["freed session.step()", () => deadSession.step(), "Freed"],
    ["freed session.position", () => deadSession.position, "Freed"],
    ["new Session()", () => new kw.Session(), IA],
    // ------------------------------------------------ ModelLoader
    ["new ModelLoader(-1)", () => new ModelLoader(-1), IA],
    ["new ModelLoader(1.5)", () => new ModelLoader(1.5), IA],
    ["new ModelLoader('100')", () => new ModelLoader("100"), IA],
    ["new ModelLoader(2**53)", () => new ModelLoader(2 ** 53), IA],
    ["new ModelLoader(1 TiB)", () => new ModelLoader(2 ** 40), "AllocationFailed"],
    ["loader.push(5)", () => new ModelLoader().push(5), IA],
    ["loader.push('abc')", () => new ModelLoader().push("abc"), IA],
    ["loader.push()", () => new ModelLoader().push(), IA],
    ["finished loader.finish()", () => finished.finish(), "Freed"],
    ["finished loader.push", () => finished.push(new Uint8Array(1)), "Freed"],
    ["finished loader.loaded", () => finished.loaded, "Freed"],
    ["empty loader.finish()", () => new ModelLoader().finish(), "InvalidGguf"],
    ["garbage loader.finish()", () => { const l = new ModelLoader(); l.push(new Uint8Array(100)); return l.finish(); }, "InvalidGguf"],
    ["finish() after a failed finish()", () => { const l = new ModelLoader(); try { l.finish(); } catch {} return l.finish(); }, "Freed"],
  ];
}

/** Cases of the module functions and the loader, which return promises. */
export function asyncCases(kw) {
  const IA = "InvalidArgument";
  return [
    ["loadKopitiam unknown build", () => kw.loadKopitiam({ build: "nope" }), IA],
    ["loadKopitiam threads 0", () => kw.loadKopitiam({ threads: 0 }), IA],
    ["loadKopitiam threads '2'", () => kw.loadKopitiam({ threads: "2" }), IA],
    ["pickBuild(1.5)", async () => kw.pickBuild(1.5), IA],
  ];
}

/**
 * Each kind of caught error, to repeat 100,000 times: Rust `Result` errors (with and without
 * allocation), JS-layer argument errors, use after free, a double free (no error), foreign
 * handles, a caller's throwing getter, a failed allocation, a model-level error.
 */
export function loopKinds(kw, fx) {
  const { Tensor, GgufFile } = kw;
  const a = Tensor.fromFloat32Array(f32(1, 2, 3, 4, 5, 6), [2, 3]);
  const freed = a.clone();
  freed.free();
  const model = kw.Model.fromBytes(fx.gguf);
  const session = model.createSession(8);
  const garbage = new Uint8Array(64);
  const throwing = { get temperature() { throw new Error("getter"); } };
  return {
    "Rust ShapeMismatch": [() => a.matmul(a), "ShapeMismatch"],
    "JS InvalidArgument": [() => a.transpose(1.5, 0), "InvalidArgument"],
    "use after free": [() => freed.add(a), "Freed"],
    "double free": [() => { const c = a.clone(); c.free(); c.free(); throw Object.assign(new Error(), { code: "none" }); }, "none"],
    "foreign handle": [() => a.add({ __wbg_ptr: 8 }), "InvalidArgument"],
    "throwing getter": [() => session.prefill([2], throwing), "InvalidArgument"],
    "InvalidGguf": [() => GgufFile.parse(garbage), "InvalidGguf"],
    "AllocationFailed": [() => Tensor.zeros([16384, 16384, 3]), "AllocationFailed"],
    "IndexOutOfRange in a session": [() => session.eval([9999]), "IndexOutOfRange"],
  };
}

/**
 * The Worker engine misused (browser only: Node has no Worker). Each entry gets a live engine
 * (`engine`: a model loaded; `bare`: none loaded) and must reject with `code`.
 */
export function engineCases(fx, fixtureUrl) {
  const IA = "InvalidArgument";
  const aborted = new AbortController();
  aborted.abort();
  return [
    ["createEngine threads 0", ({ createEngine }) => createEngine({ threads: 0 }), IA],
    ["createEngine unknown option", ({ createEngine }) => createEngine({ thread: 2 }), IA],
    ["createEngine unknown build", ({ createEngine }) => createEngine({ build: "nope" }), IA],
    ["createEngine workerUrl 5", ({ createEngine }) => createEngine({ workerUrl: 5 }), IA],
    ["tokenize before loadModel", ({ bare }) => bare.tokenize("x"), "NoModel"],
    ["complete before loadModel", ({ bare }) => bare.complete("x"), "NoModel"],
    ["loadModel(5)", ({ bare }) => bare.loadModel(5), IA],
    ["loadModel({})", ({ bare }) => bare.loadModel({}), IA],
    ["loadModel garbage bytes", ({ bare }) => bare.loadModel(new Uint8Array([1, 2, 3])), "InvalidGguf"],
    ["loadModel 404", ({ bare }) => bare.loadModel("/no/such/model.gguf"), "HttpError"],
    ["loadModel onProgress 5", ({ bare }) => bare.loadModel(fixtureUrl, { onProgress: 5 }), IA],
    ["loadModel unknown option", ({ bare }) => bare.loadModel(fixtureUrl, { cached: true }), IA],
    ["loadModel aborted", ({ bare }) => bare.loadModel(fixtureUrl, { signal: aborted.signal }), "Aborted"],
    ["tokenize(5)", ({ engine }) => engine.tokenize(5), IA],
    ["tokenize addSpecial 1", ({ engine }) => engine.tokenize("x", { addSpecial: 1 }), IA],
    ["detokenize([7.9])", ({ engine }) => engine.detokenize([7.9]), IA],
    ["detokenize('x')", ({ engine }) => engine.detokenize("x"), IA],
    ["detokenize([999999])", ({ engine }) => engine.detokenize([999999]), "IndexOutOfRange"],
    ["complete(5)", ({ engine }) => engine.complete(5), IA],
    ["complete maxTokens -1", ({ engine }) => engine.complete("x", { maxTokens: -1 }), IA],
    ["complete temperature '0'", ({ engine }) => engine.complete("x", { temperature: "0" }), IA],
    ["complete unknown option", ({ engine }) => engine.complete("x", { max_tokens: 4 }), IA],
    ["complete stop 5", ({ engine }) => engine.complete("x", { stop: 5 }), IA],
    ["complete signal {}", ({ engine }) => engine.complete("x", { signal: {} }), IA],
    ["complete onToken 'f'", ({ engine }) => engine.complete("x", { onToken: "f" }), IA],
    ["complete aborted signal", ({ engine }) => engine.complete("x", { signal: aborted.signal }), "Aborted"],
    ["complete contextLength 4", ({ engine }) => engine.complete(fx.hello.prompt, { contextLength: 4 }), "ContextFull"],
    ["generate(null)", async ({ engine }) => { for await (const _ of engine.generate(null)); }, IA],
    ["generate topP 2", async ({ engine }) => { for await (const _ of engine.generate("x", { topP: 2 })); }, IA],
    ["chat('hi')", ({ engine }) => engine.chat("hi"), IA],
    ["chat([{ role: 'user' }])", ({ engine }) => engine.chat([{ role: "user" }]), IA],
    ["chat options []", ({ engine }) => engine.chat([{ role: "user", content: "hi" }], []), IA],
    ["chat enableThinking 1", ({ engine }) => engine.chat([{ role: "user", content: "hi" }], { enableThinking: 1 }), IA],
    ["complete cache 'no'", ({ engine }) => engine.complete("x", { cache: "no" }), IA],
    ["complete profile 1", ({ engine }) => engine.complete("x", { profile: 1 }), IA],
    ["chat contextShift 1", ({ engine }) => engine.chat([{ role: "user", content: "hi" }], { contextShift: 1 }), IA],
    ["chat that does not fit, no shift", ({ engine }) => engine.chat([{ role: "user", content: "hi ".repeat(50) }], { contextLength: 16 }), "ContextFull"],
    ["loadModel contextLength 0", ({ bare }) => bare.loadModel(fixtureUrl, { contextLength: 0 }), IA],
    ["loadSession('x')", ({ engine }) => engine.loadSession("x"), IA],
    ["loadSession(garbage)", ({ engine }) => engine.loadSession(new Uint8Array(100)), "InvalidSession"],
    ["saveSession without a model", ({ bare }) => bare.saveSession(), "NoModel"],
    ["logits([2**32])", ({ engine }) => engine.logits([2 ** 32]), IA],
    ["logits([99999])", ({ engine }) => engine.logits([99999]), "IndexOutOfRange"],
    ["logits([])", ({ engine }) => engine.logits([]), IA],
    ["tokenize after dispose", async ({ disposed }) => disposed.tokenize("x"), "EngineDisposed"],
  ];
}
