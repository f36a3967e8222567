//! A file streamed into wasm memory chunk by chunk, for the loaders of `Model` and `OcrModel`:
//! the page never holds the whole file, and with a known size the buffer is reserved once.

use crate::Error;
use wasm_bindgen::JsValue;

/// The bytes received so far.
pub(crate) struct FileBuffer {
    buf: Vec<u8>,
}

impl FileBuffer {
    /// `total_bytes`: the size when known (Content-Length), for a single exact allocation. The
    /// JS layer passes a safe integer; one above the address space fails with its real size.
    pub(crate) fn new(total_bytes: Option<f64>) -> Result<FileBuffer, JsValue> {
        let mut buf = Vec::new();
        if let Some(n) = total_bytes.filter(|n| *n > 0.0) {
            let fail = || JsValue::from(Error::AllocationFailed { bytes: n as u64 });
            let n = usize::try_from(n as u64).map_err(|_| fail())?;
            buf.try_reserve_exact(n).map_err(|_| fail())?;
        }
        Ok(FileBuffer { buf })
    }

    /// Appends one chunk of the file.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<(), JsValue> {
        self.buf.try_reserve(chunk.len()).map_err(|_| {
            JsValue::from(Error::AllocationFailed {
                bytes: self.buf.len() as u64 + chunk.len() as u64,
            })
        })?;
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    pub(crate) fn loaded(&self) -> f64 {
        self.buf.len() as f64
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}
