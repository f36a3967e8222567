//! The wasm-bindgen layer: a thin JavaScript `Tensor` class over [`crate::Tensor`].
//!
//! Nothing here computes: each method converts arguments, calls the Rust API and turns an
//! [`crate::Error`] into a thrown JS `Error` whose `code` is the variant name. Shapes cross as
//! `number[]`, dtypes as the `DType` string union, data as typed arrays (copied in and out).

mod error;
mod tensor;

pub use tensor::JsTensor;

use wasm_bindgen::prelude::*;

/// Runs once when the module is instantiated: a Rust panic (always a bug) then shows its
/// message on the console instead of a bare `unreachable`.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// The crate version, for bug reports.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
