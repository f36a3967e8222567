//! Relaxed-SIMD kernels (`+relaxed-simd`, shipped as a separate wasm binary).
//!
//! `i32x4.relaxed_dot_i8x16_i7x16_add` is only deterministic when its second operand is in
//! 0..=127. Q4_0 nibbles are 0..=15, so `Σ (n − 8)·q8 = dot(q8, n) − dot(q8, 8)` is exact here
//! and equals the scalar twin's integer sum; the f32 order is the shared four-lane one.

use core::arch::wasm32::*;

use super::simd128::{dot_blocks4, gemm_q4_0_with, load16, Q4_BYTES, Q8_BYTES};
use crate::quant::act::Q8Act;

pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let mask = u8x16_splat(0x0F);
    let eight = u8x16_splat(8);
    dot_blocks4(w, x, Q4_BYTES, Q8_BYTES, |wb, xb| {
        let qs = load16(&wb[2..]);
        let (x0, x1) = (load16(&xb[2..]), load16(&xb[18..]));
        let z = i32x4_splat(0);
        let pos = i32x4_relaxed_dot_i8x16_i7x16_add(
            x1,
            u8x16_shr(qs, 4),
            i32x4_relaxed_dot_i8x16_i7x16_add(x0, v128_and(qs, mask), z),
        );
        let off = i32x4_relaxed_dot_i8x16_i7x16_add(
            x1,
            eight,
            i32x4_relaxed_dot_i8x16_i7x16_add(x0, eight, z),
        );
        i32x4_sub(pos, off)
    })
}

/// `dot16` for relaxed SIMD: one `pmaddubsw`-style i8 × i7 dot into i16 pairs (deterministic,
/// since nibbles are in 0..=127).
#[inline(always)]
fn dot16_relaxed(x: v128, u: v128) -> v128 {
    i16x8_relaxed_dot_i8x16_i7x16(x, u)
}

/// `out[r·n_w + o] = w_o · x_r` (see `scalar::gemm_q4_0_q8_0`, whose bits this reproduces).
pub fn gemm_q4_0_q8_0(w: &[u8], act: &Q8Act, out: &mut [f32]) {
    gemm_q4_0_with(dot16_relaxed, w, act, out)
}
