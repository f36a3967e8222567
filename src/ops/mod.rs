//! Reference f32 ops: written to be obviously correct, not fast. They are the oracle the fast
//! kernels are tested against.
//!
//! Every op reads any strided view (through the crate's odometer row loop), returns a new
//! contiguous tensor, and rejects non-f32 input with [`crate::Error::DTypeMismatch`] (quantized
//! input with [`crate::Error::QuantizedElementAccess`]). Rows that are contiguous go through the
//! SIMD kernels in [`kernels`], which return the same bits as the plain loops they replace.
//!
//! The ops of Tesseract's recognizer work on its integer data as it does: `linear_i8` and
//! `lstm_i8` on int8 activations (exact int32 sums through the int8 GEMM kernels),
//! `quantize_unit_i8`, the table activations, and `im2col_hw` / `maxpool2d` / `flip` on i8 or f32.

mod binary;
mod index;
mod int8;
pub mod kernels;
mod lstm;
mod lut;
mod matmul;
mod nn;
mod norm;
mod reduce;
mod unary;

pub use int8::quantize_unit;
pub use lut::{logistic_lut, tanh_lut};
pub use nn::LstmState;
pub use norm::{rms_norm_in_place, rms_norm_row, rms_scale};
pub use unary::gelu_tanh;
