//! Reference f32 ops: written to be obviously correct, not fast. They are the oracle the fast
//! kernels are tested against.
//!
//! Every op reads any strided view (through [`crate::strided::for_each_row`]), returns a new
//! contiguous tensor, and rejects non-f32 input with [`crate::Error::DTypeMismatch`] (quantized
//! input with [`crate::Error::QuantizedElementAccess`]).

mod binary;
mod index;
mod matmul;
mod nn;
mod norm;
mod reduce;
mod unary;

pub use nn::LstmState;
