//! ggml block-quantized formats: block layouts, `_ref` quantizers, dequantizers and the fused
//! quantized matmul.
//!
//! A block is 32 consecutive elements of one row with an f16 scale `d`:
//! - **Q4_0** (18 bytes): `d | qs[16]`; element `j` is `qs[j] & 0xF`, element `j + 16` is
//!   `qs[j] >> 4`, value `(q - 8) * d`.
//! - **Q8_0** (34 bytes): `d | qs: i8[32]`, value `qs[j] * d`.
//! - **Q4_1, Q5_0, Q5_1** (20/22/24 bytes): the same nibble order, plus an f16 min `m` (`_1`:
//!   `q * d + m`) and/or a 32-bit plane of 5th bits (`5_`); see `legacy.rs`.
//!
//! The K formats use 256-element super-blocks with 6-bit (Q4_K/Q5_K) or i8 (Q6_K) sub-block
//! scales and pair with Q8_K activations (f32 scale, per-16 quant sums); see `kquants.rs`.
//!
//! Scales are read with `from_le_bytes`, so nothing here depends on the alignment of the
//! byte buffer (GGUF data need not be 2-aligned inside a `Vec<u8>`).

mod act;
mod blocks;
pub mod interleave;
pub mod kernels;
mod kquants;
mod legacy;
mod matmul;
pub use act::Q8Act;
pub use matmul::{matmul_argmax, matmul_into, matmul_many, matmul_weights, MatmulScratch, QWeight};
mod quantize;
mod traits;

pub use blocks::{
    dequantize_row, dequantize_row_q4_0, dequantize_row_q8_0, f16_to_f32, f32_to_f16_finite, QK4_0,
    QK8_0,
};
pub use kernels::{
    vec_dot_q4_0_q8_0, vec_dot_q4_k_q8_k, vec_dot_q5_0_q8_0, vec_dot_q5_k_q8_k, vec_dot_q6_k_q8_k,
    vec_dot_q8_0_q8_0,
};
pub use kquants::{
    dequantize_row_q4_k, dequantize_row_q5_k, dequantize_row_q6_k, dequantize_row_q8_k,
    quantize_row_q8_k, QK_K,
};
pub use legacy::{dequantize_row_q4_1, dequantize_row_q5_0, dequantize_row_q5_1, q5_0_to_q8_0};
pub use quantize::{quantize_row_q4_0, quantize_row_q8_0};
pub use traits::{quant_type, FusedDot, QuantType};
