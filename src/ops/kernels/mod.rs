//! f32 inner loops behind the reference ops' contiguous fast paths, with a scalar twin beside
//! each SIMD128 version (chosen at compile time, like `quant::kernels`).
//!
//! Every SIMD kernel returns the same bits as its scalar twin: elementwise kernels do the same
//! IEEE operation per element (wasm SIMD has no implicit FMA), and `dot` fixes its summation
//! order — element `i` goes to accumulator `i % 4`, the tail to lanes 0.. in order, and the
//! result is `(acc0 + acc1) + (acc2 + acc3)`.

pub mod scalar;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd128;

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub use scalar::{axpy, binary, binary_scalar_rhs, dot, max};

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub use simd128::{axpy, binary, binary_scalar_rhs, dot, max};

/// The arithmetic binary ops that have vector kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

impl Arith {
    #[inline(always)]
    pub fn apply(self, a: f32, b: f32) -> f32 {
        match self {
            Arith::Add => a + b,
            Arith::Sub => a - b,
            Arith::Mul => a * b,
            Arith::Div => a / b,
        }
    }
}
