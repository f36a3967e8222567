//! ggml block-quantized formats: block layouts, `_ref` quantizers, dequantizers and the fused
//! quantized matmul.
//!
//! A block is 32 consecutive elements of one row with an f16 scale `d`:
//! - **Q4_0** (18 bytes): `d | qs[16]`; element `j` is `qs[j] & 0xF`, element `j + 16` is
//!   `qs[j] >> 4`, value `(q - 8) * d`.
//! - **Q8_0** (34 bytes): `d | qs: i8[32]`, value `qs[j] * d`.
//!
//! The scale is read with `u16::from_le_bytes`, so nothing here depends on the alignment of the
//! byte buffer (GGUF data need not be 2-aligned inside a `Vec<u8>`).

mod blocks;
pub mod kernels;
mod matmul;
mod quantize;
mod traits;

pub use blocks::{dequantize_row, dequantize_row_q4_0, dequantize_row_q8_0, QK4_0, QK8_0};
pub use kernels::{vec_dot_q4_0_q8_0, vec_dot_q8_0_q8_0};
pub use quantize::{quantize_row_q4_0, quantize_row_q8_0};
pub use traits::{quant_type, FusedDot, QuantType};
