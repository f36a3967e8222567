//! The dtype table: one row per element type, indexed by [`DType`].
//!
//! Every storage size in the crate is computed from this table
//! (`numel / block_elems * block_bytes`), so adding a format is adding a row, not hunting for
//! `match` arms that hard-code sizes.

use crate::error::{Error, Result};
use std::fmt;

/// Element types a [`crate::Tensor`] can hold.
///
/// Plain types have one element per block. The ggml formats pack 32 (or, for the K formats, 256)
/// consecutive elements of a row into one block with its scales; see [`crate::quant`] for the
/// bit layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[allow(non_camel_case_types)] // ggml's names: Q4_K reads better than Q4K
pub enum DType {
    F32 = 0,
    F16 = 1,
    BF16 = 2,
    I8 = 3,
    I32 = 4,
    Q4_0 = 5,
    Q8_0 = 6,
    Q4_1 = 7,
    Q5_0 = 8,
    Q5_1 = 9,
    Q4_K = 10,
    Q5_K = 11,
    Q6_K = 12,
    /// Activation-only K format (the partner of Q4_K/Q5_K/Q6_K in fused dots).
    Q8_K = 13,
}

/// One row of the dtype table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DTypeInfo {
    /// Lower-case name, as used in GGUF tools and in the JavaScript API (`"q4_0"`).
    pub name: &'static str,
    /// Elements per storage block (1 for plain types, 32 or 256 for ggml blocks).
    pub block_elems: usize,
    /// Bytes per storage block.
    pub block_bytes: usize,
    /// The `ggml_type` id GGUF files use for this type.
    pub ggml_type: u32,
    pub is_quantized: bool,
    pub is_float: bool,
}

const fn row(
    name: &'static str,
    block_elems: usize,
    block_bytes: usize,
    ggml_type: u32,
    is_quantized: bool,
    is_float: bool,
) -> DTypeInfo {
    DTypeInfo {
        name,
        block_elems,
        block_bytes,
        ggml_type,
        is_quantized,
        is_float,
    }
}

/// Indexed by `DType as usize`; the order must match the enum's discriminants (a test checks).
const TABLE: [DTypeInfo; 14] = [
    //   name     elems bytes ggml  quant  float
    row("f32", 1, 4, 0, false, true),
    row("f16", 1, 2, 1, false, true),
    row("bf16", 1, 2, 30, false, true),
    row("i8", 1, 1, 24, false, false),
    row("i32", 1, 4, 26, false, false),
    row("q4_0", 32, 18, 2, true, false),
    row("q8_0", 32, 34, 8, true, false),
    row("q4_1", 32, 20, 3, true, false),
    row("q5_0", 32, 22, 6, true, false),
    row("q5_1", 32, 24, 7, true, false),
    row("q4_k", 256, 144, 12, true, false),
    row("q5_k", 256, 176, 13, true, false),
    row("q6_k", 256, 210, 14, true, false),
    row("q8_k", 256, 292, 15, true, false),
];

impl DType {
    /// Every dtype, in table order.
    pub const ALL: [DType; 14] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I8,
        DType::I32,
        DType::Q4_0,
        DType::Q8_0,
        DType::Q4_1,
        DType::Q5_0,
        DType::Q5_1,
        DType::Q4_K,
        DType::Q5_K,
        DType::Q6_K,
        DType::Q8_K,
    ];

    /// This dtype's row of the table.
    #[inline]
    pub const fn info(self) -> &'static DTypeInfo {
        &TABLE[self as usize]
    }

    #[inline]
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    #[inline]
    pub const fn block_elems(self) -> usize {
        self.info().block_elems
    }

    #[inline]
    pub const fn block_bytes(self) -> usize {
        self.info().block_bytes
    }

    #[inline]
    pub const fn ggml_type(self) -> u32 {
        self.info().ggml_type
    }

    /// The dtype for a GGUF `ggml_type` id, if this crate knows it.
    pub fn from_ggml_type(id: u32) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.ggml_type() == id)
    }

    #[inline]
    pub const fn is_quantized(self) -> bool {
        self.info().is_quantized
    }

    #[inline]
    pub const fn is_float(self) -> bool {
        self.info().is_float
    }

    /// Bytes needed to store `numel` elements, with checked arithmetic.
    ///
    /// Errors with [`Error::PartialQuantizedBlock`] when `numel` is not a whole number of blocks
    /// and [`Error::SizeOverflow`] when the byte count does not fit in `usize`.
    pub fn storage_bytes(self, numel: usize) -> Result<usize> {
        let be = self.block_elems();
        if numel % be != 0 {
            return Err(Error::PartialQuantizedBlock {
                dtype: self,
                dim: numel,
                block_elems: be,
            });
        }
        (numel / be)
            .checked_mul(self.block_bytes())
            .ok_or_else(|| Error::overflow("storage bytes", &[numel / be, self.block_bytes()]))
    }

    /// Parses a table name (`"f32"`, `"q4_0"`, …), case-insensitively.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_order_matches_discriminants() {
        for (i, d) in DType::ALL.into_iter().enumerate() {
            assert_eq!(d as usize, i);
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
    }
}
