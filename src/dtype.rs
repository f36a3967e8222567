//! The dtype table: one row per element type, indexed by [`DType`].
//!
//! Every storage size in the crate is computed from this table
//! (`numel / block_elems * block_bytes`), so adding a format is adding a row, not hunting for
//! `match` arms that hard-code sizes.

use crate::error::{Error, Result};
use std::fmt;

/// Element types a [`crate::Tensor`] can hold.
///
/// Plain types have one element per block. The ggml formats pack 32 consecutive elements of a
/// row into one block with an f16 scale; see [`crate::quant`] for the bit layouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DType {
    F32 = 0,
    F16 = 1,
    BF16 = 2,
    I8 = 3,
    I32 = 4,
    Q4_0 = 5,
    Q8_0 = 6,
}

/// One row of the dtype table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DTypeInfo {
    /// Lower-case name, as used in GGUF tools and in the JavaScript API (`"q4_0"`).
    pub name: &'static str,
    /// Elements per storage block (1 for plain types, 32 for Q4_0/Q8_0).
    pub block_elems: usize,
    /// Bytes per storage block.
    pub block_bytes: usize,
    pub is_quantized: bool,
    pub is_float: bool,
}

const fn row(
    name: &'static str,
    block_elems: usize,
    block_bytes: usize,
    is_quantized: bool,
    is_float: bool,
) -> DTypeInfo {
    DTypeInfo {
        name,
        block_elems,
        block_bytes,
        is_quantized,
        is_float,
    }
}

/// Indexed by `DType as usize`; the order must match the enum's discriminants (a test checks).
const TABLE: [DTypeInfo; 7] = [
    row("f32", 1, 4, false, true),
    row("f16", 1, 2, false, true),
    row("bf16", 1, 2, false, true),
    row("i8", 1, 1, false, false),
    row("i32", 1, 4, false, false),
    row("q4_0", 32, 18, true, false),
    row("q8_0", 32, 34, true, false),
];

impl DType {
    /// Every dtype, in table order.
    pub const ALL: [DType; 7] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I8,
        DType::I32,
        DType::Q4_0,
        DType::Q8_0,
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
            .ok_or(Error::SizeOverflow {
                what: "storage size",
            })
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
