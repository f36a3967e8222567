//! Tesseract's serialisation primitives (`TFile`): little-endian scalars, `u32`-counted
//! strings and arrays. Every failed read is an [`Error::InvalidTraineddata`] naming the field
//! and the byte where it started, so a truncated or damaged model is a typed error.

use crate::error::{Error, Result};
use crate::storage::try_vec;

/// A bounds-checked reader over one traineddata entry; `base` is the entry's offset in the
/// file, so errors point at file bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

pub(crate) fn invalid(offset: u64, reason: impl Into<String>) -> Error {
    Error::InvalidTraineddata {
        offset,
        reason: reason.into(),
    }
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], base: u64) -> Self {
        Reader {
            bytes,
            pos: 0,
            base,
        }
    }

    /// File offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn error(&self, reason: impl Into<String>) -> Error {
        invalid(self.offset(), reason)
    }

    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "unexpected end of data reading {what}: need {n} bytes, {} remain",
                self.remaining()
            )));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    pub(crate) fn i8(&mut self, what: &str) -> Result<i8> {
        self.array::<1>(what).map(|[b]| b as i8)
    }
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8> {
        self.array::<1>(what).map(|[b]| b)
    }
    pub(crate) fn i32(&mut self, what: &str) -> Result<i32> {
        self.array(what).map(i32::from_le_bytes)
    }
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }
    pub(crate) fn f32(&mut self, what: &str) -> Result<f32> {
        self.array(what).map(f32::from_le_bytes)
    }
    pub(crate) fn f64(&mut self, what: &str) -> Result<f64> {
        self.array(what).map(f64::from_le_bytes)
    }

    /// An `i32` that must lie in `0..=max` (a layer width, a kernel half-size).
    pub(crate) fn size(&mut self, what: &str, max: usize) -> Result<usize> {
        let at = self.offset();
        let v = self.i32(what)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v <= max)
            .ok_or_else(|| invalid(at, format!("{what} {v} is outside 0..={max}")))
    }

    /// A `u32` item count whose items take `item_bytes` each; rejected unless they fit in the
    /// bytes that remain, so a damaged count never drives an allocation.
    pub(crate) fn count(&mut self, what: &str, item_bytes: usize) -> Result<usize> {
        let at = self.offset();
        let n = self.u32(what)? as usize;
        match n.checked_mul(item_bytes.max(1)) {
            Some(need) if need <= self.remaining() => Ok(n),
            _ => Err(invalid(
                at,
                format!(
                    "{what}: {n} items of {item_bytes} bytes exceed the {} bytes that remain",
                    self.remaining()
                ),
            )),
        }
    }

    /// Tesseract's `std::string` / `STRING`: a `u32` length, then the bytes (UTF-8 here).
    pub(crate) fn string(&mut self, what: &str) -> Result<String> {
        let n = self.count(what, 1)?;
        let at = self.offset();
        let bytes = self.take(n, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| invalid(at, format!("{what} is not valid UTF-8")))
    }

    /// A `std::vector<float>`.
    pub(crate) fn f32_vec(&mut self, what: &str) -> Result<Vec<f32>> {
        let n = self.count(what, 4)?;
        let mut out = try_vec(n, 0.0f32)?;
        for v in &mut out {
            *v = self.f32(what)?;
        }
        Ok(out)
    }
}
