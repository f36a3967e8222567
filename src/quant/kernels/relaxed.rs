//! Relaxed-SIMD kernels (`+relaxed-simd`, shipped as a separate wasm binary).
//!
//! `i32x4.relaxed_dot_i8x16_i7x16_add` is only deterministic when its second operand is in
//! 0..=127. Q4_0 nibbles are 0..=15, so `Σ (n − 8)·q8 = dot(q8, n) − dot(q8, 8)` is exact here
//! and equals the scalar twin's integer sum.

use core::arch::wasm32::*;

use crate::quant::blocks::read_f16;

const Q4_BYTES: usize = 18;
const Q8_BYTES: usize = 34;

#[inline(always)]
fn load16(b: &[u8]) -> v128 {
    assert!(b.len() >= 16);
    // SAFETY: 16 readable bytes checked above; unaligned loads are allowed.
    unsafe { v128_load(b.as_ptr() as *const v128) }
}

#[inline(always)]
fn hsum_i32(v: v128) -> i32 {
    let s = i32x4_add(v, i32x4_shuffle::<2, 3, 0, 1>(v, v));
    let s = i32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s));
    i32x4_extract_lane::<0>(s)
}

pub fn vec_dot_q4_0_q8_0(w: &[u8], x: &[u8]) -> f32 {
    let mask = u8x16_splat(0x0F);
    let eight = u8x16_splat(8);
    let mut sum = 0.0f32;
    for (wb, xb) in w.chunks_exact(Q4_BYTES).zip(x.chunks_exact(Q8_BYTES)) {
        let qs = load16(&wb[2..]);
        let (x0, x1) = (load16(&xb[2..]), load16(&xb[18..]));
        let lo = v128_and(qs, mask);
        let hi = u8x16_shr(qs, 4);
        let z = i32x4_splat(0);
        let pos =
            i32x4_relaxed_dot_i8x16_i7x16_add(x1, hi, i32x4_relaxed_dot_i8x16_i7x16_add(x0, lo, z));
        let off = i32x4_relaxed_dot_i8x16_i7x16_add(
            x1,
            eight,
            i32x4_relaxed_dot_i8x16_i7x16_add(x0, eight, z),
        );
        sum += read_f16(wb) * read_f16(xb) * hsum_i32(i32x4_sub(pos, off)) as f32;
    }
    sum
}
