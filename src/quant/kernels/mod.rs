//! Inner loops of the quantized matmul, with a scalar twin beside each SIMD version.
//!
//! The variant is chosen at compile time: `relaxed.rs` when the build has `+relaxed-simd`,
//! `simd128.rs` when it has `+simd128`, `scalar.rs` otherwise (and natively). The scalar twins
//! are always compiled, because they are what the SIMD versions are tested against.
//!
//! Contract shared by every variant (tests check it): integer block sums are exact, and the f32
//! accumulation is fixed — block `b` adds `(d_w · d_x) · isum_b` into accumulator `b % 4`, and
//! the result is `(acc0 + acc1) + (acc2 + acc3)` — so a SIMD dot (one accumulator per lane)
//! returns the same bits as its scalar twin. Activation quantization matches ggml's
//! `quantize_row_q8_0_ref` bit for bit. (The K formats' dots keep one accumulator, in
//! super-block order, as their twins in `kquants.rs` do.) Matrices interleaved at load
//! (`quant::interleave`) keep their format's order per output, so they give the bits of the
//! file's layout.

use crate::dtype::DType;

pub mod scalar;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd128;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod simd128_kquants;

/// The ×4 (interleaved) matmuls of both SIMD builds.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod x4;

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod kx4;

#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub mod relaxed;

#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub mod relaxed_kquants;

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
pub use scalar::{
    gemm_i8, gemm_k_q8_k, gemm_kx4_q8_k, gemm_q4_0_q8_0, gemm_q4_0x4_q8_0, gemm_q5_0x4_q8_0,
    gemm_q8_0_q8_0, gemm_q8_0x4_q8_0, isum_i8, quantize_row_q8_0, quantize_row_q8_0_sums,
    vec_dot_q4_0_q8_0, vec_dot_q4_k_q8_k, vec_dot_q5_0_q8_0, vec_dot_q5_k_q8_k, vec_dot_q6_k_q8_k,
    vec_dot_q8_0_q8_0,
};

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub use kx4::gemm_kx4_q8_k;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub use simd128_kquants::{
    gemm_k_q8_k, vec_dot_q4_k_q8_k, vec_dot_q5_0_q8_0, vec_dot_q5_k_q8_k, vec_dot_q6_k_q8_k,
};
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub use x4::gemm_q8_0x4_q8_0;

#[cfg(all(
    target_arch = "wasm32",
    target_feature = "simd128",
    not(target_feature = "relaxed-simd")
))]
pub use simd128::{
    gemm_i8, gemm_q4_0_q8_0, gemm_q8_0_q8_0, isum_i8, quantize_row_q8_0, quantize_row_q8_0_sums,
    vec_dot_q4_0_q8_0, vec_dot_q8_0_q8_0,
};
#[cfg(all(
    target_arch = "wasm32",
    target_feature = "simd128",
    not(target_feature = "relaxed-simd")
))]
pub use x4::{gemm_q4_0x4_q8_0, gemm_q5_0x4_q8_0};

#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub use relaxed::{
    gemm_i8, gemm_q4_0_q8_0, gemm_q4_0x4_q8_0, gemm_q5_0x4_q8_0, gemm_q8_0_q8_0, vec_dot_q4_0_q8_0,
};
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
pub use simd128::{isum_i8, quantize_row_q8_0, quantize_row_q8_0_sums, vec_dot_q8_0_q8_0};

/// Whether this build's matmul kernel for `dtype` weights (`interleaved`: the ×4 layout) against
/// Q8_0 activations reads their quants widened to i16 (`Q8Act::wide_row`): SIMD128's ×4
/// kernels multiply i16s, and so do the relaxed build's Q8_0 ones (also Q5_0 in the file's
/// layout, which runs as Q8_0); its Q4_0 and Q5_0 ×4 kernels take relaxed `i8×i7` dots.
pub fn reads_wide(dtype: DType, interleaved: bool) -> bool {
    if cfg!(all(target_arch = "wasm32", target_feature = "relaxed-simd")) {
        matches!(
            (dtype, interleaved),
            (DType::Q8_0, _) | (DType::Q5_0, false)
        )
    } else if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
        interleaved && matches!(dtype, DType::Q4_0 | DType::Q5_0 | DType::Q8_0)
    } else {
        false
    }
}

/// Which kernel family this build runs: `"scalar"`, `"simd128"` or `"relaxed-simd"`.
pub const KERNELS: &str = if cfg!(all(target_arch = "wasm32", target_feature = "relaxed-simd")) {
    "relaxed-simd"
} else if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
    "simd128"
} else {
    "scalar"
};
