//! The quantized type-traits table: for each block format, how to dequantize a row and, where a
//! fused kernel exists, which activation format it pairs with and the row dot product.
//!
//! Like ggml's `type_traits` / `type_traits_cpu`: adding a format is adding a row here, and
//! `to_dtype`, `gather_rows` and `quantized_matmul` pick it up.

use super::{blocks, kernels, kquants, legacy};
use crate::dtype::DType;

/// A fused `weight row · activation row` kernel and the activation format it needs.
#[derive(Debug, Clone, Copy)]
pub struct FusedDot {
    /// Activations are quantized to this format once per row (Q8_0 or Q8_K).
    pub act: DType,
    /// Quantizes a whole f32 row to `act` blocks.
    pub quantize_act: fn(&[f32], &mut [u8]),
    /// Dot product of one weight row with one quantized activation row (whole blocks).
    pub dot: fn(&[u8], &[u8]) -> f32,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct QuantType {
    pub dtype: DType,
    /// Dequantizes whole blocks into `block_elems` floats each.
    pub dequantize: fn(&[u8], &mut [f32]),
    pub fused: Option<FusedDot>,
}

const Q8_0_ACT: fn(&[f32], &mut [u8]) = kernels::quantize_row_q8_0;

/// Q4_K/Q5_K/Q6_K pair with Q8_K activations (f32 scale, 256-element super-blocks).
const fn q8_k_act(dot: fn(&[u8], &[u8]) -> f32) -> Option<FusedDot> {
    Some(FusedDot {
        act: DType::Q8_K,
        quantize_act: kquants::quantize_row_q8_k,
        dot,
    })
}

static TABLE: &[QuantType] = &[
    QuantType {
        dtype: DType::Q4_0,
        dequantize: blocks::dequantize_row_q4_0,
        fused: Some(FusedDot {
            act: DType::Q8_0,
            quantize_act: Q8_0_ACT,
            dot: kernels::vec_dot_q4_0_q8_0,
        }),
    },
    QuantType {
        dtype: DType::Q8_0,
        dequantize: blocks::dequantize_row_q8_0,
        fused: Some(FusedDot {
            act: DType::Q8_0,
            quantize_act: Q8_0_ACT,
            dot: kernels::vec_dot_q8_0_q8_0,
        }),
    },
    // Q4_1/Q5_1 would pair with Q8_1 activations, which this crate does not implement.
    QuantType {
        dtype: DType::Q4_1,
        dequantize: legacy::dequantize_row_q4_1,
        fused: None,
    },
    QuantType {
        dtype: DType::Q5_0,
        dequantize: legacy::dequantize_row_q5_0,
        fused: Some(FusedDot {
            act: DType::Q8_0,
            quantize_act: Q8_0_ACT,
            dot: kernels::vec_dot_q5_0_q8_0,
        }),
    },
    QuantType {
        dtype: DType::Q5_1,
        dequantize: legacy::dequantize_row_q5_1,
        fused: None,
    },
    QuantType {
        dtype: DType::Q4_K,
        dequantize: kquants::dequantize_row_q4_k,
        fused: q8_k_act(kernels::vec_dot_q4_k_q8_k),
    },
    QuantType {
        dtype: DType::Q5_K,
        dequantize: kquants::dequantize_row_q5_k,
        fused: q8_k_act(kernels::vec_dot_q5_k_q8_k),
    },
    QuantType {
        dtype: DType::Q6_K,
        dequantize: kquants::dequantize_row_q6_k,
        fused: q8_k_act(kernels::vec_dot_q6_k_q8_k),
    },
    // Activation-only format: dequantizable (for tests and inspection), never a weight.
    QuantType {
        dtype: DType::Q8_K,
        dequantize: kquants::dequantize_row_q8_k,
        fused: None,
    },
];

/// The traits of a quantized dtype, or `None` for plain dtypes.
pub fn quant_type(dtype: DType) -> Option<&'static QuantType> {
    TABLE.iter().find(|t| t.dtype == dtype)
}
