// The public JavaScript API over one raw wasm-bindgen build (`bind(raw)`): Tensor, GgufFile,
// Tokenizer, ModelLoader, Model and Session with the same methods as the raw classes, but every
// argument checked (js/args.js) and every handle's liveness known before wasm is entered.
//
// Why a layer: the raw glue casts JavaScript values instead of checking them, dereferences freed
// handles inside wasm, and lets exceptions unwind through wasm frames, which leaks wasm-bindgen's
// shadow stack until the instance dies. Here a freed handle is `Freed`, a wrong type is
// `InvalidArgument`, and a trap (always a bug) turns the instance into one that answers
// `WasmTrap` to every later call instead of computing on corrupted memory.
import * as check from "./args.js";
import { JS_ERROR_CODES, codedError, describe, invalidArgument, isKopitiamError } from "./errors.js";

/**
 * Parameter kinds by name: how each is checked and converted. A method's spec lists its
 * parameter names; an optional one ends in `?`.
 */
function parameterKinds(handle, Tensor) {
  const int = (op, name, v) => check.integer(op, name, v);
  const tensor = (op, name, v) => handle(op, name, v, Tensor);
  return {
    rhs: tensor, weight: tensor, bias: tensor, ids: tensor,
    "bias?": (op, name, v) => (v === undefined || v === null ? undefined : tensor(op, name, v)),
    axis: int, dim: int, dim0: int, dim1: int, start: int, len: int, stride: int, kernel: int, rows: int, cols: int,
    "keepdim?": check.optionalBool,
    eps: (op, name, v) => check.finite(op, name, v, 0),
    mul: check.finite,
    add: check.finite,
    dtype: check.string,
    shape: check.shape,
    perm: check.shape,
    data: (op, name, v) => check.typed(op, name, v, Float32Array),
    scales: (op, name, v) => check.typed(op, name, v, Float32Array),
    weights: (op, name, v) => check.typed(op, name, v, Int8Array),
    i8: (op, name, v) => check.typed(op, "data", v, Int8Array),
    i32: (op, name, v) => check.typed(op, "data", v, Int32Array),
    bits: (op, name, v) => check.typed(op, name, v, Uint16Array),
    bytes: check.bytes,
    tensors: (op, name, v) => {
      if (!Array.isArray(v)) throw invalidArgument(op, `${name} must be an array of Tensor, got ${describe(v)}`);
      return v.map((t, i) => tensor(op, `${name}[${i}]`, t));
    },
  };
}

/** Parameters whose raw binding consumes the handles (conv1d's bias, concat's list): they get
 * second handles, made once every argument has passed, never the caller's own. */
const CONSUMED = new Set(["bias?", "tensors"]);

function secondHandles(v) {
  if (Array.isArray(v)) return v.map((h) => h.clone());
  return v === undefined ? v : v.clone();
}

/** Instance methods of Tensor that return a new Tensor, with their parameters. */
const TENSOR_OPS = {
  add: ["rhs"], sub: ["rhs"], mul: ["rhs"], div: ["rhs"], maximum: ["rhs"], minimum: ["rhs"],
  eq: ["rhs"], ne: ["rhs"], lt: ["rhs"], le: ["rhs"], gt: ["rhs"], ge: ["rhs"],
  matmul: ["rhs"], quantizedMatmul: ["weight"], gatherRows: ["ids"],
  neg: [], abs: [], exp: [], log: [], sqrt: [], relu: [], silu: [], gelu: [], tanh: [],
  sigmoid: [], logistic: [], copy: [], contiguous: [], clone: [],
  transpose: ["dim0", "dim1"], permute: ["perm"], narrow: ["dim", "start", "len"],
  broadcastTo: ["shape"], reshape: ["shape"], toDtype: ["dtype"],
  sum: ["axis", "keepdim?"], max: ["axis", "keepdim?"], argmax: ["axis", "keepdim?"],
  softmax: ["axis"], rmsNorm: ["weight", "eps"], layerNorm: ["weight", "bias", "eps"],
  affine: ["mul", "add"], conv1d: ["weight", "bias?", "stride"], maxpool1d: ["kernel", "stride"],
};
/** Instance methods of Tensor that return plain values. */
const TENSOR_READS = {
  toFloat32Array: [], toInt32Array: [], toInt8Array: [], toUint16Array: [], toBytes: [], toString: [],
};
const TENSOR_GETTERS = ["shape", "strides", "dtype", "rank", "size", "isContiguous"];
/** Static constructors of Tensor. */
const TENSOR_STATICS = {
  fromFloat32Array: ["data", "shape"], fromFloat16Bits: ["bits", "shape"], fromBFloat16Bits: ["bits", "shape"],
  fromInt8Array: ["i8", "shape"], fromInt32Array: ["i32", "shape"], fromQuantized: ["bytes", "dtype", "shape"],
  zeros: ["shape"], concat: ["tensors", "dim"], tessdataInt8ToF32: ["weights", "scales", "rows", "cols"],
};

const bound = new WeakMap();
/** Inputs from this size on are checked against the allocator before they are copied in. */
const LARGE_INPUT = 1 << 24;

/** The public API over `raw`, one wasm-bindgen build's module (`pkg/kopitiam_wasm.js` or a variant’s); the
 * same object for the same module, so every importer shares its handles and its state. */
export function bind(raw) {
  if (!bound.has(raw)) bound.set(raw, bindNew(raw));
  return bound.get(raw);
}

function bindNew(raw) {
  const handles = new WeakMap(); // public object -> raw handle, or a string saying why it is gone
  let initialized = false;
  let trapped = null;

  /** Runs `f` (which enters wasm) with the instance's state checked and its errors typed. */
  function enter(op, f) {
    if (trapped) throw trapped;
    if (!initialized) throw codedError("NotInitialized", `${op}: call init() (or initSync) before using the API`);
    try {
      return f();
    } catch (e) {
      throw typed(op, e);
    }
  }

  function typed(op, e) {
    if (isKopitiamError(e)) return e;
    // A trap, or a stack overflow inside wasm (V8 reports it as a RangeError), leaves the
    // instance's memory in an unknown state.
    if (e instanceof WebAssembly.RuntimeError || /call stack/.test(String(e?.message))) {
      trapped = codedError("WasmTrap", `the wasm instance trapped in ${op} (a kopitiam-wasm bug: please report it) and can no longer be used; load the module again`, e);
      return trapped;
    }
    if (e instanceof RangeError || /malloc/.test(String(e?.message))) {
      return codedError("AllocationFailed", `${op}: could not allocate memory (${e.message})`, e);
    }
    return invalidArgument(op, String(e?.message ?? e), e);
  }

  /** An error thrown while reading the caller's arguments (a getter, a proxy): no wasm ran, so
   * whatever it is — even a RangeError — it is the caller's `InvalidArgument`. */
  function fromArguments(op, e) {
    return isKopitiamError(e) ? e : invalidArgument(op, String(e?.message ?? e), e);
  }

  /** The raw handle of `v`, which must be a live public object of `Class`. */
  function handle(op, name, v, Class) {
    const h = typeof v === "object" && v !== null ? handles.get(v) : undefined;
    if (h === undefined || !(v instanceof Class)) {
      throw invalidArgument(op, `${name} must be a ${Class.name}, got ${describe(v)}`);
    }
    if (typeof h === "string") throw codedError("Freed", `${op}: ${name} is a ${Class.name} that was ${h}`);
    return h;
  }

  function wrap(Class, h) {
    const obj = Object.create(Class.prototype);
    handles.set(obj, h);
    return obj;
  }

  /** Marks `obj` as gone (`why`) and returns its raw handle, or `null` if it already was. */
  function release(obj, why) {
    const h = handles.get(obj);
    if (typeof h !== "object") return null;
    handles.set(obj, why);
    return h;
  }

  /** Checks `args` against the parameter names of `spec` and converts them. */
  function convert(op, spec, args, table) {
    if (args.length > spec.length) {
      throw invalidArgument(op, `takes ${spec.length} argument(s), got ${args.length}`);
    }
    return spec.map((name, i) => {
      if (!name.endsWith("?") && args[i] === undefined) throw invalidArgument(op, `${name} is required`);
      return table[name](op, name.replace("?", ""), args[i]);
    });
  }

  /** A method calling `raw[name]` on `this`'s handle (or statically when `Class` is null). */
  function method(Class, RawClass, name, spec, table, result = (x) => x, isStatic = false) {
    const op = `${Class.name}.${name}`;
    return function (...args) {
      // Argument checks may read a caller's getters or proxies: anything they throw is typed.
      let self, converted;
      try {
        self = isStatic ? null : handle(op, "this", this, Class);
        converted = convert(op, spec, args, table);
      } catch (e) {
        throw fromArguments(op, e);
      }
      ensureRoom(op, converted);
      return enter(op, () => {
        const passed = converted.map((v, i) => (CONSUMED.has(spec[i]) ? secondHandles(v) : v));
        return result(isStatic ? RawClass[name](...passed) : self[name](...passed));
      });
    };
  }

  /** Bytes the glue will `malloc` to copy `args` in (strings at 3 bytes per UTF-16 unit, the
   * most their UTF-8 can take). */
  function copyInBytes(args) {
    let n = 0;
    for (const a of args) {
      if (typeof a === "string") n += a.length * 3;
      else if (ArrayBuffer.isView(a)) n += a.byteLength;
      else if (Array.isArray(a)) n += copyInBytes(a);
    }
    return n;
  }

  /** Large inputs: ask the allocator first, since a failed glue `malloc` aborts the instance. */
  function ensureRoom(op, args) {
    const n = copyInBytes(args);
    if (n >= LARGE_INPUT && !enter(op, () => raw.canAllocate(n))) {
      throw codedError("AllocationFailed", `${op}: could not allocate ${n} bytes to copy the input into wasm memory`);
    }
  }

  function defineFree(Class) {
    Class.prototype.free = function free() {
      // Idempotent: a second free() is a no-op, as for any disposable.
      const h = typeof this === "object" && this !== null ? handles.get(this) : undefined;
      if (h === undefined) throw invalidArgument(`${Class.name}.free`, `called on ${describe(this)}`);
      const r = release(this, "freed");
      if (r && !trapped) r.free();
    };
    if (typeof Symbol.dispose === "symbol") Class.prototype[Symbol.dispose] = Class.prototype.free;
  }

  function defineGetters(Class, names, convertResult = (x) => x) {
    for (const name of names) {
      const op = `${Class.name}.${name}`;
      Object.defineProperty(Class.prototype, name, {
        get() {
          let h;
          try {
            h = handle(op, "this", this, Class);
          } catch (e) {
            throw fromArguments(op, e);
          }
          return enter(op, () => convertResult(h[name]));
        },
        configurable: true,
      });
    }
  }

  /** A class whose constructor is closed to callers (instances come from the API itself). */
  function closedClass(name, how) {
    const C = {
      [name]: class {
        constructor() {
          throw invalidArgument(name, `use ${how}; the constructor is not public`);
        }
      },
    }[name];
    defineFree(C);
    return C;
  }

  // ---------------------------------------------------------------- Tensor
  const Tensor = closedClass("Tensor", "Tensor.fromFloat32Array, Tensor.zeros, …");
  const table = parameterKinds(handle, Tensor);
  const asTensor = (h) => wrap(Tensor, h);
  for (const [name, spec] of Object.entries(TENSOR_OPS)) {
    Tensor.prototype[name] = method(Tensor, raw.Tensor, name, spec, table, asTensor);
  }
  for (const [name, spec] of Object.entries(TENSOR_READS)) {
    Tensor.prototype[name] = method(Tensor, raw.Tensor, name, spec, table);
  }
  for (const [name, spec] of Object.entries(TENSOR_STATICS)) {
    Tensor[name] = method(Tensor, raw.Tensor, name, spec, table, asTensor, true);
  }
  Tensor.lstmCell = method(
    Tensor, raw.Tensor, "lstmCell", ["rhs", "rhs", "rhs", "rhs", "rhs"], table,
    ({ cell, hidden }) => ({ cell: asTensor(cell), hidden: asTensor(hidden) }), true,
  );
  defineGetters(Tensor, TENSOR_GETTERS);

  // ---------------------------------------------------------------- GgufFile, Tokenizer
  const Tokenizer = closedClass("Tokenizer", "GgufFile.tokenizer()");
  const GgufFile = closedClass("GgufFile", "GgufFile.parse(bytes)");
  const text = {
    text: check.string, key: check.string, name: check.string,
    "addSpecial?": check.optionalBool, "parseSpecial?": check.optionalBool, "special?": check.optionalBool,
    ids: (op, name, v) => check.u32List(op, name, v), id: (op, name, v) => check.integer(op, name, v),
    bytes: check.bytes, context: (op, name, v) => check.integer(op, name, v, 1),
    messages: chatMessages, "options?": samplingOptions, "enableThinking?": check.optionalBool,
  };
  GgufFile.parse = method(GgufFile, raw.GgufFile, "parse", ["bytes"], text, (h) => wrap(GgufFile, h), true);
  GgufFile.prototype.get = method(GgufFile, raw.GgufFile, "get", ["key"], text);
  GgufFile.prototype.tensorBytes = method(GgufFile, raw.GgufFile, "tensorBytes", ["name"], text);
  GgufFile.prototype.tokenizer = method(GgufFile, raw.GgufFile, "tokenizer", [], text, (h) => wrap(Tokenizer, h));
  defineGetters(GgufFile, ["version", "keys", "tensors"]);
  for (const [name, spec] of Object.entries({
    encode: ["text", "addSpecial?", "parseSpecial?"], decode: ["ids", "special?"],
    tokenText: ["id"], isEndOfGeneration: ["id"],
  })) {
    Tokenizer.prototype[name] = method(Tokenizer, raw.Tokenizer, name, spec, text);
  }
  defineGetters(Tokenizer, ["vocabSize"]);

  // ---------------------------------------------------------------- Model, Session
  const Model = closedClass("Model", "Model.fromBytes(bytes) or new ModelLoader(size)");
  const Session = closedClass("Session", "model.createSession(context)");
  Model.fromBytes = method(Model, raw.Model, "fromBytes", ["bytes"], text, (h) => wrap(Model, h), true);
  for (const [name, spec] of Object.entries({
    tokenize: ["text", "addSpecial?", "parseSpecial?"], detokenize: ["ids", "special?"],
    isEndOfGeneration: ["id"], formatChat: ["messages", "enableThinking?"], chatTokens: ["messages", "enableThinking?"],
    warmUp: [],
  })) {
    Model.prototype[name] = method(Model, raw.Model, name, spec, text);
  }
  Model.prototype.createSession = method(Model, raw.Model, "createSession", ["context"], text, (h) => wrap(Session, h));
  defineGetters(Model, ["info"]);
  const sessionArgs = {
    ...text, "options?": (op, name, v) => check.options(op, v, check.SESSION),
    n: (op, name, v) => check.integer(op, name, v),
  };
  for (const [name, spec] of Object.entries({
    eval: ["ids"], prefill: ["ids", "options?"], step: [], reset: [], truncate: ["n"], save: [], load: ["bytes"],
  })) {
    Session.prototype[name] = method(Session, raw.Session, name, spec, sessionArgs);
  }
  defineGetters(Session, ["position", "capacity", "tokens"]);

  // ---------------------------------------------------------------- OcrModel
  const OcrModel = closedClass("OcrModel", "OcrModel.fromBytes(bytes)");
  OcrModel.fromBytes = method(OcrModel, raw.OcrModel, "fromBytes", ["bytes"], text, (h) => wrap(OcrModel, h), true);
  // The raw methods take (data, width, height); callers pass one image, checked here.
  const pixels = { data: (op, name, v) => v, width: (op, name, v) => v, height: (op, name, v) => v };
  for (const name of ["recognizeLine", "recognize"]) {
    const inner = method(OcrModel, raw.OcrModel, name, ["data", "width", "height"], pixels);
    OcrModel.prototype[name] = function (...args) {
      const op = `OcrModel.${name}`;
      let img;
      try {
        if (args.length !== 1) throw invalidArgument(op, `takes 1 argument (an image), got ${args.length}`);
        img = check.image(op, "image", args[0]);
      } catch (e) {
        throw fromArguments(op, e);
      }
      return inner.call(this, img.data, img.width, img.height);
    };
  }
  for (const name of ["recognizeLinePng", "recognizePng"]) {
    OcrModel.prototype[name] = method(OcrModel, raw.OcrModel, name, ["bytes"], text);
  }
  defineGetters(OcrModel, ["info"]);

  // ---------------------------------------------------------------- ModelLoader, OcrModelLoader
  /** A loader class over `RawLoader` whose `finish()` consumes it and returns a `Product`. */
  function loaderClass(name, RawLoader, Product) {
    const Loader = {
      [name]: class {
        /** `totalBytes`: the file size when known, for one exact allocation. */
        constructor(totalBytes) {
          let size;
          try {
            size = totalBytes === undefined || totalBytes === null
              ? undefined
              : check.integer(name, "totalBytes", totalBytes, 0, Number.MAX_SAFE_INTEGER);
          } catch (e) {
            throw fromArguments(name, e);
          }
          handles.set(this, enter(name, () => new RawLoader(size)));
        }
      },
    }[name];
    defineFree(Loader);
    Loader.prototype.push = method(Loader, RawLoader, "push", ["chunk"], { chunk: check.bytes });
    Loader.prototype.finish = function finish(...args) {
      const op = `${name}.finish`;
      let h;
      try {
        h = handle(op, "this", this, Loader);
        convert(op, [], args, {});
      } catch (e) {
        throw fromArguments(op, e);
      }
      // finish() consumes the raw loader whether it succeeds or not.
      release(this, "consumed by finish()");
      return enter(op, () => wrap(Product, h.finish()));
    };
    defineGetters(Loader, ["loaded"]);
    return Loader;
  }
  const ModelLoader = loaderClass("ModelLoader", raw.ModelLoader, Model);
  const OcrModelLoader = loaderClass("OcrModelLoader", raw.OcrModelLoader, OcrModel);

  // ---------------------------------------------------------------- module functions
  const api = {
    Tensor, GgufFile, Tokenizer, Model, Session, ModelLoader, OcrModel, OcrModelLoader,
    /** `init(input?)`: instantiates the wasm (async); every other call needs it first. */
    default: async (input) => {
      const exports = await raw.default(input);
      initialized = true;
      return exports;
    },
    initSync: (input) => {
      const exports = raw.initSync(input);
      initialized = true;
      return exports;
    },
    buildInfo: () => enter("buildInfo", () => raw.buildInfo()),
    version: () => enter("version", () => raw.version()),
    /** Every error `code` this build can raise: the Rust layer's, then the JavaScript layer's. */
    errorCodes: () => enter("errorCodes", () => [...raw.errorCodes(), ...JS_ERROR_CODES]),
  };
  if (raw.profileStart) {
    // The forward pass's section profile on the calling thread (src/model/profile.rs); the
    // engine's `profile: true` uses it. Not in the OCR builds.
    api.profileStart = () => enter("profileStart", () => raw.profileStart());
    api.profileTake = (stop) => {
      const end = check.optionalBool("profileTake", "stop", stop) ?? false;
      return enter("profileTake", () => raw.profileTake(end));
    };
  }
  // rayon's pool is global: whichever of the two starts it, a second start would spawn Workers
  // and then fail inside wasm, so it is refused here first.
  let threadsStarted = false;
  for (const name of ["initThreadPool", "startThreads"]) {
    if (!raw[name]) continue;
    api[name] = (n) => {
      const threads = check.integer(name, "n", n, 1, 1024);
      if (threadsStarted) throw invalidArgument(name, "the threads are already started");
      const started = enter(name, () => raw[name](threads));
      threadsStarted = true;
      return started;
    };
  }
  return api;
}

/** Chat messages, flattened for the raw binding: `[role0, content0, role1, content1, …]`. */
function chatMessages(op, name, v) {
  return check.messages(op, name, v).flatMap((m) => [m.role, m.content]);
}

function samplingOptions(op, name, v) {
  return check.options(op, v, check.SAMPLING);
}
