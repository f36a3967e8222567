// Checks of the values a caller passes to the public API, made in JavaScript before any wasm
// frame is entered. wasm-bindgen's glue casts instead of checking (`2 ** 32 + 5` becomes 5,
// `7.9` becomes 7, a number where a string belongs reads garbage memory), and an exception that
// unwinds through wasm frames leaks its shadow stack, so nothing unchecked may reach it. Each
// function returns the value in the exact form the raw binding takes, or throws
// `InvalidArgument`.
import { describe, invalidArgument } from "./errors.js";

export const MAX_U32 = 0xffff_ffff;
/** The highest rank a shape may have (NumPy's limit). */
export const MAX_RANK = 64;

/** An integer in `[min, max]` (default: a dimension, axis, id or count below 2^32). */
export function integer(op, name, v, min = 0, max = MAX_U32) {
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) {
    throw invalidArgument(op, `${name} must be an integer in [${min}, ${max}], got ${describe(v)}`);
  }
  return v;
}

/** A finite number, at least `min`. */
export function finite(op, name, v, min = -Infinity) {
  if (typeof v !== "number" || !Number.isFinite(v) || v < min) {
    const range = min === -Infinity ? "" : ` >= ${min}`;
    throw invalidArgument(op, `${name} must be a finite number${range}, got ${describe(v)}`);
  }
  return v;
}

/** A thread-pool size: "auto" or an integer in [1, 1024]. */
export function threads(op, name, v) {
  return v === "auto" ? v : integer(op, name, v, 1, 1024);
}

/** `undefined` or a boolean. */
export function optionalBool(op, name, v) {
  if (v !== undefined && typeof v !== "boolean") {
    throw invalidArgument(op, `${name} must be a boolean or undefined, got ${describe(v)}`);
  }
  return v;
}

export function string(op, name, v) {
  if (typeof v !== "string") throw invalidArgument(op, `${name} must be a string, got ${describe(v)}`);
  return v;
}

/** A real array or typed array (not any array-like: `{ length: 2 ** 32 - 1 }` is no list). */
function list(op, name, v, maxLength) {
  const ok = Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView));
  if (!ok) throw invalidArgument(op, `${name} must be an array or a typed array, got ${describe(v)}`);
  if (v.length > maxLength) {
    throw invalidArgument(op, `${name} has ${v.length} elements; at most ${maxLength} are allowed`);
  }
  return v;
}

/** Non-negative integers below 2^32 (a shape, a permutation, token ids) as a `Uint32Array`. */
export function u32List(op, name, v, maxLength = MAX_U32) {
  list(op, name, v, maxLength);
  if (v instanceof Uint32Array) return v;
  const out = new Uint32Array(v.length);
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (typeof x !== "number" || !Number.isInteger(x) || x < 0 || x > MAX_U32) {
      throw invalidArgument(op, `${name}[${i}] must be an integer in [0, ${MAX_U32}], got ${describe(x)}`);
    }
    out[i] = x;
  }
  return out;
}

export function shape(op, name, v) {
  return u32List(op, name, v, MAX_RANK);
}

const ELEMENT = new Map([
  [Float32Array, (x) => typeof x === "number"],
  [Int8Array, (x) => Number.isInteger(x) && x >= -128 && x <= 127],
  [Int32Array, (x) => Number.isInteger(x) && x >= -(2 ** 31) && x < 2 ** 31],
  [Uint16Array, (x) => Number.isInteger(x) && x >= 0 && x <= 0xffff],
]);

/** Element data as the typed array `Type`: that typed array itself, or an array of numbers that
 * it holds exactly (any number for `Float32Array`; NaN is a number, `"1"` is not). */
export function typed(op, name, v, Type) {
  if (v instanceof Type) return v;
  if (!Array.isArray(v)) {
    throw invalidArgument(op, `${name} must be a ${Type.name} or an array of numbers, got ${describe(v)}`);
  }
  const fits = ELEMENT.get(Type);
  for (let i = 0; i < v.length; i++) {
    if (!fits(v[i])) throw invalidArgument(op, `${name}[${i}] is not a ${Type.name} element: ${describe(v[i])}`);
  }
  return Type.from(v);
}

/** Bytes: a `Uint8Array`, an `ArrayBuffer`, or the bytes of any other typed array / DataView. */
export function bytes(op, name, v) {
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer || (typeof SharedArrayBuffer === "function" && v instanceof SharedArrayBuffer)) {
    return new Uint8Array(v);
  }
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  throw invalidArgument(op, `${name} must be a Uint8Array or an ArrayBuffer, got ${describe(v)}`);
}

/**
 * An options object as a fresh plain object of its own enumerable data, each key checked by
 * `schema[key](op, "options.key", value)` (keys whose value is `undefined` left out), so that
 * the raw binding reads no getter, proxy or prototype of the caller's. Unknown keys are errors:
 * a misspelt `temprature` must not silently mean the default.
 */
export function options(op, v, schema) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) {
    throw invalidArgument(op, `options must be an object, got ${describe(v)}`);
  }
  const out = {};
  for (const key of Object.keys(v)) {
    if (!Object.hasOwn(schema, key)) {
      throw invalidArgument(op, `unknown option ${JSON.stringify(key)} (known: ${Object.keys(schema).join(", ")})`);
    }
    const value = v[key];
    if (value !== undefined) {
      Object.defineProperty(out, key, { value: schema[key](op, `options.${key}`, value), enumerable: true });
    }
  }
  return out;
}

/** `SamplingOptions` (see the TypeScript types) by JavaScript type; their ranges are checked by
 * the Rust sampler (`SamplerConfig::validate`), in one place. */
export const SAMPLING = Object.freeze({
  temperature: finite,
  topK: (op, name, v) => integer(op, name, v),
  topP: finite,
  minP: finite,
  repeatPenalty: finite,
  repeatLastN: (op, name, v) => integer(op, name, v),
  seed: (op, name, v) => integer(op, name, v, 0, Number.MAX_SAFE_INTEGER),
});

/** `session.prefill` options: the sampler's, a token limit and stop strings (an array of strings). */
export const SESSION = Object.freeze({
  ...SAMPLING,
  maxTokens: (op, name, v) => integer(op, name, v),
  stop: (op, name, v) => {
    if (!Array.isArray(v)) throw invalidArgument(op, `${name} must be an array of strings, got ${describe(v)}`);
    return v.map((s, i) => string(op, `${name}[${i}]`, s));
  },
});

/** Chat messages: an array of `{ role, content }` with string values, copied. */
export function messages(op, name, v) {
  if (!Array.isArray(v)) throw invalidArgument(op, `${name} must be an array of { role, content }, got ${describe(v)}`);
  return v.map((m, i) => {
    if (typeof m !== "object" || m === null) throw invalidArgument(op, `${name}[${i}] must be an object, got ${describe(m)}`);
    return { role: string(op, `${name}[${i}].role`, m.role), content: string(op, `${name}[${i}].content`, m.content) };
  });
}

/** Tesseract's coordinates are 16-bit: wider or taller images cannot be read. */
const MAX_IMAGE_SIDE = 32767;

/**
 * An image for the OCR: an `ImageData`, or `{ width, height, data }` with `data` RGBA (4 bytes a
 * pixel, like `ImageData.data`) or 8-bit grey (1 byte a pixel) in a `Uint8Array` or
 * `Uint8ClampedArray`. Returns a fresh `{ width, height, data: Uint8Array }`.
 */
export function image(op, name, v) {
  if (typeof v !== "object" || v === null) {
    throw invalidArgument(op, `${name} must be an ImageData or { width, height, data }, got ${describe(v)}`);
  }
  const width = integer(op, `${name}.width`, v.width, 1, MAX_IMAGE_SIDE);
  const height = integer(op, `${name}.height`, v.height, 1, MAX_IMAGE_SIDE);
  const data = v.data;
  if (!(data instanceof Uint8Array || data instanceof Uint8ClampedArray)) {
    throw invalidArgument(op, `${name}.data must be a Uint8ClampedArray or Uint8Array, got ${describe(data)}`);
  }
  const pixels = width * height;
  if (data.length !== pixels * 4 && data.length !== pixels) {
    throw invalidArgument(op, `${name}.data has ${data.length} bytes; a ${width}x${height} image needs ${pixels * 4} (RGBA) or ${pixels} (grey)`);
  }
  return { width, height, data: new Uint8Array(data.buffer, data.byteOffset, data.length) };
}

/** A callback. */
export function isFunction(op, name, v) {
  if (typeof v !== "function") throw invalidArgument(op, `${name} must be a function, got ${describe(v)}`);
  return v;
}

/** An `AbortSignal`. */
export function isSignal(op, name, v) {
  if (typeof AbortSignal === "undefined" || !(v instanceof AbortSignal)) {
    throw invalidArgument(op, `${name} must be an AbortSignal, got ${describe(v)}`);
  }
  return v;
}

/** A worker script location: a string or a `URL`. */
export function workerUrl(op, name, v) {
  if (typeof v !== "string" && !(v instanceof URL)) throw invalidArgument(op, `${name} must be a string or URL, got ${describe(v)}`);
  return v;
}
