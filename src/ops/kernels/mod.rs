//! f32 inner loops behind the reference ops' contiguous fast paths, with a scalar twin beside
//! each SIMD128 version (chosen at compile time, like `quant::kernels`).
//!
//! Every SIMD kernel returns the same bits as its scalar twin: elementwise kernels do the same
//! IEEE operation per element (wasm SIMD has no implicit FMA), and `dot` fixes its summation
//! order — element `i` goes to accumulator `i % 4`, the tail to lanes 0.. in order, and the
//! result is `(acc0 + acc1) + (acc2 + acc3)`; `sum_squares` fixes its eight f64 lanes likewise.
//! Attention's multiply-add kernels (`dot`, `dot_grid`, `axpy_rows`, `weighted_rows`) take each
//! `a · b + c` as [`madd`], which in the relaxed-SIMD build the engine may fuse; their twins ask
//! the engine which it does (`axpy`, the Tensor API's matmul, keeps the textbook loop's bits).
//! One exception, with bounds the tests check: transcendental `unary` ops, `exp_sum` and
//! `softmax_by_position` use a vectorised `exp` (≤ 3 ulp from libm's; `tanh` ≤ 4e-7 absolute).

pub mod scalar;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd128;

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub use scalar::{
    argmax, axpy, axpy_rows, binary, binary_scalar_rhs, dot, dot_grid, exp_sum, gated_f16_table,
    max, max_non_nan, round_to_f16, softmax_by_position, sum_squares, unary, weighted_rows,
};

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub use simd128::{
    argmax, axpy, axpy_rows, binary, binary_scalar_rhs, dot, dot_grid, exp_sum, gated_f16_table,
    max, max_non_nan, round_to_f16, softmax_by_position, sum_squares, unary, weighted_rows,
};

/// `a · b + c` as this build's multiply-add kernels compute it: rounded twice, or in the
/// relaxed-SIMD build as `f32x4_relaxed_madd` does in this engine. The relaxed build takes that
/// instruction because V8 fuses it where the CPU has FMA (both its tiers): one instruction for
/// two, which in Chromium took four heads' weighted value rows from 0.0076 to 0.0052 ms a block
/// of 128. An engine picks one behaviour for every instruction, so the bits still do not depend
/// on the path or the thread count; they do differ between builds.
#[inline(always)]
pub fn madd(a: f32, b: f32, c: f32) -> f32 {
    if madd_fuses() {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// Whether this engine's `f32x4_relaxed_madd` rounds once, asked of the instruction itself:
/// `(1 + 2⁻¹²)² − (1 + 2⁻¹¹)` is 2⁻²⁴ fused and 0 with the product rounded first (a tie to even).
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub fn madd_fuses() -> bool {
    use core::arch::wasm32::{f32x4_extract_lane, f32x4_relaxed_madd, f32x4_splat};
    let x = f32x4_splat(core::hint::black_box(1.0 + 1.0 / 4096.0));
    let r = f32x4_relaxed_madd(x, x, f32x4_splat(-(1.0 + 1.0 / 2048.0)));
    f32x4_extract_lane::<0>(r) != 0.0
}

/// Whether this build's multiply-add rounds once: never outside the relaxed-SIMD build.
#[cfg(not(all(target_arch = "wasm32", target_feature = "relaxed-simd")))]
pub const fn madd_fuses() -> bool {
    false
}

/// The larger of `a` and `b`, NaN if either is: a running max that a NaN poisons, as `max`'s.
#[inline(always)]
fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// Row `r`'s `h` places in a `dot_grid` output whose rows lie `step` apart, or `None` where `out`
/// ends first (the twins then leave that row out rather than panic).
#[inline(always)]
fn grid_row(out: &mut [f32], r: usize, step: usize, h: usize) -> Option<&mut [f32]> {
    r.checked_mul(step)
        .and_then(|at| out.get_mut(at..))
        .and_then(|row| row.get_mut(..h))
}

/// Rows ahead of the one being computed that `weighted_rows` [`touch`]es: measured in Chromium
/// (one thread, decode at position ~1,000), 8 beat 4 and matched 16 and 32.
pub const TOUCH_AHEAD: usize = 8;

/// Reads one f32 of each 64-byte line of `x` and drops it. Wasm has no prefetch instruction; a
/// load that nothing waits on lets the core fetch the lines of a row read a few rows later
/// while the arithmetic on the rows before it goes on. A decoded token's attention reads cache
/// rows that have left the CPU's caches since they were written, and without this waited on
/// each line as its arithmetic reached it (one thread, medians of six: 6.58 → 4.40 ms a token at
/// position ~1,000, 1.39 → 0.94 at ~100, touching key and value rows). Key rows have since been
/// read as runs in order instead (`model::attention`'s `by_streams`), which the CPU streams.
#[inline(always)]
pub fn touch(x: &[f32]) {
    let sink = x.iter().step_by(16).fold(0, |s, v| s ^ v.to_bits());
    core::hint::black_box(sink);
}

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

/// The unary ops that have vector kernels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unary {
    Neg,
    Abs,
    Relu,
    /// `x * mul + add`
    Affine(f32, f32),
    Exp,
    /// Natural logarithm (libm in every build).
    Log,
    Sqrt,
    /// `x / (1 + exp(-x))`
    Silu,
    /// `1 / (1 + exp(-x))`
    Sigmoid,
    Tanh,
    /// GELU, tanh form
    Gelu,
}

impl Unary {
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Unary::Neg => -x,
            Unary::Abs => x.abs(),
            Unary::Relu => {
                if x > 0.0 {
                    x
                } else {
                    0.0
                }
            }
            Unary::Affine(m, a) => x * m + a,
            Unary::Exp => x.exp(),
            Unary::Log => x.ln(),
            Unary::Sqrt => x.sqrt(),
            Unary::Silu => x / (1.0 + (-x).exp()),
            Unary::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Unary::Tanh => x.tanh(),
            Unary::Gelu => crate::ops::gelu_tanh(x),
        }
    }
}
