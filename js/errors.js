// Errors of the JavaScript layer, in the same shape as the Rust layer's: an `Error` whose `name`
// is "KopitiamError" and whose `code` is stable (the README's "Errors" section lists them all).

/** Codes only JavaScript raises (the Rust ones come from the wasm's `errorCodes()`). */
export const JS_ERROR_CODES = Object.freeze([
  "Freed", // a handle used after free() (or after finish() consumed it)
  "NotInitialized", // the API used before init() / initSync()
  "WasmTrap", // the instance trapped (a bug): it refuses every later call
  "UnsupportedEnvironment", // a threads build outside a crossOriginIsolated Worker
  "NoModel", // engine: no model loaded
  "Aborted", // engine: the caller's AbortSignal fired
  "HttpError", // engine: the model URL answered with a non-2xx status
  "NetworkError", // engine: the model URL could not be fetched, or its bytes stopped part-way
  "TruncatedDownload", // engine: fewer bytes arrived than Content-Length announced
  "WorkerCrashed", // engine: the worker died (or trapped); the engine is unusable
  "EngineDisposed", // engine: used after dispose()
]);

/** `new Error(message)` with `name = "KopitiamError"` and `code`; `cause` when there is one. */
export function codedError(code, message, cause) {
  const e = cause === undefined ? new Error(message) : new Error(message, { cause });
  e.name = "KopitiamError";
  e.code = code;
  return e;
}

/** Whether `e` is an error of this package (from Rust or from JavaScript). */
export function isKopitiamError(e) {
  return e instanceof Error && e.name === "KopitiamError" && typeof e.code === "string";
}

/** An argument of the wrong JavaScript type or out of range. */
export function invalidArgument(op, message, cause) {
  return codedError("InvalidArgument", `${op}: ${message}`, cause);
}

/** A short description of a value for error messages (never calls user code). */
export function describe(v) {
  if (v === null) return "null";
  switch (typeof v) {
    case "string":
      return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
    case "number":
    case "boolean":
    case "undefined":
      return String(v);
    case "bigint":
      return `${v}n`;
    case "function":
      return "a function";
    case "symbol":
      return "a symbol";
    default:
      if (Array.isArray(v)) return `an array of length ${v.length}`;
      if (ArrayBuffer.isView(v)) return `a ${Object.prototype.toString.call(v).slice(8, -1)}`;
      return "an object";
  }
}
