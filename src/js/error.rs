//! Errors as JavaScript sees them: `Error` objects with a stable `code`.

use crate::Error;
use wasm_bindgen::prelude::*;

/// Builds `new Error(message)` with `name = "KopitiamError"` and `code` set.
pub(crate) fn js_error(code: &str, message: &str) -> JsValue {
    let err = js_sys::Error::new(message);
    err.set_name("KopitiamError");
    // Setting a property on a fresh plain object cannot fail.
    let _ = js_sys::Reflect::set(&err, &"code".into(), &code.into());
    err.into()
}

impl From<Error> for JsValue {
    fn from(e: Error) -> JsValue {
        js_error(e.code(), &e.to_string())
    }
}

/// An argument JavaScript passed that Rust could not even decode (not an array, a fraction…).
pub(crate) fn invalid(op: &'static str, reason: impl Into<String>) -> JsValue {
    Error::InvalidArgument {
        op,
        reason: reason.into(),
    }
    .into()
}
