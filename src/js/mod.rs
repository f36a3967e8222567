//! The wasm-bindgen layer: a thin JavaScript `Tensor` class over [`crate::Tensor`].
//!
//! Nothing here computes: each method converts arguments, calls the Rust API and turns an
//! [`crate::Error`] into a thrown JS `Error` whose `code` is the variant name. Shapes cross as
//! `number[]`, dtypes as the `DType` string union, data as typed arrays (copied in and out).

mod error;
mod gguf;
mod model;
mod tensor;

pub use gguf::{JsGgufFile, JsTokenizer};
pub use model::{JsModel, JsSession, ModelLoader};
pub use tensor::JsTensor;

/// `initThreadPool(n): Promise<void>` — starts `n` Web Workers for the threaded build. Call it
/// once, before the first op, from a page that is `crossOriginIsolated`.
#[cfg(feature = "threads")]
pub use wasm_bindgen_rayon::init_thread_pool;

use wasm_bindgen::prelude::*;

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

/// The crate version, for bug reports.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
