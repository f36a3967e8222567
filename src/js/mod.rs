//! The wasm-bindgen layer: the raw classes behind the public JavaScript API.
//!
//! Nothing here computes: each method calls the Rust API and turns an [`crate::Error`] into a
//! returned (never unwound) JS `Error` whose `code` is the variant name. The package exports
//! these classes only through `js/api.js`, which checks every argument's JavaScript type and
//! every handle's liveness first, so the values arriving here are already of the declared kind:
//! shapes and ids as `Uint32Array`, dtypes as strings, data as typed arrays (copied in and out),
//! options as plain objects. No function here calls back into user JavaScript, so no exception
//! can unwind through wasm frames.

mod error;
#[cfg(feature = "llm")]
mod gguf;
mod loader;
#[cfg(feature = "llm")]
mod model;
mod ocr;
mod tensor;

#[cfg(feature = "llm")]
pub use gguf::{JsGgufFile, JsTokenizer};
#[cfg(feature = "llm")]
pub use model::{JsModel, JsSession, ModelLoader};
pub use ocr::{JsOcrModel, JsOcrModelLoader};
pub use tensor::JsTensor;

/// `initThreadPool(n): Promise<void>` — starts a rayon pool of `n` Web Workers for the threaded
/// build, the calling thread waiting while they work. Call it (or [`start_threads`]) once,
/// before the first op, from a Worker of a `crossOriginIsolated` page.
#[cfg(feature = "threads")]
pub use wasm_bindgen_rayon::init_thread_pool;

/// `startThreads(n): Promise<void>` — `n` threads of compute: the calling thread, which leads
/// every parallel loop, and a pool of `n − 1` Web Workers (one, left idle, when `n = 1`). What
/// the engine uses: a tab holds one Worker less than with `initThreadPool(n)`.
/// A second call is an `InvalidArgument` error: rayon's pool is global and starts once.
#[cfg(feature = "threads")]
#[wasm_bindgen(js_name = startThreads)]
pub fn start_threads(n: usize) -> Result<js_sys::Promise, JsValue> {
    if !crate::parallel::set_width(n) {
        return Err(error::invalid(
            "startThreads",
            "the threads are already started",
        ));
    }
    Ok(init_thread_pool(n.saturating_sub(1).max(1)))
}

use wasm_bindgen::prelude::*;

/// Sets a data property on a fresh plain object the bindings build (cannot fail there).
pub(crate) fn set(obj: &js_sys::Object, key: &str, value: JsValue) {
    let _ = js_sys::Reflect::set(obj, &key.into(), &value);
}

/// Runs once when the module is instantiated: a Rust panic (always a bug) then shows its
/// message on the console instead of a bare `unreachable`.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// Which kernels and threading this binary was built with, e.g. `"simd128"` or
/// `"relaxed-simd+threads"`.
#[wasm_bindgen(js_name = buildInfo)]
pub fn build_info() -> String {
    let threads = if cfg!(feature = "threads") {
        "+threads"
    } else {
        ""
    };
    format!("{}{threads}", crate::quant::kernels::KERNELS)
}

/// Every error `code` the Rust layer can produce (the JS layer adds its own; see `js/errors.js`).
#[wasm_bindgen(js_name = errorCodes, unchecked_return_type = "string[]")]
pub fn error_codes() -> js_sys::Array {
    crate::Error::CODES
        .iter()
        .map(|&c| JsValue::from(c))
        .collect()
}

/// Whether the allocator can give `bytes` now. wasm-bindgen's own `malloc` (which copies strings
/// and arrays in) aborts the instance when it fails, so `js/api.js` asks first for large inputs
/// and throws `AllocationFailed` instead.
#[wasm_bindgen(js_name = canAllocate)]
pub fn can_allocate(bytes: f64) -> bool {
    usize::try_from(bytes as u64)
        .ok()
        .and_then(|n| crate::storage::try_with_capacity::<u8>(n).ok())
        .is_some()
}

/// The crate version, for bug reports.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
